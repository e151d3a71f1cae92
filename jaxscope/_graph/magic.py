"""``%jaxgraph CALL``: the interactive dataflow graph of a call, traced (never run)."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._ipython.callparse import parse_call
from jaxscope._ipython.common import (
    JaxscopeMagics,
    call_argument,
    parse_magic_args,
    present,
    usage_errors,
)


@magics_class
class GraphMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "--dot", action="store_true", help="print the Graphviz DOT source instead"
    )
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

        shell = self.running_shell
        parsed = parse_call(" ".join(opts.call), shell.user_ns, "jaxgraph")
        view = graph(parsed.function)(*parsed.args, **parsed.kwargs)
        if opts.dot:
            print(view.to_dot())
            return None
        return present(view, line)


MAGICS = GraphMagics
