"""``%%leaks``: run a cell with tracer-leak checking and show what leaked.

A leak never crashes the cell: the report (an HTML table in Jupyter, rich text in a
terminal) is shown after the cell's own output. An error in the cell's code is the
cell's error, as without the magic (so "Run all" and CI stop there), after the
report of what leaked before it. ``--as NAME`` also stores the ``LeakReport`` in the
user's namespace. Locations in the cell read as the cell shows them: its number, and
its lines counted from the ``%%leaks`` line.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import shlex
from typing import Any

from IPython.core.magic import cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import parse_magic_args
from jaxscope._ipython.results import show


@magics_class
class LeakMagics(JaxscopeMagics):
    # IPython's usage line puts one "%" before the name: a cell magic needs two
    @magic_arguments(name="%leaks")
    @argument(
        "--as",
        dest="name",
        default=None,
        metavar="NAME",
        help="also store the LeakReport in the variable NAME",
    )
    @argument(
        "-q",
        "--quiet",
        action="store_true",
        help="show the report only when something leaked",
    )
    @cell_magic
    def leaks(self, line: str, cell: str) -> Any:
        """Run the cell with tracer-leak checking and show every leaked tracer.

        Each leak is shown with where it was created and what holds it. Code traced
        in the cell is checked; a function JAX serves from its caches is not traced
        again."""
        __tracebackhide__ = True  # IPython shows the cell's frames, not the magic's
        opts = self._options(line)
        if opts is None:
            return None
        from jaxscope._leaks.checker import check_leaks

        shell = self.running_shell
        body = _compile_cell(shell, line, cell)
        report = check_leaks(raise_on_leak=False)
        completed = False
        try:
            with report:
                _run(shell, body)
            completed = True
        finally:
            if opts.name is not None:
                shell.user_ns[opts.name] = report
            # after an error the check is incomplete: "no tracer leaked" would mislead
            if report.leaks or (completed and not opts.quiet):
                show(report)
        return None

    @usage_errors
    def _options(self, line: str) -> Any:
        """The parsed options; None after ``--help`` printed the help."""
        opts = parse_magic_args(self.leaks, line)
        if opts.name is not None and not opts.name.isidentifier():
            raise InvalidCallError(
                f"%%leaks --as takes a variable name, got {shlex.quote(opts.name)}; "
                "use e.g. --as report"
            )
        return opts


def _compile_cell(shell: Any, line: str, cell: str) -> list[Any]:
    """The cell's code, compiled as IPython compiles a cell (its transforms and
    ``__future__`` flags), under the running cell's number and with the lines the
    cell shows (the ``%%leaks`` line is its first); a last expression is compiled
    on its own in ``"single"`` mode, so its value is displayed."""
    from jaxscope._source import running_cell_number  # imports JAX

    number = running_cell_number()
    source = shell.transform_cell(cell)
    if number is None:  # called without a cell (from code): shown as the next cell,
        # but kept out of the shell's cell map, where it would shadow that cell's text
        offset = 0
        shown = source
        digest = hashlib.sha1(shown.encode()).hexdigest()[:12]
        filename = f"<ipython-input-{shell.execution_count}-{digest}>"
        linecache.cache[filename] = (len(shown), None, shown.splitlines(True), filename)
    else:
        offset = 1
        shown = f"%%leaks {line}".rstrip() + "\n" + source
        filename = shell.compile.cache(shown, number, raw_code=shown)
    try:
        tree = shell.compile.ast_parse(source, filename=filename)
    except SyntaxError as exc:  # its lines are the body's; the cell shows one more
        if exc.lineno is not None:
            exc.lineno += offset
        if exc.end_lineno is not None:
            exc.end_lineno += offset
        raise
    ast.increment_lineno(tree, offset)
    nodes = list(tree.body)
    last = nodes.pop() if nodes and isinstance(nodes[-1], ast.Expr) else None
    codes = []
    if nodes:
        module = ast.Module(body=nodes, type_ignores=[])
        codes.append(shell.compile(module, filename, "exec"))
    if last is not None:
        codes.append(shell.compile(ast.Interactive(body=[last]), filename, "single"))
    return codes


def _run(shell: Any, codes: list[Any]) -> None:
    __tracebackhide__ = True
    for code in codes:
        exec(code, shell.user_global_ns, shell.user_ns)


MAGICS = LeakMagics
