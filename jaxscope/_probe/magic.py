"""``%jaxprobe --at NAME [--at file:LINE ...] CALL``: values of the compiled program."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import call_argument, parse_magic_args, static_arguments
from jaxscope._ipython.results import present


@magics_class
class ProbeMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "-a",
        "--at",
        action="append",
        default=[],
        help="a variable name, file:LINE or named scope to read (repeatable)",
    )
    @argument(
        "--loops",
        default="stack",
        help="inside a scan: 'stack' (a row per iteration, default) or 'last'",
    )
    @static_arguments
    @call_argument("train_step(state, batch)")
    @line_magic
    @usage_errors
    def jaxprobe(self, line: str) -> Any:
        """Run CALL compiled once and show the values named by --at inside it.

        The real compiled program (XLA's numbers, fusions, shardings), compiled
        separately with those values as extra outputs; your function and its
        caches are untouched. Values are summarised; the view keeps the arrays
        (``v = %jaxprobe ...; v["logits"]``)."""
        from jaxscope._probe.probe import probe

        opts = parse_magic_args(self.jaxprobe, line, verbatim="call")
        if not opts.at:
            raise InvalidCallError(
                "%jaxprobe needs at least one --at: a variable name, file:LINE or "
                "named scope; write e.g. %jaxprobe --at logits f(x)"
            )
        at = [int(a) if a.strip().isdigit() else a for a in opts.at]
        view = self.traced_call("jaxprobe", opts, probe, at=at, loops=opts.loops)
        return present(view, line)


MAGICS = ProbeMagics
