"""Text and HTML of the stepper: where it is paused, the frames, the values table."""

from __future__ import annotations

import html as _html
from typing import Any

from jaxscope._display import html as html_dispatch
from jaxscope._display import plain, printable, rich_renderable
from jaxscope._format import truncate
from jaxscope._jaxpr.model import eqn_line
from jaxscope._records import EqnInfo
from jaxscope._stepper.stepper import Frame, NanFinding, Stepper, ValueSummary
from jaxscope._stepper.values import NanInInput

_MAX_ROWS = 40


def stat_text(value: float | None) -> str:
    """A statistic of a value summary: 4 significant digits, ``-`` when None."""
    if value is None:
        return "-"
    return f"{value:.4g}"


def frames_text(frames: list[Frame]) -> str:
    """``outer > jit(inner) > scan body[2/3]``."""
    parts = []
    for frame in frames:
        label = frame.label
        if frame.iteration is not None:
            total = f"/{frame.length}" if frame.length is not None else ""
            label += f"[{frame.iteration}{total}]"
        parts.append(label)
    return " > ".join(parts)


def _where(info: EqnInfo) -> str:
    if info.source is None:
        return "(no source line)"
    fn = f" in {info.source.function}" if info.source.function else ""
    return f"{info.source}{fn}"


def location_text(stepper: Stepper) -> str:
    """Where the stepper is paused, pdb style: the location, the source line, the equation."""
    if stepper.done and stepper.error is not None:
        return f"program stopped ({stepper.function_name}): {stepper.error}"
    if stepper.done:
        return f"program finished ({stepper.function_name}); result: {_short_repr(stepper)}"
    info = stepper.current
    if info is None:
        return f"paused in {frames_text(stepper.frames)}"
    lines = []
    if stepper.stopped_after:
        kind = stepper.finding.kind if stepper.finding is not None else "nan"
        lines.append(
            f"! {kind} produced by {info.primitive} at {_where(info)}  [{frames_text(stepper.frames)}]"
        )
    else:
        lines.append(f"> {_where(info)}  [{frames_text(stepper.frames)}]")
    src = stepper.source_line()
    if src is not None:
        lines.append(f"    {src.strip()}")
    arrow = "<-" if stepper.stopped_after else "->"
    lines.append(f"  {arrow} {eqn_line(info)}")
    return "\n".join(lines)


def _short_repr(stepper: Stepper) -> str:
    try:
        text = repr(stepper.result)
    except Exception as exc:
        text = f"<{type(exc).__name__}>"
    return truncate(" ".join(text.split()), 200)


def listing_text(stepper: Stepper, context: int = 5) -> str:
    """Source lines around the current equation; ``->`` marks it, ``B`` breakpoints."""
    file, lines = stepper.source_context(context)
    if not lines:
        return "no source available for the current equation"
    info = stepper.current
    current = info.source.line if info is not None and info.source is not None else -1
    bps = {b.rsplit(":", 1)[-1] for b in stepper.breakpoints["lines"]}
    out = [f"{file}:"]
    for number, text in lines:
        mark = "->" if number == current else "  "
        bp = "B" if str(number) in bps else " "
        out.append(f"{number:4d} {bp}{mark} {text}")
    return "\n".join(out)


def where_text(stepper: Stepper) -> str:
    """The frame stack, outermost first, the current frame last."""
    out = []
    frames = stepper.frames
    for depth, frame in enumerate(frames):
        mark = ">" if depth == len(frames) - 1 else " "
        out.append(f"{mark} {'  ' * depth}{frame}")
    return "\n".join(out) if out else "(no frames)"


def values_text(summaries: list[ValueSummary]) -> str:
    """A fixed-width table of value summaries."""
    if not summaries:
        return "(no values yet)"
    rows = [("name", "aval", "min", "max", "mean", "nan", "inf")]
    for s in summaries[:_MAX_ROWS]:
        rows.append(
            (
                s.label,
                s.aval,
                stat_text(s.min),
                stat_text(s.max),
                stat_text(s.mean),
                str(s.nan_count),
                str(s.inf_count),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
        for row in rows
    ]
    if len(summaries) > _MAX_ROWS:
        lines.append(f"... {len(summaries) - _MAX_ROWS} more")
    return "\n".join(lines)


def _values_table(summaries: list[ValueSummary], title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for col in ("name", "aval", "min", "max", "mean", "nan", "inf", "value"):
        table.add_column(col, no_wrap=col != "value", overflow="fold")
    for s in summaries[:_MAX_ROWS]:
        cells = (
            s.label,
            s.aval,
            stat_text(s.min),
            stat_text(s.max),
            stat_text(s.mean),
            str(s.nan_count),
            str(s.inf_count),
            s.preview,
        )
        table.add_row(*(plain(cell) for cell in cells))
    return table


@rich_renderable.register
def _(stepper: Stepper) -> Any:
    from rich.console import Group

    parts: list[Any] = [
        plain(f"Stepper of {stepper.function_name} ({stepper.reason})", "bold")
    ]
    parts.append(plain(location_text(stepper)))
    if not stepper.done:
        listing = listing_text(stepper, 3)
        if not listing.startswith("no source"):
            parts.append(plain(listing, "dim"))
    parts.append(_values_table(stepper.summaries(), "values"))
    return Group(*parts)


@rich_renderable.register
def _(finding: NanFinding) -> Any:
    from rich.console import Group

    return Group(
        plain(
            f"{finding.kind} first produced by {finding.primitive} at {_where(finding.eqn)}",
            "bold red",
        ),
        plain(f"  {eqn_line(finding.eqn)}"),
        plain(f"  in {frames_text(finding.frames)}"),
        _values_table(finding.inputs, "inputs"),
        _values_table(finding.outputs, "outputs"),
    )


_CSS = """<style>
.jaxscope-step{font-family:var(--jp-code-font-family,monospace);font-size:12px}
.jaxscope-step .where{font-weight:bold}
.jaxscope-step .nan{color:#b00020;font-weight:bold}
.jaxscope-step table{border-collapse:collapse;margin:4px 0}
.jaxscope-step td,.jaxscope-step th{padding:1px 8px;text-align:left;border-bottom:1px solid #ddd}
.jaxscope-step .cur{background:#fff3b0}
.jaxscope-step pre{margin:2px 0}
</style>"""


def _esc(text: object) -> str:
    return _html.escape(printable(str(text)))


def values_html(summaries: list[ValueSummary], title: str) -> str:
    """An HTML table of value summaries (every string escaped)."""
    head = "".join(
        f"<th>{c}</th>"
        for c in ("name", "aval", "min", "max", "mean", "nan", "inf", "value")
    )
    rows = []
    for s in summaries[:_MAX_ROWS]:
        cls = ' class="nan"' if s.nan_count or s.inf_count else ""
        rows.append(
            f"<tr{cls}><td>{_esc(s.label)}</td><td>{_esc(s.aval)}</td><td>{stat_text(s.min)}</td>"
            f"<td>{stat_text(s.max)}</td><td>{stat_text(s.mean)}</td><td>{s.nan_count}</td>"
            f"<td>{s.inf_count}</td><td><code>{_esc(s.preview)}</code></td></tr>"
        )
    return f"<div>{_esc(title)}</div><table><tr>{head}</tr>{''.join(rows)}</table>"


def _source_html(stepper: Stepper) -> str:
    file, lines = stepper.source_context(3)
    if not lines:
        return ""
    info = stepper.current
    current = info.source.line if info is not None and info.source is not None else -1
    out = [f"<div>{_esc(file)}</div><pre>"]
    for number, text in lines:
        cls = ' class="cur"' if number == current else ""
        out.append(f"<span{cls}>{number:4d}  {_esc(text)}</span>\n")
    out.append("</pre>")
    return "".join(out)


@html_dispatch.register
def _(stepper: Stepper) -> str:
    head = f'<div class="where">Stepper of {_esc(stepper.function_name)} ({_esc(stepper.reason)})</div>'
    loc = f"<pre>{_esc(location_text(stepper))}</pre>"
    src = "" if stepper.done else _source_html(stepper)
    return (
        f'{_CSS}<div class="jaxscope-step">{head}{loc}{src}'
        f"{values_html(stepper.summaries(), 'values')}</div>"
    )


@html_dispatch.register
def _(finding: NanFinding) -> str:
    return (
        f'{_CSS}<div class="jaxscope-step"><div class="nan">{_esc(finding.kind)} first produced by '
        f"{_esc(finding.primitive)} at {_esc(_where(finding.eqn))}</div>"
        f"<pre>{_esc(eqn_line(finding.eqn))}</pre><div>in {_esc(frames_text(finding.frames))}</div>"
        f"{values_html(finding.inputs, 'inputs')}{values_html(finding.outputs, 'outputs')}</div>"
    )


# ------------------------------------------------------------ a NaN already in an input


@rich_renderable.register
def _(finding: NanInInput) -> Any:
    from rich.console import Group

    return Group(
        plain(
            f"{finding.kind} already in the input {finding.path}: no equation made it"
        ),
        _values_table([finding.value], "input"),
    )


@html_dispatch.register
def _(finding: NanInInput) -> str:
    return (
        f'{_CSS}<div class="jaxscope-step"><div class="nan">{_esc(finding.kind)} already '
        f"in the input {_esc(finding.path)}: no equation made it</div>"
        f"{values_html([finding.value], 'input')}</div>"
    )
