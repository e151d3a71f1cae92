"""``StepperWidget``: the anywidget that drives a ``Stepper`` from a notebook.

The front-end is ``jaxscope/_static/stepper.js``, built by ``extension/build.mjs`` from
``extension/src/stepper/index.js`` (a dependency-free ES module). State flows one way in the ``state``
trait; the buttons and source-line clicks come back as custom messages
``{"cmd": "step" | "next" | "finish" | "continue" | "toggle_break", "line": N}`` and
``{"cmd": "expand", "name": VAR}`` (show a value in full, or fold it again).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from jaxscope._exceptions import JaxscopeError
from jaxscope._format import truncate
from jaxscope._jaxpr.model import eqn_line
from jaxscope._stepper.render import frames_text, location_text, stat_text
from jaxscope._stepper.stepper import Stepper

_STATIC = Path(__file__).resolve().parent.parent / "_static"
_COMMANDS = ("step", "next", "finish", "continue", "toggle_break", "expand")
_FULL_CHARS = 20_000


def _full_text(value: Any) -> str:
    import numpy as np

    with np.printoptions(threshold=2_000, linewidth=120):
        text = repr(np.asarray(value))
    return truncate(text, _FULL_CHARS)


def payload(
    stepper: Stepper, error: str = "", expanded: frozenset[str] | set[str] = frozenset()
) -> dict[str, Any]:
    """Everything the front-end draws, as JSON-able data (strings and numbers).

    Values named in ``expanded`` carry their full text (``"full"``), the rest a preview.
    """
    values = stepper.values
    info = stepper.current
    file, lines, eqn_lines = stepper.source_lines()
    bps = stepper.breakpoints["lines"]
    bp_lines = sorted({int(b.rsplit(":", 1)[-1]) for b in bps})
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
            "line": info.source.line if info.source is not None else None,
        },
        "source": {
            "file": file or "",
            "lines": [[n, text] for n, text in lines],
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
        self.state = payload(stepper)
        self.on_msg(self._on_message)

    def command(
        self, cmd: str, line: int | None = None, name: str | None = None
    ) -> None:
        """Run one front-end command (also callable from Python and tests)."""
        if cmd not in _COMMANDS:
            self.state = payload(
                self.stepper, f"unknown command {cmd!r}", self.expanded
            )
            return
        s = self.stepper
        try:
            if cmd == "expand":
                self.expanded.symmetric_difference_update({str(name)})
            elif cmd == "toggle_break":
                file = self.state.get("source", {}).get("file") or ""
                s.toggle_breakpoint(f"{file}:{line}" if file else line)
            elif cmd == "continue":
                s.run()
            else:
                getattr(s, cmd)()
        except JaxscopeError as exc:
            self.state = payload(s, str(exc), self.expanded)
            return
        self.state = payload(s, "", self.expanded)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The widget view, plus the stepper's text and static HTML for frontends
        without widgets (nbconvert, GitHub), and a jaxscope part with which
        JupyterLab's jaxscope extension shows that HTML instead of "model not found"
        once the widget's kernel is gone (a saved notebook reopened)."""
        from jaxscope._display import STEPPER_MIME, to_html, to_text

        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle or {}, {})
        data = dict(data)
        data["text/plain"] = to_text(self.stepper)
        data["text/html"] = to_html(self.stepper)
        data[STEPPER_MIME] = {"version": 1}
        return (data, meta) if isinstance(bundle, tuple) else data

    def _on_message(self, widget: Any, content: Any, buffers: Any) -> None:
        if isinstance(content, dict):
            self.command(
                str(content.get("cmd", "")), content.get("line"), content.get("name")
            )
