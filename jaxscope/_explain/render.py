"""Rendering of ``ErrorReport``: the user's line with context and a caret, the hint.

Text (rich) for terminals and ``str()``; HTML for notebooks, with the full traceback
folded in a ``<details>``. Every string from the user or JAX is plain text: rich markup
in it prints literally, control characters (the ESC of ANSI and OSC sequences) are shown
as ``\\x1b`` so they never reach the terminal, and HTML is escaped.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

from jaxscope._display import html, message_html, printable, rich_renderable
from jaxscope._explain.report import ErrorReport
from jaxscope._source import short_loc

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# C0 controls but newline and tab, DEL and the C1 controls (0x9b opens a CSI too).

_CSS = """
<style>
.jaxscope-error{font-family:var(--jp-code-font-family,monospace);font-size:13px;
 border-left:4px solid #d9534f;padding:6px 10px;margin:4px 0;background:rgba(217,83,79,.06)}
.jaxscope-error .js-head{font-weight:bold;color:#c9302c}
.jaxscope-error .js-where{color:#666;font-weight:normal}
.jaxscope-error .js-msg{margin:4px 0}
.jaxscope-error pre{margin:4px 0;padding:4px;background:rgba(0,0,0,.04);overflow-x:auto}
.jaxscope-error .js-row{display:block}
.jaxscope-error .js-cur{background:rgba(217,83,79,.15)}
.jaxscope-error .js-caret{color:#d9534f}
.jaxscope-error .js-hint{margin:6px 0;padding:4px 6px;border-left:3px solid #5cb85c;
 background:rgba(92,184,92,.08)}
.jaxscope-error table{border-collapse:collapse;margin:4px 0}
.jaxscope-error td{padding:1px 8px 1px 0;vertical-align:top}
.jaxscope-error .js-dim{color:#777}
</style>
"""


def _where(report: ErrorReport) -> str:
    loc = report.user_frame
    if loc is None:
        return ""
    fn = f" in {loc.function}" if loc.function else ""
    return f"{short_loc(loc)}{fn}"


def jax_line(report: ErrorReport) -> str:
    """JAX's own first line, when the report's message does not already start with it."""
    jax = report.jax_message
    return jax if jax and not report.message.startswith(jax) else ""


def caret_line(report: ErrorReport) -> str:
    """Spaces then ``^`` under the failing expression of the user's line ("" if unknown)."""
    if report.span is None:
        return ""
    start, end = report.span
    line = report.line_text
    if not line or start >= len(line) or end <= start:
        return ""
    # Columns of the raw line, moved to where they fall once it is made visible.
    start, end = (
        len(printable(line[:start])),
        len(printable(line[: min(end, len(line))])),
    )
    return " " * start + "^" * (end - start)


def _gutter(report: ErrorReport) -> int:
    return max((len(str(n)) for n, _ in report.source_lines), default=1)


def context_lines(report: ErrorReport) -> list[tuple[str, bool]]:
    """The source excerpt as ``(text, is_user_line)`` rows, caret row included."""
    rows: list[tuple[str, bool]] = []
    width = _gutter(report)
    current = report.user_frame.line if report.user_frame else None
    for number, text in report.source_lines:
        is_current = number == current
        mark = "→" if is_current else " "
        rows.append((f"{mark} {number:>{width}} │ {printable(text)}", is_current))
        if is_current:
            caret = caret_line(report)
            if caret:
                rows.append((f"  {'':>{width}} │ {caret}", False))
    return rows


MAX_FRAMES = 6


def _frames_text(report: ErrorReport) -> str:
    frames = list(report.frames)
    elided = 0
    if len(frames) > MAX_FRAMES:
        elided = len(frames) - MAX_FRAMES + 1
        frames = [frames[0], *frames[elided + 1 :]]
    parts = []
    for i, loc in enumerate(frames):
        if elided and i == 1:
            parts.append(f"… {elided} more")
        fn = f" ({loc.function})" if loc.function else ""
        parts.append(f"{short_loc(loc)}{fn}")
    return " → ".join(parts)


@rich_renderable.register
def _(report: ErrorReport) -> Any:
    from rich.text import Text

    out = Text()

    def add(text: str, style: str = "") -> None:
        out.append(printable(text), style=style)

    add(report.kind, style="bold red")
    where = _where(report)
    if where:
        add(f"  at {where}", style="yellow")
    add("\n")
    if jax_line(report):
        add(jax_line(report) + "\n")
    if report.message:
        add(report.message + "\n")
    rows = context_lines(report)
    if rows:
        add("\n")
        for text, current in rows:
            style = (
                "bold"
                if current
                else ("red" if "^" in text and "│ " in text else "dim")
            )
            add(text + "\n", style=style)
    details = [
        (f"{o.expr}: {o.aval}" if o.aval else o.expr)
        + (f"  ← {o.origin}" if o.origin else "")
        for o in report.operands
        if o.aval or o.origin
    ]
    shown = {f"{o.expr}: {o.aval}" for o in report.operands}
    details += [c for c in report.jax_context if c not in shown]
    if details:
        add("\n")
        for item in details:
            add("  " + item + "\n", style="cyan")
    if report.hint:
        add("\n")
        add("hint: ", style="bold green")
        add(report.hint + "\n")
    if report.docs:
        add("docs: ", style="dim")
        add(report.docs + "\n", style="blue")
    if len(report.frames) > 1:
        add("\n")
        add("frames: ", style="dim")
        add(_frames_text(report) + "\n", style="dim")
    out.rstrip()
    return out


def _esc(text: str) -> str:
    return _html.escape(printable(text), quote=True)


@html.register
def _(report: ErrorReport) -> str:
    parts = [_CSS, '<div class="jaxscope-error">']
    where = _where(report)
    parts.append(
        f'<div class="js-head">{_esc(report.kind)}'
        + (f' <span class="js-where">at {_esc(where)}</span>' if where else "")
        + "</div>"
    )
    if jax_line(report):
        parts.append(f'<div class="js-msg">{message_html(jax_line(report))}</div>')
    if report.message:
        parts.append(f'<div class="js-msg">{message_html(report.message)}</div>')
    rows = context_lines(report)
    if rows:
        lines = []
        for text, current in rows:
            if current:
                css = "js-row js-cur"
            elif "^" in text and set(text.split("│", 1)[-1].strip()) == {"^"}:
                css = "js-row js-caret"
            else:
                css = "js-row js-dim"
            lines.append(f'<span class="{css}">{_esc(text)}</span>')
        parts.append("<pre>" + "".join(lines) + "</pre>")
    table_rows = []
    for o in report.operands:
        if o.aval or o.origin:
            table_rows.append(
                f"<tr><td><code>{_esc(o.expr)}</code></td><td>{_esc(o.aval)}</td>"
                f'<td class="js-dim">{_esc(o.origin)}</td></tr>'
            )
    shown = {f"{o.expr}: {o.aval}" for o in report.operands}
    for item in report.jax_context:
        if item not in shown:
            table_rows.append(
                f'<tr><td colspan="3" class="js-dim">{message_html(item)}</td></tr>'
            )
    if table_rows:
        parts.append("<table>" + "".join(table_rows) + "</table>")
    if report.hint:
        parts.append(
            f'<div class="js-hint"><b>hint:</b> {message_html(report.hint)}</div>'
        )
    if report.docs:
        link = _esc(report.docs)
        parts.append(
            f'<div class="js-dim">docs: <a href="{link}" target="_blank" '
            f'rel="noopener">{link}</a></div>'
        )
    if len(report.frames) > 1:
        parts.append(f'<div class="js-dim">frames: {_esc(_frames_text(report))}</div>')
    if report.traceback:
        tb = _ANSI.sub("", report.traceback)
        parts.append(
            f"<details><summary>Full traceback</summary><pre>{_esc(tb)}</pre></details>"
        )
    parts.append("</div>")
    return "".join(parts)
