"""Text and HTML of the stepper: where it is paused, the frames, the values table."""

from __future__ import annotations

import html as _html
from typing import Any

from jaxscope._display import html as html_dispatch
from jaxscope._display import plain, printable, rich_renderable
from jaxscope._format import truncate
from jaxscope._jaxpr.params import eqn_line
from jaxscope._records import EqnInfo
from jaxscope._source import short_loc, short_path, typed_lines
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
    return f"{short_loc(info.source)}{fn}"


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
    library = stepper.in_library
    if library is not None:
        user = stepper.user_frame
        names = f"; names of {user.function}" if user is not None else ""
        lines.append(f"  (in library code: {library}{names})")
    src = stepper.source_line()
    if src is not None and info.source is not None:
        [(_, src)] = typed_lines(info.source.file, [(info.source.line, src)])
    if src is not None:
        lines.append(f"    {src.strip()}")
    arrow = "<-" if stepper.stopped_after else "->"
    lines.append(f"  {arrow} {eqn_line(info)}")
    return "\n".join(lines)


def frame_text(stepper: Stepper) -> str:
    """The user's frame whose names ``p`` reads (after ``up`` / ``down``)."""
    user = stepper.user_frame
    if user is None:
        return "no frame of your code is known here"
    return f"> {short_loc(user)} in {user.function} (p reads this frame's names)"


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
    lines = typed_lines(file, lines)
    info = stepper.current
    current = info.source.line if info is not None and info.source is not None else -1
    bps = {b.rsplit(":", 1)[-1] for b in stepper.breakpoints["lines"]}
    out = [f"{short_path(file) if file else file}:"]
    for number, text in lines:
        mark = "->" if number == current else "  "
        bp = "B" if str(number) in bps else " "
        out.append(f"{number:4d} {bp}{mark} {text}")
    return "\n".join(out)


def _frame_text(frame: Frame) -> str:
    """``str(frame)`` with its file shortened by ``short_path``."""
    return frame.describe(short_loc)


def where_text(stepper: Stepper) -> str:
    """The frame stack, outermost first, the current frame last."""
    out = []
    frames = stepper.frames
    for depth, frame in enumerate(frames):
        mark = ">" if depth == len(frames) - 1 else " "
        out.append(f"{mark} {'  ' * depth}{_frame_text(frame)}")
    return "\n".join(out) if out else "(no frames)"


_COLUMNS = ("name", "aval", "min", "max", "mean", "nan", "inf", "value")
#: The value column is left out when less than this is left for it.
_MIN_VALUE_WIDTH = 12


def _cells(s: ValueSummary) -> tuple[str, ...]:
    return (
        s.label,
        s.aval,
        stat_text(s.min),
        stat_text(s.max),
        stat_text(s.mean),
        str(s.nan_count),
        str(s.inf_count),
        s.preview,
    )


def _rows(summaries: list[ValueSummary]) -> list[tuple[str, ...]]:
    """The header and a row per value; the nan and inf columns only when a value
    has a NaN or an Inf (they are noise otherwise, and a narrow table needs room)."""
    shown = summaries[:_MAX_ROWS]
    keep = [
        i
        for i, col in enumerate(_COLUMNS)
        if col not in ("nan", "inf") or any(s.nan_count or s.inf_count for s in shown)
    ]
    rows = [_COLUMNS, *(_cells(s) for s in shown)]
    return [tuple(row[i] for i in keep) for row in rows]


#: What the value column gets before the name column is cut.
_WANT_VALUE_WIDTH = 16


def _fit_names(rows: list[tuple[str, ...]], width: int, per_column: int) -> None:
    """Cut the name column (in place) so that the value column gets its share of
    ``width``; names lose their middle, keeping the path's end and the jaxpr name.
    ``per_column``: the room a column takes beside its text."""
    others = sum(max(len(r[i]) for r in rows) for i in range(1, len(rows[0]) - 1))
    room = width - others - per_column * (len(rows[0]) - 1) - _WANT_VALUE_WIDTH
    limit = max(24, room)
    for k, row in enumerate(rows):
        if len(row[0]) > limit:
            rows[k] = (_cut_middle(row[0], limit), *row[1:])


def _cut_middle(text: str, limit: int) -> str:
    head = (limit - 1) // 2
    return text[:head] + "\u2026" + text[len(text) - (limit - 1 - head) :]


def values_text(summaries: list[ValueSummary], width: int = 100) -> str:
    """A fixed-width table of value summaries fitting ``width`` columns: one line per
    value, long names and values cut with ``...`` (the value column only when at
    least a few characters of it fit)."""
    if not summaries:
        return "(no values yet)"
    gap = 2
    rows = _rows(summaries)
    _fit_names(rows, width, gap)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    left = width - sum(widths[:-1]) - gap * (len(widths) - 1)
    shown = len(widths) if left >= _MIN_VALUE_WIDTH else len(widths) - 1
    widths[-1] = max(0, min(widths[-1], left))
    lines = [
        (" " * gap)
        .join(
            truncate(c, w).ljust(w) for c, w in zip(row[:shown], widths, strict=False)
        )
        .rstrip()
        for row in rows
    ]
    if len(summaries) > _MAX_ROWS:
        lines.append(f"... {len(summaries) - _MAX_ROWS} more")
    return "\n".join(lines)


def _values_table(summaries: list[ValueSummary], title: str, width: int) -> Any:
    """The rich table: one line per value; the name column up to a third of the
    console, the value the rest, each cut with an ellipsis."""
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    rows = _rows(summaries)
    _fit_names(rows, width, 3)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    # Each column but the last takes its text, a space each side and a rule.
    left = width - sum(w + 3 for w in widths[:-1])
    for col, w in zip(rows[0], widths, strict=True):
        if col == "value":
            table.add_column(
                col,
                no_wrap=True,
                overflow="ellipsis",
                max_width=max(_MIN_VALUE_WIDTH, left),
            )
        else:
            table.add_column(
                col, no_wrap=True, overflow="ellipsis", min_width=w, max_width=w
            )
    for row in rows[1:]:
        table.add_row(*(plain(cell) for cell in row))
    if len(summaries) > _MAX_ROWS:
        table.caption = f"... {len(summaries) - _MAX_ROWS} more"
    return table


class _Sized:
    """Builds its renderable for the console's width when printed."""

    def __init__(self, make: Any) -> None:
        self.make = make

    def __rich_console__(self, console: Any, options: Any) -> Any:
        yield self.make(options.max_width)


def _lines(text: str, style: str = "") -> Any:
    """``text`` one line per line, cut with an ellipsis at the console's edge."""
    out = plain(text, style)
    out.no_wrap = True
    out.overflow = "ellipsis"
    return out


@rich_renderable.register
def _(stepper: Stepper) -> Any:
    from rich.console import Group

    parts: list[Any] = [
        plain(f"Stepper of {stepper.function_name} ({stepper.reason})", "bold")
    ]
    parts.append(_lines(location_text(stepper)))
    if not stepper.done:
        listing = listing_text(stepper, 3)
        if not listing.startswith("no source"):
            parts.append(_lines(listing, "dim"))
    summaries = stepper.summaries()
    parts.append(_Sized(lambda width: _values_table(summaries, "values", width)))
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
        _Sized(lambda width: _values_table(finding.inputs, "inputs", width)),
        _Sized(lambda width: _values_table(finding.outputs, "outputs", width)),
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
    lines = typed_lines(file, lines)
    info = stepper.current
    current = info.source.line if info is not None and info.source is not None else -1
    shown = short_path(file) if file else file
    out = [f'<div title="{_esc(file or "")}">{_esc(shown)}</div><pre>']
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
        _Sized(lambda width: _values_table([finding.value], "input", width)),
    )


@html_dispatch.register
def _(finding: NanInInput) -> str:
    return (
        f'{_CSS}<div class="jaxscope-step"><div class="nan">{_esc(finding.kind)} already '
        f"in the input {_esc(finding.path)}: no equation made it</div>"
        f"{values_html([finding.value], 'input')}</div>"
    )
