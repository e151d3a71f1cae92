"""``%jaxgraph CALL``: the interactive dataflow graph of a call, traced (never run)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._display import printable
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import call_argument, parse_magic_args, static_arguments
from jaxscope._ipython.results import present

# `--dot f(x)`: a bare --dot (print) before the call, whose first token has a "(".
_BARE_DOT = re.compile(r"(^|\s)--dot(\s+)(?=\S*\()")


@magics_class
class GraphMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "--dot",
        nargs="?",
        const="-",
        metavar="FILE",
        help="write the Graphviz DOT source to FILE (no FILE: print it) instead",
    )
    @argument(
        "--svg",
        metavar="FILE",
        help="write the graph drawn by Graphviz `dot` to FILE as SVG instead",
    )
    @static_arguments
    @call_argument()
    @line_magic
    @usage_errors
    def jaxgraph(self, line: str) -> Any:
        """Show the dataflow graph of CALL: nested jaxprs and named scopes as groups.

        In Jupyter it is an interactive widget (pan, zoom, expand groups, click a node
        for its shapes, params and source line, search); elsewhere a tree of its
        groups with their equation counts and source lines.
        """
        opts = parse_magic_args(
            self.jaxgraph, _BARE_DOT.sub(r"\1--dot -\2", line, count=1), verbatim="call"
        )
        from jaxscope._graph.api import graph

        view = self.traced_call("jaxgraph", opts, graph)
        if opts.dot == "-":
            print(view.to_dot())
        elif opts.dot is not None:
            _write(opts.dot, view.to_dot(), "DOT")
        if opts.svg is not None:
            _write(opts.svg, view.to_svg(), "SVG")
        if opts.dot is None and opts.svg is None:
            return present(view, line)
        return None


def _write(file: str, text: str, what: str) -> None:
    path = Path(file).expanduser()
    try:
        path.write_text(text, "utf-8")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(
            printable(
                f"%jaxgraph cannot write {what} to {file}: {reason}; "
                "give a writable file path"
            )
        ) from None
    print(printable(f"{what} written to {path} ({len(text):,} characters)"))


MAGICS = GraphMagics
