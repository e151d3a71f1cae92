"""``%hlo``: trace (never run) a call typed after the magic."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import call_argument, parse_magic_args, static_arguments
from jaxscope._ipython.results import present


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

        view = self.traced_call("hlo", opts, hlo, stage=opts.stage)
        shown = view.with_options(show_cost=opts.cost, expand_fused=opts.all)
        return present(shown, line)


MAGICS = HloMagics
