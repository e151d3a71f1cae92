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
        help="variable names, file:LINEs or named scopes to read, comma-separated "
        "(or repeat --at)",
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
        # `--at logits,loss`: no name, line or scope has a comma in it.
        names = [part.strip() for a in opts.at for part in a.split(",")]
        at = [int(a) if a.isdigit() else a for a in names if a]
        view = self.traced_call("jaxprobe", opts, probe, at=at, loops=opts.loops)
        return present(view, line)


MAGICS = ProbeMagics
