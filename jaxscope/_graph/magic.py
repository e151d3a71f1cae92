"""``%jaxgraph CALL``: the interactive dataflow graph of a call, traced (never run)."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

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
class GraphMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "--dot", action="store_true", help="print the Graphviz DOT source instead"
    )
    @static_arguments
    @call_argument()
    @line_magic
    @usage_errors
    def jaxgraph(self, line: str) -> Any:
        """Show the dataflow graph of CALL: nested jaxprs and named scopes as groups.

        In Jupyter it is an interactive widget (pan, zoom, expand groups, click a node
        for its shapes, params and source line, search); elsewhere a text summary.
        """
        opts = parse_magic_args(self.jaxgraph, line, verbatim="call")
        from jaxscope._graph.api import graph

        statics = static_options(opts)
        parsed = parse_call(" ".join(opts.call), self.user_ns, "jaxgraph")
        transform = graph(
            parsed.function, static_argnums=statics[0], static_argnames=statics[1]
        )
        with magic_call("jaxgraph", opts, parsed.source, statics):
            view = transform(*parsed.args, **parsed.kwargs)
        if opts.dot:
            print(view.to_dot())
            return None
        return present(view, line)


MAGICS = GraphMagics
