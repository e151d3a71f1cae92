"""``%recompiles on|off|report|clear``: a session-wide recompile watcher.

While on, the recompiles a cell caused are shown right after it, one compact line
each (expandable details in HTML front-ends).
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._format import plural
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import parse_magic_args
from jaxscope._ipython.results import present, show

_ACTIONS = ("on", "off", "report", "clear", "reset", "status", "log")
_KEY = "recompiles"


class _Session:
    """The session watcher and how many of its events were shown already."""

    def __init__(self) -> None:
        from jaxscope._recompiles.watcher import RecompileLog

        self.log = RecompileLog()
        self.shown = 0

    def new_events(self) -> list[Any]:
        events = self.log.events
        new = events[self.shown :]
        self.shown = len(events)
        return new


def _session(state: Any) -> _Session:
    session = state.data.get(_KEY)
    if session is None:
        session = state.data[_KEY] = _Session()
    return session


@magics_class
class RecompileMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "action",
        nargs="?",
        default="status",
        help="on: start watching; off: stop; report: the per-function summary "
        "(returned, so `s = %%recompiles report` keeps it); log: the "
        "session's RecompileLog; clear (or reset): forget what was recorded; status "
        "(default): say whether on",
    )
    @line_magic
    @usage_errors
    def recompiles(self, line: str) -> Any:
        """Watch every jit recompile of the session and show its cause as it happens."""
        opts = parse_magic_args(self.recompiles, line)
        action = opts.action
        if action not in _ACTIONS:
            raise InvalidCallError(
                f"unknown action {action!r}; use %recompiles on, off, report or clear"
            )
        session = _session(self.state)
        if action == "on":
            if not session.log.active:
                session.log.start()
                session.shown = len(session.log.events)
            print("jaxscope: watching recompiles (%recompiles off to stop)")
        elif action == "off":
            session.log.stop()
            print("jaxscope: stopped watching recompiles")
        elif action in ("clear", "reset"):
            session.log.clear()
            session.shown = 0
            print("jaxscope: recompile log cleared")
        elif action == "report":
            return present(session.log.summary(), line)
        elif action == "log":
            return present(session.log, line)
        else:
            state = "on" if session.log.active else "off"
            print(
                f"jaxscope: recompile watcher is {state}, "
                f"{plural(len(session.log.events), 'event')} recorded"
            )
        return None


def on_load(shell: Any, state: Any) -> None:
    from jaxscope._display import display_html

    # Bare event records (log.events[i]) show as one expandable line in notebooks.
    # By name: the records module (and JAX) load when the first event is shown.
    state.register_formatter_by_name(
        "text/html", "jaxscope._recompiles.records", "RecompileEvent", display_html
    )

    def post_run_cell(result: Any) -> None:
        session = state.data.get(_KEY)
        if session is None or not session.log.active:
            return
        new = session.new_events()
        if new:
            from jaxscope._recompiles.records import RecompileEvents

            show(RecompileEvents(new, title="jaxscope: recompiled in this cell"))

    state.register_event("post_run_cell", post_run_cell)


def on_unload(shell: Any, state: Any) -> None:
    session = state.data.pop(_KEY, None)
    if session is not None:
        session.log.stop()


MAGICS = RecompileMagics
