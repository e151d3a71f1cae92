"""``%jaxpr`` and ``%hlo``: trace (never run) a call typed after the magic."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .._exceptions import InvalidCallError
from .common import JaxscopeMagics, show, usage_errors
from .callparse import parse_call

_STAGES = ("stablehlo", "hlo", "optimized")


def _parse(magic_fn: Any, line: str) -> Any:
    try:
        return parse_argstring(magic_fn, line)
    except Exception as exc:  # argparse errors are UsageErrors already; keep one line
        raise InvalidCallError(str(exc).splitlines()[0]) from None


@magics_class
class StagingMagics(JaxscopeMagics):
    @magic_arguments()
    @argument("--source", action="store_true", help="show the source line beside each equation (the default; kept for symmetry with --no-source)")
    @argument("--no-source", action="store_true", help="hide source lines")
    @argument("--depth", type=int, default=None, help="fold nested jaxprs deeper than N")
    @argument("--graph", action="store_true", help="show the interactive graph instead of text")
    @argument("call", nargs="*", help="a call expression such as f(x, y) or jax.grad(loss)(p, b)")
    @line_magic
    @usage_errors
    def jaxpr(self, line: str) -> Any:
        """Show the jaxpr of CALL, each equation mapped to its source line; traced, not run."""
        opts = _parse(self.jaxpr, line)
        if opts.depth is not None and opts.depth < 0:
            raise InvalidCallError(f"--depth must be >= 0, got {opts.depth}")
        from .. import _api

        parsed = parse_call(" ".join(opts.call), self.shell.user_ns, "jaxpr")
        view = _api.jaxpr(parsed.function)(*parsed.args, **parsed.kwargs)
        if opts.graph:
            show(view.graph())
            return None
        view.depth = opts.depth
        view.show_source = not opts.no_source
        show(view)
        return None

    @magic_arguments()
    @argument("--stage", default="hlo", help="stablehlo, hlo or optimized (post-fusion)")
    @argument("--cost", action="store_true", help="also show cost and memory analysis")
    @argument("call", nargs="*", help="a call expression such as f(x, y)")
    @line_magic
    @usage_errors
    def hlo(self, line: str) -> Any:
        """Show the StableHLO / HLO / optimized HLO of CALL with source lines."""
        opts = _parse(self.hlo, line)
        if opts.stage not in _STAGES:
            raise InvalidCallError(
                f"unknown stage {opts.stage!r}; use --stage stablehlo, hlo or optimized"
            )
        from .. import _api

        parsed = parse_call(" ".join(opts.call), self.shell.user_ns, "hlo")
        view = _api.hlo(parsed.function, stage=opts.stage)(
            *parsed.args, **parsed.kwargs
        )
        view.show_cost = opts.cost
        show(view)
        return None


MAGICS = StagingMagics
