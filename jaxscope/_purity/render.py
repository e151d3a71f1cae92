"""Rendering of purity findings and of their per-function summary: a compact table
(rich) and an escaped HTML table. Names, reprs and paths are the user's: shown as
plain text (never rich markup, control characters spelled out), escaped in HTML."""

from __future__ import annotations

import html as _html
from typing import Any

from jaxscope._display import html, message_html, plain, printable, rich_renderable
from jaxscope._format import plural
from jaxscope._purity.records import PurityFinding, PuritySummary, PuritySummaryRow
from jaxscope._purity.watcher import PurityLog
from jaxscope._source import full_loc, short_loc


def _esc(text: str) -> str:
    """A user string for HTML: escaped, control characters spelled out."""
    return _html.escape(printable(text))


_CSS = (
    "<style>.jaxscope-purity table{border-collapse:collapse}"
    ".jaxscope-purity td,.jaxscope-purity th{border:1px solid #ccc;padding:2px 6px;"
    "text-align:left;font-family:monospace;font-size:12px}</style>"
)

_NONE_FOUND = "jaxscope purity: no stale values or trace-time side effects"
_SUMMARY_COLUMNS = ("function", "side effects", "stale values", "names")
_COUNT_COLUMNS = ("side effects", "stale values")

_KIND_LABEL = {
    "stale_constant": "stale value",
    "trace_time_side_effect": "trace-time side effect",
}


def finding_line(finding: PurityFinding) -> str:
    """One line: where, what, and the fix (control characters spelled out)."""
    where = f"{short_loc(finding.source)}: " if finding.source is not None else ""
    if finding.kind == "stale_constant":
        what = (
            f"{finding.function} uses {finding.name} = {finding.captured} baked in at "
            f"trace time; it is {finding.current} now"
        )
    else:
        what = f"{finding.function} ran {finding.name} only while being traced"
    return printable(f"{where}{what} ({finding.hint})")


def _rows(findings: list[PurityFinding]) -> list[tuple[str, str, str, str, str]]:
    return [
        (
            _KIND_LABEL.get(f.kind, f.kind),
            f.function,
            f.name,
            short_loc(f.source) if f.source is not None else "?",
            f"{f.captured} → {f.current}" if f.kind == "stale_constant" else "",
        )
        for f in findings
    ]


def _table(findings: list[PurityFinding], title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, show_lines=False, title_justify="left")
    for column in ("kind", "function", "name", "line", "captured → now"):
        table.add_column(column)
    for row in _rows(findings):
        table.add_row(*(plain(cell) for cell in row))
    return table


@rich_renderable.register
def _(log: PurityLog) -> Any:
    from rich.console import Group
    from rich.text import Text

    findings = log.findings
    if not findings:
        return Text(_NONE_FOUND)
    hints = [plain(f"• {f.name}: {f.hint}", style="dim") for f in findings]
    title = f"jaxscope purity: {plural(len(findings), 'finding')}"
    return Group(_table(findings, title), *hints)


@rich_renderable.register
def _(finding: PurityFinding) -> Any:
    return plain(finding_line(finding))


_LINE_COLUMN = 3  # of ``_rows``: the short ``file:line``


def _title(finding: PurityFinding) -> str:
    """The full ``file:line`` as a tooltip attribute (the cell shows it short)."""
    if finding.source is None:
        return ""
    return f' title="{_html.escape(printable(full_loc(finding.source)), quote=True)}"'


def findings_html(findings: list[PurityFinding], title: str) -> str:
    """An HTML table of findings with their hints; every string escaped."""
    head = "".join(
        f"<th>{_esc(c)}</th>"
        for c in ("kind", "function", "name", "line", "captured → now", "fix")
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{_title(f) if i == _LINE_COLUMN else ''}>{message_html(cell)}</td>"
            for i, cell in enumerate((*row, f.hint))
        )
        + "</tr>"
        for row, f in zip(_rows(findings), findings, strict=True)
    )
    return (
        f'<div class="jaxscope-purity">{_CSS}'
        f"<b>{_esc(title)}</b><table><tr>{head}</tr>{body}</table></div>"
    )


@html.register
def _(log: PurityLog) -> str:
    findings = log.findings
    if not findings:
        return f'<div class="jaxscope-purity">{_NONE_FOUND}</div>'
    return findings_html(
        findings, f"jaxscope purity: {plural(len(findings), 'finding')}"
    )


@html.register
def _(finding: PurityFinding) -> str:
    return findings_html([finding], "jaxscope purity")


def _summary_cells(row: PuritySummaryRow) -> tuple[str, str, str, str]:
    return (
        row.function,
        str(row.side_effects),
        str(row.stale_values),
        ", ".join(row.names),
    )


def _summary_title(summary: PuritySummary) -> str:
    return f"jaxscope purity: {plural(summary.total_findings, 'finding')} by function"


@rich_renderable.register
def _(summary: PuritySummary) -> Any:
    from rich.table import Table
    from rich.text import Text

    if not summary.rows:
        return Text(_NONE_FOUND)
    table = Table(title=_summary_title(summary), title_justify="left")
    for column in _SUMMARY_COLUMNS:
        table.add_column(
            column, justify="right" if column in _COUNT_COLUMNS else "left"
        )
    for row in summary.rows:
        table.add_row(*(plain(cell) for cell in _summary_cells(row)))
    return table


@html.register
def _(summary: PuritySummary) -> str:
    if not summary.rows:
        return f'<div class="jaxscope-purity">{_NONE_FOUND}</div>'
    head = "".join(f"<th>{c}</th>" for c in _SUMMARY_COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in _summary_cells(r)) + "</tr>"
        for r in summary.rows
    )
    return (
        f'<div class="jaxscope-purity">{_CSS}<b>{_esc(_summary_title(summary))}</b>'
        f"<table><tr>{head}</tr>{body}</table></div>"
    )
