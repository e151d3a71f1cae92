"""Rendering of ``LeakReport`` (a table of aval, transformation, created at, found in)
and of its ``LeakSummary`` (a table of leaks by function).

Text goes through rich (imported lazily), every user string (holder names, dict
keys, function names) as ``plain`` text: never markup, control characters spelled
out. HTML escapes every user string.
"""

from __future__ import annotations

import html as _html
from typing import Any

from jaxscope._display import html, message_html, plain, printable, rich_renderable
from jaxscope._leaks.checker import LeakReport
from jaxscope._leaks.records import Leak, LeakSummary, LeakSummaryRow, count_text
from jaxscope._records import SourceLoc
from jaxscope._source import full_loc, short_loc

_CSS = (
    "<style>.jaxscope-leaks{font-family:monospace;font-size:12px}"
    ".jaxscope-leaks table{border-collapse:collapse}"
    ".jaxscope-leaks td,.jaxscope-leaks th{padding:1px 8px;text-align:left;"
    "border-bottom:1px solid #ddd;vertical-align:top}"
    ".jaxscope-leaks .summary{font-weight:bold}"
    ".jaxscope-leaks .clean{color:#2a7a2a}"
    ".jaxscope-leaks .bad{color:#b00020}"
    ".jaxscope-leaks .hint{color:#555}</style>"
)


def _esc(text: str) -> str:
    return _html.escape(printable(text))


def _title(loc: SourceLoc | None) -> str:
    """The full ``file:line`` as a tooltip attribute (the cell shows it short)."""
    return "" if loc is None else f' title="{_html.escape(printable(full_loc(loc)))}"'


_HINT = (
    "fix: return values from the transformed function instead of storing them; keep "
    "only concrete values in globals, attributes and caches"
)


def _created(leak: Leak) -> str:
    if leak.created_at is None:
        return "?"
    text = short_loc(leak.created_at)
    if leak.argument:
        return f"{text} (argument, call site)"
    if leak.created_at.function:
        text += f" ({leak.created_at.function})"
    return text


def _found(leak: Leak) -> str:
    text = leak.found_in or "(not found: seen when used)"
    if leak.used_at is not None:
        text += f"; used at {short_loc(leak.used_at)}"
    return text


@rich_renderable.register
def _(report: LeakReport) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if not report.leaks:
        return Text("jaxscope: no tracer leaked", style="green")
    title = Text(f"jaxscope: {count_text(len(report.leaks))}", style="bold red")
    table = Table(show_edge=False, pad_edge=False, expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("aval", style="cyan", no_wrap=True)
    table.add_column("transformation", style="magenta", no_wrap=True)
    table.add_column("created at", style="yellow")
    table.add_column("found in")
    for i, leak in enumerate(report.leaks, 1):
        table.add_row(
            str(i),
            plain(leak.aval),
            plain(leak.transformation),
            plain(_created(leak)),
            plain(_found(leak)),
        )
    return Group(title, table, Text(_HINT, style="dim"))


@rich_renderable.register
def _(leak: Leak) -> Any:
    return plain(leak.describe(short=True))


@html.register
def _(report: LeakReport) -> str:
    esc = message_html
    if not report.leaks:
        return f'{_CSS}<div class="jaxscope-leaks"><span class="clean">jaxscope: no tracer leaked</span></div>'
    rows = "".join(
        "<tr>"
        f"<td>{i}</td><td>{esc(leak.aval)}</td><td>{esc(leak.transformation)}</td>"
        f"<td{_title(leak.created_at)}>{esc(_created(leak))}</td>"
        f"<td>{esc(_found(leak))}</td>"
        "</tr>"
        for i, leak in enumerate(report.leaks, 1)
    )
    summary = esc(count_text(len(report.leaks)))
    return (
        f'{_CSS}<div class="jaxscope-leaks">'
        f'<div class="summary bad">jaxscope: {summary}</div>'
        "<table><thead><tr><th>#</th><th>aval</th><th>transformation</th>"
        "<th>created at</th><th>found in</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        f'<div class="hint">{esc(_HINT)}</div></div>'
    )


@html.register
def _(leak: Leak) -> str:
    return (
        f'<span class="jaxscope-leak" title="{_esc(leak.describe())}">'
        f"{message_html(leak.describe(short=True))}</span>"
    )


_SUMMARY_COLUMNS = ("function", "leaks", "transformations", "created at", "found in")


def _summary_cells(row: LeakSummaryRow) -> tuple[str, str, str, str, str]:
    return (
        row.function,
        str(row.leaks),
        ", ".join(f"{t} ({n})" for t, n in row.transformations),
        short_loc(row.created_at) if row.created_at is not None else "?",
        "; ".join(row.found_in) or "(not found: seen when used)",
    )


@rich_renderable.register
def _(summary: LeakSummary) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if not summary.rows:
        return Text("jaxscope: no tracer leaked", style="green")
    table = Table(
        title=f"jaxscope: {count_text(summary.total_leaks)}, by function",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for column in _SUMMARY_COLUMNS:
        table.add_column(column, justify="right" if column == "leaks" else "left")
    for row in summary.rows:
        table.add_row(*(plain(cell) for cell in _summary_cells(row)))
    return Group(table, plain(summary.shown_headline, style="dim"))


@html.register
def _(summary: LeakSummary) -> str:
    esc = message_html
    if not summary.rows:
        return f'{_CSS}<div class="jaxscope-leaks"><span class="clean">jaxscope: no tracer leaked</span></div>'
    head = "".join(f"<th>{c}</th>" for c in _SUMMARY_COLUMNS)
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td{_title(r.created_at) if i == 3 else ''}>{esc(cell)}</td>"
            for i, cell in enumerate(_summary_cells(r))
        )
        + "</tr>"
        for r in summary.rows
    )
    title = esc(f"jaxscope: {count_text(summary.total_leaks)}, by function")
    return (
        f'{_CSS}<div class="jaxscope-leaks"><div class="summary bad">{title}</div>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        f'<div class="hint">{esc(summary.shown_headline)}</div></div>'
    )
