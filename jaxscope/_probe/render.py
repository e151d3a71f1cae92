"""Text and HTML of probes and of the compiled NaN hunt's findings."""

from __future__ import annotations

from typing import Any

from jaxscope._display import escape, plain, rich_renderable
from jaxscope._display import html as html_dispatch
from jaxscope._format import truncate
from jaxscope._probe.nan import CompiledNanFinding
from jaxscope._probe.probe import ProbeValue, ProbeView
from jaxscope._source import short_loc
from jaxscope._stepper.render import frames_text, stat_text, values_html, values_text
from jaxscope._stepper.values import ValueSummary

_MAX_ROWS = 40
_COLUMNS = ("name", "line", "pass", "aval", "min", "max", "mean", "nan", "inf")


def _cells(name: str, where: str, side: str, s: ValueSummary) -> tuple[str, ...]:
    return (
        name,
        where,
        side,
        s.aval,
        stat_text(s.min),
        stat_text(s.max),
        stat_text(s.mean),
        str(s.nan_count),
        str(s.inf_count),
    )


def _rows(view: ProbeView) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [_COLUMNS]
    for value in view.values[:_MAX_ROWS]:
        where = short_loc(value.source) if value.source is not None else "-"
        rows.append(_cells(value.name, where, value.phase, value.summary))
        for device, summary in value.devices[:16]:
            rows.append(_cells(f"  {device}", "", "", summary))
        if len(value.devices) > 16:
            rows.append((f"  ... {len(value.devices) - 16} more devices",))
    return rows


def _head(view: ProbeView) -> str:
    c = view.compiled
    return (
        f"probe of {view.function_name}: {len(view.values)} values from a separate "
        f"compilation ({c.compile_seconds:.2f} s to compile, {c.run_seconds:.3f} s "
        "to run)"
    )


def _axes_lines(values: list[ProbeValue]) -> list[str]:
    lines: list[str] = []
    for v in values[:_MAX_ROWS]:
        if v.axes:
            lines.append(f"{v.name}: one row per {', '.join(v.axes)}")
        if v.reduced:
            lines.append(f"{v.name}: the {', '.join(v.reduced)}")
    return lines


def probe_text(view: ProbeView, width: int = 100) -> str:
    """The view as fixed-width text: one line per value (and per device)."""
    rows = _rows(view)
    n = len(_COLUMNS)
    widths = [max(len(r[i]) for r in rows if len(r) == n) for i in range(n)]
    widths[0] = min(widths[0], 40)
    widths[1] = min(widths[1], 40)
    lines = [_head(view)]
    for row in rows:
        if len(row) != n:
            lines.append(row[0])
            continue
        cells = [truncate(c, w).ljust(w) for c, w in zip(row, widths, strict=True)]
        lines.append(truncate("  ".join(cells).rstrip(), width))
    if len(view.values) > _MAX_ROWS:
        lines.append(f"... {len(view.values) - _MAX_ROWS} more values")
    lines.extend(_axes_lines(view.values))
    return "\n".join(lines)


@rich_renderable.register
def _(view: ProbeView) -> Any:
    return plain(probe_text(view))


@html_dispatch.register
def _(view: ProbeView) -> str:
    head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
    body: list[str] = []
    for row in _rows(view)[1:]:
        if len(row) != len(_COLUMNS):
            body.append(f'<tr><td colspan="{len(_COLUMNS)}">{escape(row[0])}</td></tr>')
            continue
        body.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>")
    axes = "".join(f"<div>{escape(line)}</div>" for line in _axes_lines(view.values))
    return (
        '<div class="jaxscope-probe" style="font-family:monospace;font-size:12px">'
        f"<div><b>{escape(_head(view))}</b></div>"
        f'<table style="border-collapse:collapse"><tr>{head}</tr>{"".join(body)}</table>'
        f"{axes}</div>"
    )


# ----------------------------------------------------- the compiled NaN hunt's finding


def _finding_lines(finding: CompiledNanFinding) -> list[str]:
    where = (
        short_loc(finding.source) if finding.source is not None else "(no source line)"
    )
    fn = (
        f" in {finding.source.function}"
        if finding.source and finding.source.function
        else ""
    )
    lines = [
        f"{finding.kind} first produced by {finding.primitive} at {where}{fn} "
        f"({finding.phase} pass, compiled run)"
    ]
    if finding.frames:
        lines.append(f"  in {frames_text(finding.frames)}")
    if finding.device is not None:
        lines.append(f"  on {finding.device}")
    return lines


@rich_renderable.register
def _(finding: CompiledNanFinding) -> Any:
    from rich.console import Group

    return Group(
        *(
            plain(line, "bold red" if k == 0 else "")
            for k, line in enumerate(_finding_lines(finding))
        ),
        plain(values_text(finding.inputs)),
        plain(values_text(finding.outputs)),
    )


@html_dispatch.register
def _(finding: CompiledNanFinding) -> str:
    lines = _finding_lines(finding)
    rest = "".join(f"<div>{escape(line)}</div>" for line in lines[1:])
    return (
        '<div class="jaxscope-step" style="font-family:monospace;font-size:12px">'
        f'<div style="color:#b00020;font-weight:bold">{escape(lines[0])}</div>{rest}'
        f"{values_html(finding.inputs, 'inputs')}{values_html(finding.outputs, 'outputs')}</div>"
    )
