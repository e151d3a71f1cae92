# pyright: strict
"""Rendering of ``ProgramDiff``: a unified diff in text, two columns in HTML.

Text: the summary first, then one ``@@`` block per changed line with its code and
numbers, its equations ``-`` removed, ``+`` added, ``~`` changed, its HLO ops and
collectives. HTML: the same summary, then a table with the older program's line on
the left, the code in the middle and the newer one's on the right; a changed line
is tinted and opens (``<details>``) to its equation and op changes. Every string
from the program or the user is escaped (HTML) or shown as plain text (terminal).
"""

from __future__ import annotations

from typing import Any

from jaxscope._diff.model import (
    EqnChange,
    LineDiff,
    ProgramDiff,
    format_number,
    percent,
)
from jaxscope._display import escape, html, plain, rich_renderable
from jaxscope._format import plural

#: Equations and ops listed per line before the rest is counted.
MAX_ITEMS_PER_LINE = 20
#: Changed lines listed in full before the rest is counted.
MAX_LINES = 200

_LEVEL_NAMES = {
    "jaxpr": "jaxpr",
    "hlo": "optimized HLO",
    "memory": "memory",
    "collectives": "collectives",
}


def _title(d: ProgramDiff) -> str:
    names = (
        d.before_name
        if d.before_name == d.after_name
        else f"{d.before_name} → {d.after_name}"
    )
    levels = ", ".join(_LEVEL_NAMES.get(level, level) for level in d.levels)
    return f"ProgramDiff of {names or 'two programs'} ({levels})"


def _numbers_note(line: LineDiff) -> str:
    notes: list[str] = []
    for name, label in (
        ("equations", "equations"),
        ("hlo_ops", "HLO ops"),
        ("flops", "flops"),
        ("bytes", "bytes"),
        ("collective_bytes", "collective bytes"),
        ("peak_bytes", "at peak"),
    ):
        a, b = line.numbers.get(name, (None, None))
        if a is None or b is None or a == b:
            continue
        fmt = (
            "bytes_accessed"
            if name in ("bytes", "collective_bytes", "peak_bytes")
            else name
        )
        notes.append(
            f"{label} {format_number(fmt, a)} → {format_number(fmt, b)}"
            + (f" ({percent(a, b)})" if name != "equations" else "")
        )
    return ", ".join(notes)


def _change_lines(changes: tuple[EqnChange, ...]) -> list[str]:
    out: list[str] = []
    for change in changes[:MAX_ITEMS_PER_LINE]:
        if change.kind == "changed" and change.before is not None:
            out.append(f"  - {change.before.text()}")
            if change.after is not None:
                out.append(f"  + {change.after.text()}")
            out.append(f"    ({'; '.join(change.details)})")
        else:
            out.append(f"  {change}")
    if len(changes) > MAX_ITEMS_PER_LINE:
        out.append(f"  … {plural(len(changes) - MAX_ITEMS_PER_LINE, 'more change')}")
    return out


def _ops_lines(line: LineDiff) -> list[str]:
    out: list[str] = []
    for sign, ops in (("-", line.ops_removed), ("+", line.ops_added)):
        items = sorted(ops.items())
        for op, n in items[:MAX_ITEMS_PER_LINE]:
            out.append(f"  {sign} HLO {op}" + (f" x{n}" if n > 1 else ""))
        if len(items) > MAX_ITEMS_PER_LINE:
            out.append(
                f"  {sign} … {plural(len(items) - MAX_ITEMS_PER_LINE, 'more op')}"
            )
    for sign, cols in (("-", line.collectives_removed), ("+", line.collectives_added)):
        for kind, n in sorted(cols.items()):
            out.append(f"  {sign} collective {kind}" + (f" x{n}" if n > 1 else ""))
    return out


def line_block(line: LineDiff) -> list[str]:
    """One changed line: its ``@@`` header, then its changes."""
    head = f"@@ {line.where}"
    side = line.after if line.status == "added" else line.before
    if line.status in ("added", "removed") and side is not None and side.eqns:
        head += f" [{line.status} line]"
    if line.code:
        head += f"  {line.code}"
    if line.code_before:
        head += f"  (was: {line.code_before})"
    notes = _numbers_note(line)
    out = [head + (f"  [{notes}]" if notes else "")]
    return out + _change_lines(line.changes) + _ops_lines(line)


def diff_text_lines(d: ProgramDiff) -> list[str]:
    """The whole text rendering, one string per line."""
    out = [_title(d)]
    out += [f"  {s}" for s in d.summary()]
    changed = d.changed_lines
    for line in changed[:MAX_LINES]:
        out.append("")
        out += line_block(line)
    if len(changed) > MAX_LINES:
        out.append(f"… {plural(len(changed) - MAX_LINES, 'more changed line')}")
    return out


@rich_renderable.register
def _(d: ProgramDiff) -> Any:
    from rich.text import Text

    text = Text()
    for n, line in enumerate(diff_text_lines(d)):
        if n:
            text.append("\n")
        style = ""
        if n == 0:
            style = "bold"
        elif line.startswith("  + "):
            style = "green"
        elif line.startswith("  - "):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        text.append_text(plain(line, style))
    return text


_CSS = """<style>
.jaxscope-diff table{border-collapse:collapse;font-family:monospace;font-size:12px}
.jaxscope-diff td,.jaxscope-diff th{border:1px solid #ddd;padding:2px 6px;vertical-align:top;text-align:left}
.jaxscope-diff tr.changed td{background:#fff6d5}
.jaxscope-diff tr.added td{background:#e6ffed}
.jaxscope-diff tr.removed td{background:#ffeef0}
.jaxscope-diff .add{color:#22863a}.jaxscope-diff .del{color:#b31d28}
.jaxscope-diff ul{margin:2px 0 6px 0}
</style>"""


def _side(line: LineDiff, which: str) -> str:
    facts = line.before if which == "before" else line.after
    if facts is None:
        return ""
    parts = [escape(facts.label)]
    if facts.eqns:
        parts.append(escape(plural(len(facts.eqns), "equation")))
    if facts.ops:
        parts.append(escape(plural(sum(facts.ops.values()), "HLO op")))
    if facts.flops:
        parts.append(escape(f"{format_number('flops', facts.flops)} flops"))
    if facts.collectives:
        cols = ", ".join(f"{n} {k}" for k, n in sorted(facts.collectives.items()))
        parts.append(escape(cols))
    return "<br>".join(parts)


def _detail_html(line: LineDiff) -> str:
    items = [
        f'<li class="{"add" if s.startswith("  +") else "del" if s.startswith("  -") else ""}">'
        f"{escape(s.strip())}</li>"
        for s in _change_lines(line.changes) + _ops_lines(line)
    ]
    return f"<ul>{''.join(items)}</ul>" if items else ""


@html.register
def _(d: ProgramDiff) -> str:
    summary = "".join(f"<li>{escape(s)}</li>" for s in d.summary())
    rows: list[str] = []
    for line in d.lines[: MAX_LINES * 5]:
        status = line.status
        code = escape(line.code or line.where)
        if status != "same":
            detail = _detail_html(line)
            code = (
                f"<details><summary>{code}</summary>"
                f"<div>{escape(line.summary())}</div>{detail}</details>"
            )
        rows.append(
            f'<tr class="{status}"><td>{_side(line, "before")}</td>'
            f"<td>{code}</td><td>{_side(line, 'after')}</td></tr>"
        )
    return (
        f'{_CSS}<div class="jaxscope-diff"><b>{escape(_title(d))}</b>'
        f"<ul>{summary}</ul>"
        f"<table><tr><th>{escape(d.before_name or 'before')}</th><th>source</th>"
        f"<th>{escape(d.after_name or 'after')}</th></tr>{''.join(rows)}</table></div>"
    )
