"""``%jaxpr``: trace (never run) a call typed after the magic."""

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
        from jaxscope._jaxpr.api import jaxpr_view

        statics = static_options(opts)
        parsed = parse_call(" ".join(opts.call), self.user_ns, "jaxpr")
        with magic_call("jaxpr", opts, parsed.source, statics):
            view = jaxpr_view(
                parsed.function,
                parsed.args,
                parsed.kwargs,
                static_argnums=statics[0],
                static_argnames=statics[1],
                api_name="%jaxpr",
            )
        if opts.graph:
            return present(view.graph(), line)
        view.depth = opts.depth
        view.show_source = not opts.no_source
        view.by_source = opts.source
        return present(view, line)


MAGICS = JaxprMagics
