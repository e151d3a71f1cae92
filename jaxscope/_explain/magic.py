"""JAX errors raised in a cell, shown source-mapped; ``%jaxerrors on|off|full|status``.

``on_load`` installs a custom exception handler (``shell.set_custom_exc``). For an
exception JAX raised it shows ``js.explain``'s report (HTML with a folded full traceback
in Jupyter, rich text in a terminal); jaxscope's own one-line errors for a bad call
(``js.jaxpr(f, x)``) end their traceback at the user's line, not inside jaxscope; every
other exception goes down IPython's usual path untouched. The exception itself is never replaced: ``sys.last_value``, ``%debug``,
``%tb``, ``%pdb`` and ``%xmode`` keep working on the original.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import types
from typing import TYPE_CHECKING, Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError, JaxscopeError
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import parse_magic_args

if TYPE_CHECKING:
    from jaxscope._explain.report import ErrorReport

_KEY_PREVIOUS = "errors.previous"
_KEY_MODE = "errors.mode"
_MODES = ("on", "off", "full")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@magics_class
class ErrorMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "mode",
        nargs="?",
        default="status",
        help="on, full, off or status (the default: print the mode)",
    )
    @line_magic
    @usage_errors
    def jaxerrors(self, line: str) -> Any:
        """Choose how JAX errors raised in cells are shown.

        A JAX error raised in a cell is shown source-mapped: the cell line that
        caused it with a caret, JAX's own first line and documentation link, what
        it means there and a concrete fix. Every other exception is shown by
        IPython as usual. The exception itself is never replaced: %tb prints the
        full traceback, %debug opens the debugger in its frame, and js.explain()
        returns the report as an object.

        Modes:
          on      the source-mapped report (the default after %load_ext jaxscope)
          full    IPython's traceback (as %xmode sets it), then the report
          off     IPython's usual display only
          status  print the current mode (what a bare %jaxerrors does)

        Examples:
          %jaxerrors off
          %jaxerrors
        """
        mode = parse_magic_args(self.jaxerrors, line).mode
        if mode == "status":
            print(f"jaxscope error display: {self.state.data.get(_KEY_MODE, 'on')}")
            return None
        if mode not in _MODES:
            raise InvalidCallError(
                f"unknown mode {mode!r} for %jaxerrors; use on, full, off or status"
            )
        self.state.data[_KEY_MODE] = mode
        return None


MAGICS = ErrorMagics


def on_load(shell: Any, state: Any) -> None:
    """Install the source-mapped display of JAX errors, remembering what it replaces."""
    state.data[_KEY_PREVIOUS] = (shell.CustomTB, shell.custom_exceptions)
    state.data.setdefault(_KEY_MODE, "on")

    def handler(
        shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None
    ) -> None:
        _handle(shell, state, etype, value, tb, tb_offset)

    shell.set_custom_exc((Exception,), handler)
    shell.CustomTB.__func__.__jaxscope__ = True


def on_unload(shell: Any, state: Any) -> None:
    """Put back the exception handler that was there before ``on_load``."""
    previous = state.data.pop(_KEY_PREVIOUS, None)
    if previous is not None and getattr(shell.CustomTB, "__jaxscope__", False):
        shell.CustomTB, shell.custom_exceptions = previous


def _handle(
    shell: Any, state: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any
) -> None:
    previous_tb, previous_types = state.data.get(_KEY_PREVIOUS, (None, ()))
    if previous_types and isinstance(value, previous_types) and previous_tb is not None:
        previous_tb(etype, value, tb, tb_offset)
        return
    mode = state.data.get(_KEY_MODE, "on")
    if _is_parse_error(etype, tb):
        _show_parse_error(shell, etype)
        return
    report = None
    if mode != "off":
        try:
            from jaxscope._explain.classify import explainable
            from jaxscope._explain.explainer import explain

            if explainable(value):
                report = explain(value)
        except Exception:
            report = None
    ours = _up_to_jaxscope(tb) if mode != "off" else None
    if report is None and ours is not None and isinstance(value, JaxscopeError):
        # A bad call of ours: the traceback ends at the user's line. The exception
        # and its whole traceback stay recorded for %tb and %debug.
        shell._get_exc_info((etype, value, tb))
        stb = shell.InteractiveTB.structured_traceback(
            etype, value, ours, tb_offset=tb_offset
        )
        shell._showtraceback(etype, value, stb)
        return
    if report is None:
        shell.showtraceback((etype, value, tb), running_compiled_code=True)
        return
    # Record the exception as IPython would (sys.last_value, %debug, %tb).
    shell._get_exc_info((etype, value, tb))
    full = _ipython_traceback(shell, etype, value, tb, tb_offset)
    if full:
        report = dataclasses.replace(report, traceback=_ANSI.sub("", full))
    try:
        _show(shell, report, etype, value, full, mode)
    except Exception:  # never lose the error: fall back to IPython's display
        shell.showtraceback((etype, value, tb), running_compiled_code=True)
        return
    if getattr(shell, "call_pdb", False):
        shell.debugger(force=True)


def _up_to_jaxscope(tb: Any) -> Any:
    """A copy of ``tb`` that stops before its first frame inside jaxscope, or None
    where it has none of the user's frames or never enters jaxscope."""
    package = _PACKAGE_DIR
    frames: list[Any] = []
    entered = False
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(package + os.sep):
            entered = True
            break
        frames.append(tb)
        tb = tb.tb_next
    if not entered or not frames:
        return None
    copy = None
    for t in reversed(frames):
        copy = types.TracebackType(copy, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return copy


def _is_parse_error(etype: type, tb: Any) -> bool:
    if issubclass(etype, SyntaxError):
        return True
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "ast_parse" and code.co_filename.endswith("compilerop.py"):
            return True
        tb = tb.tb_next
    return False


def _show_parse_error(shell: Any, etype: type) -> None:
    # What run_cell does for errors raised while compiling the cell.
    if issubclass(etype, IndentationError):
        shell.showindentationerror()
    else:
        shell.showsyntaxerror()


def _ipython_traceback(
    shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any
) -> str:
    try:
        stb = shell.InteractiveTB.structured_traceback(
            etype, value, tb, tb_offset=tb_offset
        )
        return str(shell.InteractiveTB.stb2text(stb))
    except Exception:
        return ""


def _colour() -> bool:
    from jaxscope._display import colour_terminal

    return colour_terminal() and sys.stdout.isatty()


def _report_text(report: ErrorReport, colour: bool) -> str:
    from jaxscope._display import rendered_text

    return rendered_text(
        report, color=colour, soft_wrap=True
    )  # long code hints stay whole


def _show(
    shell: Any,
    report: ErrorReport,
    etype: type,
    value: BaseException,
    full: str,
    mode: str,
) -> None:
    if getattr(shell, "kernel", None) is not None:
        # Jupyter: the HTML report (full traceback folded inside), then a short error
        # so the frontend and nbclient still see the cell fail with this exception.
        from IPython.display import display

        from jaxscope._display import printable

        display(report)
        said = report.jax_message or report.message
        first = said.splitlines()[0] if said else ""
        stb = [
            printable(f"{etype.__name__}: {first}"),
            "(source-mapped by jaxscope above; %tb prints the full traceback)",
        ]
        if mode == "full" and full:
            stb = [full]
        shell._showtraceback(etype, value, stb)
        return
    text = _report_text(report, _colour())
    lines = []
    if mode == "full" and full:
        lines.append(full)
        lines.append("")
    lines.append(text)
    lines.append("")
    lines.append(
        "(jaxscope: %tb prints the full traceback, %debug opens the debugger, %jaxerrors off shows IPython's usual display)"
    )
    shell._showtraceback(etype, value, lines)
