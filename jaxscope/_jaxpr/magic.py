"""``%jaxpr``: trace (never run) a call typed after the magic."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.magics import JaxscopeMagics, from_builder, usage_errors
from jaxscope._ipython.options import call_argument, parse_magic_args, static_arguments
from jaxscope._ipython.results import present


@magics_class
class JaxprMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "--source",
        action="store_true",
        help="group the equations under the source line that produced them",
    )
    @argument(
        "--no-source", action="store_true", help="hide the '# file:line' comments"
    )
    @argument(
        "--depth",
        type=int,
        default=None,
        help="fold nested jaxprs deeper than N (0: top level only)",
    )
    @argument(
        "--max-eqns",
        type=int,
        metavar="N",
        default=None,
        help="keep the first and last N/2 equations of longer jaxprs (default 200)",
    )
    @argument("--all", action="store_true", help="show every equation (no eliding)")
    @argument(
        "--graph", action="store_true", help="show the dataflow graph instead of text"
    )
    @static_arguments
    @call_argument()
    @line_magic
    @usage_errors
    def jaxpr(self, line: str) -> Any:
        """Show the jaxpr of CALL, each equation mapped to its source line.

        CALL is traced, never run: a plain function is traced afresh each time, a
        jax.jit-wrapped one through its own (cached) trace.
        """
        opts = parse_magic_args(self.jaxpr, line, verbatim="call")
        if opts.depth is not None and opts.depth < 0:
            raise InvalidCallError(
                f"--depth must be >= 0, got {opts.depth}; use e.g. --depth 1"
            )
        if opts.max_eqns is not None and opts.max_eqns < 2:
            raise InvalidCallError(
                f"--max-eqns must be >= 2, got {opts.max_eqns}; use e.g. --max-eqns "
                "400, or --all to show every equation"
            )
        from jaxscope._jaxpr.api import jaxpr_view

        view = self.traced_call(
            "jaxpr",
            opts,
            from_builder(jaxpr_view),
            api_name="%jaxpr",
        )
        if opts.graph:
            return present(view.graph(), line)
        max_eqns = view.max_eqns if opts.max_eqns is None else opts.max_eqns
        shown = view.with_options(
            depth=opts.depth,
            max_eqns=None if opts.all else max_eqns,
            show_source=not opts.no_source,
            by_source=opts.source,
        )
        return present(shown, line)


MAGICS = JaxprMagics
