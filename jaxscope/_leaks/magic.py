"""``%%leaks``: run a cell with tracer-leak checking and show what leaked.

A leak never crashes the cell: the report (an HTML table in Jupyter, rich text in a
terminal) is shown after the cell's own output. ``--as NAME`` also stores the
``LeakReport`` in the user's namespace.
"""

from __future__ import annotations

import shlex
from typing import Any

from IPython.core.magic import cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.common import HelpShown, JaxscopeMagics, show, usage_errors


@magics_class
class LeakMagics(JaxscopeMagics):
    @magic_arguments()
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
    @usage_errors
    def leaks(self, line: str, cell: str) -> Any:
        """Run the cell with tracer-leak checking; show every leaked tracer, where it
        was created and what holds it (traces are not taken from JAX's caches)."""
        if any(tok in ("-h", "--help") for tok in line.split()):
            print(self.leaks.__doc__)
            raise HelpShown
        try:
            opts = parse_argstring(self.leaks, line)
        except Exception as exc:  # argparse errors: keep one line
            raise InvalidCallError(f"%%leaks: {str(exc).splitlines()[0]}") from None
        if opts.name is not None and not opts.name.isidentifier():
            raise InvalidCallError(
                f"%%leaks --as takes a variable name, got {shlex.quote(opts.name)}; "
                "use e.g. --as report"
            )
        from jaxscope._leaks.checker import check_leaks

        shell = self.running_shell
        report = check_leaks(raise_on_leak=False)
        with report:
            result = shell.run_cell(cell, store_history=False)
        if opts.name is not None:
            shell.user_ns[opts.name] = report
        if report.leaks or not opts.quiet:
            show(report)
        del result
        return None


MAGICS = LeakMagics
