"""``%hlo``: trace (never run) a call typed after the magic."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.callparse import parse_call
from jaxscope._ipython.common import (
    JaxscopeMagics,
    call_argument,
    magic_call,
    parse_magic_args,
    present,
    static_arguments,
    static_options,
    usage_errors,
)


@magics_class
class HloMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "--stage", default="hlo", help="stablehlo, hlo or optimized (post-fusion)"
    )
    @argument("--cost", action="store_true", help="also show cost and memory analysis")
    @argument(
        "--all",
        action="store_true",
        help="print fused computations in full (default: one summary line each)",
    )
    @static_arguments
    @call_argument("f(x, y)")
    @line_magic
    @usage_errors
    def hlo(self, line: str) -> Any:
        """Show the StableHLO / HLO / optimized HLO of CALL with source lines."""
        from jaxscope._hlo.model import STAGES

        opts = parse_magic_args(self.hlo, line, verbatim="call")
        if opts.stage not in STAGES:
            raise InvalidCallError(
                f"unknown stage {opts.stage!r}; use --stage stablehlo, hlo or optimized"
            )
        from jaxscope._hlo.api import hlo

        statics = static_options(opts)
        parsed = parse_call(" ".join(opts.call), self.user_ns, "hlo")
        transform = hlo(
            parsed.function,
            stage=opts.stage,
            static_argnums=statics[0],
            static_argnames=statics[1],
        )
        with magic_call("hlo", opts, parsed.source, statics):
            view = transform(*parsed.args, **parsed.kwargs)
        view.show_cost = opts.cost
        view.expand_fused = opts.all
        return present(view, line)


MAGICS = HloMagics
