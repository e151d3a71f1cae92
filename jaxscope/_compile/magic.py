"""``%jaxcompile CALL``: a cold compile of CALL by line; ``%%jaxcompile``: every
compile the cell triggers, by function and by line."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from IPython.core.magic import line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.magics import JaxscopeMagics, from_builder, usage_errors
from jaxscope._ipython.options import call_argument, parse_magic_args, static_arguments
from jaxscope._ipython.results import present, show


@magics_class
class CompileMagics(JaxscopeMagics):
    @magic_arguments()
    @argument("--top", type=int, default=10, help="rows of the top-lines summary")
    @static_arguments
    @call_argument("train_step(state, batch)")
    @line_cell_magic
    def jaxcompile(self, line: str, cell: str | None = None) -> Any:
        """Why is the compile slow: CALL compiled cold (never run), or every compile of a cell.

        %jaxcompile CALL shows the trace / lower / XLA compile seconds and each
        source line's equations, HLO ops, constants and trace time, with named
        diagnoses and fixes.

        As a cell magic (%%jaxcompile), run the cell and show every compile it
        triggered (jitted functions, eager ops, libraries' jits), by function and
        by line, with the totals.
        """
        if cell is not None:
            return self._cell(line, cell)
        return self._line(line)

    @usage_errors
    def _line(self, line: str) -> Any:
        opts = parse_magic_args(self.jaxcompile, line, verbatim="call")
        if opts.top < 1:
            raise InvalidCallError(
                f"--top must be >= 1, got {opts.top}; use e.g. --top 10"
            )
        if not opts.call:
            raise InvalidCallError(
                "%jaxcompile needs a call: write e.g. %jaxcompile train_step(state, "
                "batch), or %%jaxcompile as a cell magic"
            )
        from jaxscope._compile.profile import profile_call

        view = self.traced_call(
            "jaxcompile", opts, from_builder(profile_call), api_name="%jaxcompile"
        )
        view = dataclasses.replace(view, show_top=opts.top)
        return present(view, line)

    def _cell(self, line: str, cell: str) -> Any:
        __tracebackhide__ = True
        if line.strip():
            self._cell_line(line)
            return None
        from jaxscope._compile.cell import collect_compiles
        from jaxscope._source import running_cell_number

        shell = self.running_shell
        number = running_cell_number()
        source = shell.transform_cell(cell)
        # the cell as it shows, its magic line first, so lines count as it shows
        shown = "%%jaxcompile\n" + source
        filename = (
            shell.compile.cache(shown, number, raw_code=shown)
            if number is not None
            else "<jaxcompile cell>"
        )
        tree = shell.compile.ast_parse(source, filename=filename)
        ast.increment_lineno(tree, 1)
        code = shell.compile(tree, filename, "exec")
        out: list[Any] = []
        try:
            with collect_compiles() as out:
                exec(code, shell.user_global_ns, shell.user_ns)
        finally:
            # shown whether the cell finished or raised (its error is the cell's)
            if out:
                shell.user_ns["_jaxcompile"] = out[0]
                show(out[0])
        return None

    @usage_errors
    @usage_errors
    def _cell_line(self, line: str) -> None:
        """``%%jaxcompile``'s line: ``-h`` prints its help; anything else is an error
        (the cell is the code; ``--top`` and a call belong to ``%jaxcompile``)."""
        if line.split() and all(t in ("-h", "--help") for t in line.split()):
            print(_CELL_HELP)
            return
        raise InvalidCallError(
            "%%jaxcompile takes no options (the cell is the code; its result is also "
            f"kept in _jaxcompile): unrecognized arguments: {line.strip()}"
        )


_CELL_HELP = """%%jaxcompile [-h]

Run the cell and show every compile it triggered (jitted functions, eager ops,
libraries' jits), by function and by line, with the totals and named diagnoses.
The result is also kept in _jaxcompile. For one call compiled cold, by source
line, use %jaxcompile CALL."""


MAGICS = CompileMagics
