"""``%purity on|off|report|clear``: after each cell, warn about stale captured values."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import parse_magic_args
from jaxscope._ipython.results import present

if TYPE_CHECKING:
    from jaxscope._purity.records import PurityFinding

_KEY = "purity"


class _SessionPurity:
    """The session watcher and what has been shown already (each finding once)."""

    def __init__(self, shell: Any) -> None:
        from jaxscope._purity.watcher import PurityLog

        self.shell = shell
        self.log = PurityLog()
        self.shown: set[tuple[str, str, str, str]] = set()
        self.effects_seen = 0

    def clear(self) -> None:
        self.log.clear()
        self.shown.clear()
        self.effects_seen = 0

    def after_cell(self, result: Any = None) -> None:
        if not self.log.active:
            return
        try:
            new = self._new_findings(result)
        except Exception:  # the watcher's own failure never disturbs the session
            return
        if new:
            count = getattr(result, "execution_count", None)
            if count is None:
                count = self.shell.execution_count - 1
            _show_findings(new, f"In [{count}]")

    def _new_findings(self, result: Any) -> list[PurityFinding]:
        """Side effects recorded since the last cell, then stale values the cell can
        have changed (each shown once)."""
        effects = self.log.side_effects
        new = effects[self.effects_seen :]
        self.effects_seen = len(effects)
        for finding in self.log._stale_after_cell(self._names_touched(result)):
            key = (finding.function, finding.name, finding.captured, finding.current)
            if key not in self.shown:
                self.shown.add(key)
                new.append(finding)
        return new

    def _names_touched(self, result: Any) -> frozenset[str] | None:
        """The names the cell just run can have changed; None: check everything."""
        from jaxscope._purity.cells import names_touched

        raw = getattr(getattr(result, "info", None), "raw_cell", None)
        if not isinstance(raw, str):
            return None
        try:
            source = self.shell.transform_cell(raw)
        except Exception:
            return None
        return names_touched(source, self.shell.user_ns)


def _show_findings(findings: list[PurityFinding], cell: str) -> None:
    from IPython.display import display

    from jaxscope._purity.render import finding_line, findings_html

    lines = []
    for finding in findings:
        line = finding_line(finding)
        if finding.kind == "stale_constant":
            line = f"{line} [changed by {cell}]"
        lines.append("jaxscope purity: " + line)
    display(
        {
            "text/plain": "\n".join(lines),
            "text/html": findings_html(findings, f"jaxscope purity (after {cell})"),
        },
        raw=True,
    )


def _session(state: Any) -> _SessionPurity:
    session = state.data.get(_KEY)
    if session is None:
        session = state.data[_KEY] = _SessionPurity(state.shell)
    return session


@magics_class
class PurityMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "action",
        nargs="?",
        default="report",
        help="on: watch traces and check after each cell; off: stop; report: show "
        "findings; clear: forget what was recorded",
    )
    @line_magic
    @usage_errors
    def purity(self, line: str) -> Any:
        """Stale captured values and trace-time side effects, checked after each cell."""
        opts = parse_magic_args(self.purity, line)
        session = _session(self.state)
        if opts.action == "on":
            if not session.log.active:
                session.log.start()
            print(
                "jaxscope purity: watching traces; stale values are reported after each cell"
            )
        elif opts.action == "off":
            session.log.stop()
            print("jaxscope purity: off")
        elif opts.action == "report":
            return present(session.log, line)
        elif opts.action == "clear":
            session.clear()
            print("jaxscope purity: log cleared")
        else:
            raise InvalidCallError(
                f"unknown action {opts.action!r}; use %purity on, off, report or clear"
            )
        return None


def on_load(shell: Any, state: Any) -> None:
    def after_cell(result: Any = None) -> None:
        # The session (and the watcher's modules) is made by the first %purity.
        session = state.data.get(_KEY)
        if session is not None:
            session.after_cell(result)

    state.register_event("post_run_cell", after_cell)


def on_unload(shell: Any, state: Any) -> None:
    session = state.data.pop(_KEY, None)
    if session is not None:
        session.log.stop()


MAGICS = PurityMagics
