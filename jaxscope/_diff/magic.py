"""``%jaxdiff CALL_A CALL_B`` and ``%jaxdiff --last``: what changed between two programs."""

from __future__ import annotations

import ast
import re
from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.callparse import parse_call
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import (
    call_argument,
    magic_call,
    parse_magic_args,
    static_arguments,
    static_options,
)
from jaxscope._ipython.results import present

_EXAMPLE = "`%jaxdiff f(x) g(x)` or `%jaxdiff f(x) f(y)`"


def _parses_as_call(text: str) -> bool:
    try:
        return isinstance(ast.parse(text.strip(), mode="eval").body, ast.Call)
    except SyntaxError:
        return False


def split_calls(text: str) -> tuple[str, str]:
    """``"f(x) g(x)"`` (or ``"f(x), g(x)"``) → ``("f(x)", "g(x)")``."""
    text = text.strip()
    for match in re.finditer(r"[\s,]+", text):
        head, tail = text[: match.start()], text[match.end() :]
        if head and tail and _parses_as_call(head) and _parses_as_call(tail):
            return head, tail
    raise InvalidCallError(
        f"%jaxdiff needs two call expressions, got `{text}`; write e.g. {_EXAMPLE}, "
        "or %jaxdiff --last for the last recompile"
    )


@magics_class
class DiffMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "--last",
        action="store_true",
        help="the last recompile %%recompiles on recorded: the program before it "
        "against the one it compiled",
    )
    @argument(
        "--no-hlo",
        action="store_true",
        help="compare the jaxprs only (no compile)",
    )
    @static_arguments
    @call_argument("f(x) g(x), or f(x) f(y)")
    @line_magic
    @usage_errors
    def jaxdiff(self, line: str) -> Any:
        """Show what changed between two programs, by source line (traced and
        compiled, never run)."""
        opts = parse_magic_args(self.jaxdiff, line, verbatim="call")
        if opts.last:
            if opts.call:
                raise InvalidCallError(
                    "%jaxdiff --last takes no calls; write %jaxdiff --last, or "
                    f"{_EXAMPLE}"
                )
            return present(self._last(), line)
        if not opts.call:
            raise InvalidCallError(f"%jaxdiff needs two calls: write e.g. {_EXAMPLE}")
        first, second = split_calls(opts.call[0])
        a = parse_call(first, self.user_ns, "jaxdiff")
        b = parse_call(second, self.user_ns, "jaxdiff")
        statics = static_options(opts)
        from jaxscope._diff.api import diff_calls

        with magic_call("jaxdiff", opts, opts.call[0], statics):
            result = diff_calls(
                (a.function, a.args, a.kwargs),
                (b.function, b.args, b.kwargs),
                static_argnums=statics[0],
                static_argnames=statics[1],
                hlo=not opts.no_hlo,
            )
        return present(result, line)

    def _last(self) -> Any:
        session = getattr(self.state, "data", {}).get("recompiles")
        events = list(session.log.events) if session is not None else []
        recompiles = [e for e in events if e.kinds != ["first_call"]]
        if not recompiles:
            where = (
                "none recorded yet"
                if session is not None
                else "the watcher is off: run %recompiles on first"
            )
            raise InvalidCallError(
                f"%jaxdiff --last shows the last recompile, {where}; or compare two "
                f"calls: {_EXAMPLE}"
            )
        return recompiles[-1].diff()


MAGICS = DiffMagics
