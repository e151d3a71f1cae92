"""``StepperWidget``: the anywidget that drives a ``Stepper`` from a notebook.

The front-end is ``jaxscope/_static/stepper.js``, built by ``extension/build.mjs`` from
``extension/src/stepper/index.js`` (a dependency-free ES module). State flows one way in the ``state``
trait; the buttons and source-line clicks come back as custom messages
``{"cmd": "step" | "next" | "finish" | "continue"}``, ``{"cmd": "toggle_break",
"line": N, "file": F}``, ``{"cmd": "show_file", "file": F}`` (show another file or cell
the program's equations come from) and ``{"cmd": "expand", "name": VAR}`` (show a
value in full, or fold it again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from jaxscope._exceptions import JaxscopeError
from jaxscope._format import truncate
from jaxscope._host import aval_text, host_array, is_key
from jaxscope._jaxpr.params import eqn_line
from jaxscope._source import typed_lines
from jaxscope._stepper.breakpoints import file_matches
from jaxscope._stepper.render import frames_text, location_text, stat_text
from jaxscope._stepper.stepper import Stepper
from jaxscope.compat.kernel import comm_open_unparented

_STATIC = Path(__file__).resolve().parent.parent / "_static"
_COMMANDS = (
    "step",
    "next",
    "finish",
    "continue",
    "toggle_break",
    "expand",
    "show_file",
)
_FULL_CHARS = 20_000


def _full_text(value: Any) -> str:
    import numpy as np

    with np.printoptions(threshold=2_000, linewidth=120):
        text = repr(host_array(value))
    if is_key(value):
        text = f"{aval_text(value)} key data {text}"
    return truncate(text, _FULL_CHARS)


def _breakpoint_lines(stepper: Stepper, file: str | None) -> list[int]:
    """The line breakpoints set in ``file`` (and those set without a file)."""
    lines = set()
    for spec in stepper.breakpoints["lines"]:
        where, _, line = spec.rpartition(":")
        if not where or (file is not None and file_matches(where, file)):
            lines.add(int(line))
    return sorted(lines)


def payload(
    stepper: Stepper,
    error: str = "",
    expanded: frozenset[str] | set[str] = frozenset(),
    shown_file: str | None = None,
) -> dict[str, Any]:
    """Everything the front-end draws, as JSON-able data (strings and numbers).

    Values named in ``expanded`` carry their full text (``"full"``), the rest a
    preview. The source pane shows ``shown_file`` (by default the current
    equation's); ``files`` lists every file the program's equations come from.
    """
    values = stepper.values
    info = stepper.current
    files = stepper.source_files()
    if shown_file not in files:
        shown_file = None
    file, lines, eqn_lines = stepper.source_lines(shown_file)
    bp_lines = _breakpoint_lines(stepper, file)
    try:
        result = (
            "" if not stepper.done else " ".join(repr(stepper.result).split())[:400]
        )
    except JaxscopeError as exc:
        result = str(exc)
    return {
        "function": stepper.function_name,
        "reason": stepper.reason,
        "done": stepper.done,
        "after": stepper.stopped_after,
        "error": error,
        "location": location_text(stepper),
        "frames": [str(f) for f in stepper.frames],
        "stack": frames_text(stepper.frames),
        "current": None
        if info is None
        else {
            "primitive": info.primitive,
            "eqn": eqn_line(info),
            "source": str(info.source) if info.source is not None else "",
            "file": info.source.file if info.source is not None else "",
            "line": info.source.line if info.source is not None else None,
        },
        "files": [{"file": f, "lines": n} for f, n in files.items()],
        "source": {
            "file": file or "",
            "lines": [[n, text] for n, text in typed_lines(file, lines)],
            "eqn_lines": sorted(eqn_lines),
        },
        "breakpoints": bp_lines,
        "values": [
            {
                "name": s.name,
                "label": s.label,
                "aval": s.aval,
                "min": stat_text(s.min),
                "max": stat_text(s.max),
                "mean": stat_text(s.mean),
                "nan": s.nan_count,
                "inf": s.inf_count,
                "preview": s.preview,
                **({"full": _full_text(values[s.name])} if s.name in expanded else {}),
            }
            for s in stepper.summaries()
        ],
        "result": result,
    }


class StepperWidget(anywidget.AnyWidget):
    """Step / next / finish / continue buttons, clickable source lines, a values table.

    Traits:
        state: the ``payload`` of the stepper, refreshed after every command.
    """

    _esm = _STATIC / "stepper.js"
    state = traitlets.Dict().tag(sync=True)

    def __init__(self, stepper: Stepper, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stepper = stepper
        self.expanded: set[str] = set()
        #: The file the source pane shows; None follows the current equation.
        self.shown_file: str | None = None
        self.state = payload(stepper)
        self.on_msg(self._on_message)

    def open(self) -> None:
        """Announce the model with no parent request: a live front-end opens it all the
        same, while nbclient (``nbconvert --execute``) keeps no state for it, so the
        exported notebook shows the static transcript rather than a widget that needs
        its kernel and a CDN."""
        with comm_open_unparented():
            super().open()

    def command(
        self,
        cmd: str,
        line: int | None = None,
        name: str | None = None,
        file: str | None = None,
    ) -> None:
        """Run one front-end command (also callable from Python and tests)."""
        if cmd not in _COMMANDS:
            self._refresh(f"unknown command {cmd!r}")
            return
        s = self.stepper
        try:
            if cmd == "expand":
                self.expanded.symmetric_difference_update({str(name)})
            elif cmd == "show_file":
                self.shown_file = str(file) if file else None
            elif cmd == "toggle_break":
                where = file or self.state.get("source", {}).get("file") or ""
                s.toggle_breakpoint(f"{where}:{line}" if where else line)
            else:
                self.shown_file = None  # a move: follow the current equation
                if cmd == "continue":
                    s.run()
                else:
                    getattr(s, cmd)()
        except JaxscopeError as exc:
            self._refresh(str(exc))
            return
        self._refresh("")

    def _refresh(self, error: str) -> None:
        self.state = payload(self.stepper, error, self.expanded, self.shown_file)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget view, plus the stepper's text and static HTML for frontends
        without widgets (nbconvert, GitHub), and a jaxscope part with which
        JupyterLab's jaxscope extension shows that HTML instead of "model not found"
        once the widget's kernel is gone (a saved notebook reopened)."""
        from jaxscope._display import STEPPER_MIME, display_html, to_text

        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data)
        data["text/plain"] = to_text(self.stepper)
        data["text/html"] = display_html(self.stepper)
        data[STEPPER_MIME] = {"version": 1}
        return (data, meta) if isinstance(bundle, tuple) else data

    def _on_message(self, widget: Any, content: Any, buffers: Any) -> None:
        if isinstance(content, dict):
            self.command(
                str(content.get("cmd", "")),
                content.get("line"),
                content.get("name"),
                content.get("file"),
            )
