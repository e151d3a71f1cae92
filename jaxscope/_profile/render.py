"""Rendering of ``ProfileView`` and ``MemoryView``: rich text and HTML.

Both show the user's source shaded by each line's share (time, or bytes at the
peak), like ``cython -a``: in the terminal a ``%lprun``-style table
(``Line # | Time | % | Ops | Line contents``), in HTML rows that open on a click to
list the line's ops and fusions (or buffers). A sorted summary of the top lines
comes first, and for the profile the user's call tree. Every user string is escaped.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from typing import Any

from jaxscope._display import escape, html, plain, rich_renderable
from jaxscope._format import format_bytes, plural
from jaxscope._profile.memory import MemoryView
from jaxscope._profile.profile import SPLIT_NOTE, ProfileView
from jaxscope._profile.records import Buffer, FunctionTime
from jaxscope._profile.residuals import ResidualLine, ResidualsView
from jaxscope._profile.source import SourceBlock
from jaxscope._profile.text import (
    format_count,
    format_seconds,
    format_share,
    shade,
    sparkline,
)
from jaxscope._source import short_path

MAX_TREE_DEPTH = 12
_ids = itertools.count()


def _short(file: str, line: int | None = None) -> str:
    """``file`` (``:line``) as views show files: ``short_path``, so two files with
    the same base name stay apart."""
    shown = short_path(file)
    return f"{shown}:{line}" if line is not None else shown


_e = escape


# --------------------------------------------------------------------------- summaries


def profile_summary(view: ProfileView) -> list[str]:
    """The header lines of a profile display."""
    name = f" of {view.function_name}" if view.function_name else ""
    devices = view.devices_shown
    where = f"{view.platform or 'device'}, {plural(len(devices), 'device')}"
    if len(view.devices) > 1 and len(devices) == 1:
        where = (
            f"{view.platform or 'device'} device {devices[0]} of {len(view.devices)}"
        )
    out = [
        f"js.profile{name}: {format_seconds(view.total)} of ops per run "
        f"(mean of {view.repeat} runs; {where})"
    ]
    if not view.ops:
        return [*out, "no op ran: the compiled program only passes its inputs through"]
    attributed = view.total - view.unattributed
    ratio = attributed / view.wall if view.wall else 0.0
    out.append(
        f"run on the device {format_seconds(view.wall)}; source lines account for "
        f"{format_seconds(attributed)} ({format_share(ratio)} of it)"
        + (
            f"; {format_seconds(view.unattributed)} has no source line"
            if view.unattributed > 0
            else ""
        )
    )
    if view.wall and view.total > 1.02 * view.wall:
        out.append(
            "ops overlapped: XLA ran independent ops at once, so their times add up "
            "to more than the run"
        )
    if len(view.devices) > 1 and len(devices) > 1:
        totals = view.device_totals.values()
        out.append(
            f"per device {format_seconds(min(totals))} to {format_seconds(max(totals))}"
            " of ops; rows show the mean over devices (view.for_device(d) for one)"
        )
    if view.command_buffers:
        out.append(
            "XLA ran the kernels as CUDA graphs, which hide their ops: times are from "
            "the program compiled with command buffers off ("
            f"{format_seconds(statistics.median(view.run_times))} per run against "
            f"{format_seconds(statistics.median(view.as_compiled_run_times))} as "
            "you compiled it)"
        )
    if view.iterations:
        out.append("lines in loop bodies: Hits = executions per run, Per hit = one")
    out.append(f"note: {SPLIT_NOTE}")
    return out


def memory_summary(view: MemoryView) -> list[str]:
    """The header lines of a memory display."""
    name = f" of {view.function_name}" if view.function_name else ""
    where = f" at {view.peak_op}" if view.peak_op else ""
    if view.peak_source is not None:
        where += f" ({_short(view.peak_source.file, view.peak_source.line)})"
    out = [f"js.memory{name}: peak {format_bytes(view.peak_bytes)}{where}"]
    donated = (
        f" ({format_bytes(view.alias_bytes)} of them into donated arguments)"
        if view.alias_bytes
        else ""
    )
    out.append(
        f"arguments {format_bytes(view.argument_bytes)}, outputs "
        f"{format_bytes(view.output_bytes)}{donated}, temporaries "
        f"{format_bytes(view.temp_live_bytes)} live of "
        f"{format_bytes(view.temp_bytes)} reserved"
    )
    analysis = view.analysis
    if analysis:
        total = sum(
            (analysis.get(k) or 0)
            for k in ("argument_bytes", "output_bytes", "temp_bytes")
        )
        total -= analysis.get("alias_bytes") or 0
        out.append(
            f"XLA memory_analysis(): {format_bytes(total)} "
            "(arguments + outputs + temporaries - aliased)"
        )
    if view.kinds:
        ordered = sorted(view.kinds.items(), key=lambda kv: -kv[1])
        out.append(
            "at the peak: "
            + ", ".join(
                f"{_KIND_WORDS.get(k, k)} {format_bytes(n)}" for k, n in ordered
            )
        )
    for finding in view.findings:
        out.append(f"finding: {finding.message}")
        out.append(f"  fix: {finding.fix}")
    if any(not b.live_at_peak for b in view.largest(view.show_top)):
        out.append(
            "(later) / (read): an output written after the peak, an argument read "
            "before it; XLA holds their memory and lends it to temporaries meanwhile"
        )
    if view.estimated:
        out.append("note: XLA gave no live ranges; temporaries are counted whole")
    return out


_KIND_WORDS = {
    "argument": "arguments",
    "donated": "donated arguments",
    "optimizer_state": "optimizer state",
    "output": "outputs",
    "residual": "saved residuals",
    "temporary": "temporaries",
    "constant": "constants",
}


def kind_label(buffer: Buffer) -> str:
    """A buffer's kind as the tables show it: an output not yet written or an
    argument already read at the peak says so (XLA holds its memory)."""
    if buffer.live_at_peak:
        return buffer.kind
    if buffer.kind == "output":
        return "output (later)"
    return f"{buffer.kind} (read)"


def _flame_rows(root: FunctionTime) -> list[tuple[int, FunctionTime]]:
    return [(d, n) for d, n in root.walk() if d > 0 and d <= MAX_TREE_DEPTH]


# --------------------------------------------------------------------------- rich


def _shaded(share: float, rgb: tuple[int, int, int]) -> str:
    strength = shade(share)
    if strength <= 0:
        return ""
    r, g, b = (int(255 - (255 - c) * strength) for c in rgb)
    return f"black on rgb({r},{g},{b})"


_TIME_RGB = (255, 110, 40)
_BYTES_RGB = (70, 130, 255)


def _rich_source_table(
    block: SourceBlock,
    columns: list[str],
    row_of: Callable[[str, int], tuple[list[str], float] | None],
    rgb: tuple[int, int, int],
) -> Any:
    from rich.table import Table

    title = _short(block.file) + (f" — {block.function}" if block.function else "")
    table = Table(title=plain(title), title_justify="left", box=None, pad_edge=False)
    for column in columns:
        table.add_column(
            column, justify="right", no_wrap=True, min_width=max(len(column), 7)
        )
    table.add_column("Line contents", no_wrap=True, overflow="ellipsis", ratio=1)
    for number, text in block.rows:
        found = row_of(block.file, number)
        cells, share = found if found is not None else (["" for _ in columns[1:]], 0.0)
        table.add_row(str(number), *cells, plain(text), style=_shaded(share, rgb))
    return table


def _profile_row(view: ProfileView, loops: bool) -> Callable[[str, int], Any]:
    by_line = view.by_line

    def row(file: str, number: int) -> tuple[list[str], float] | None:
        line = by_line.get((file, number))
        if line is None:
            return None
        cells = [format_seconds(line.time), format_share(line.share), str(line.n_ops)]
        if loops:
            cells[1:1] = [format_count(line.count), format_seconds(line.per_iteration)]
        return cells, line.share

    return row


def _profile_columns(loops: bool) -> list[str]:
    if loops:
        return ["Line #", "Time", "Hits", "Per hit", "%", "Ops"]
    return ["Line #", "Time", "%", "Ops"]


@rich_renderable.register
def _(view: ProfileView) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.tree import Tree

    parts: list[Any] = [plain("\n".join(profile_summary(view)))]
    top = Table(title="top lines", title_justify="left", box=None, pad_edge=False)
    for column in ("#", "Time", "%", "Where", "What"):
        top.add_column(column, justify="right" if column in "#Time%" else "left")
    for rank, spot in enumerate(view.top(view.show_top), 1):
        where = _short(spot.source.file, spot.source.line) if spot.source else "?"
        what = (
            spot.code if spot.kind == "line" else f"{spot.kind} {', '.join(spot.ops)}"
        )
        top.add_row(
            str(rank),
            format_seconds(spot.time),
            format_share(spot.share),
            plain(where),
            plain(what),
            style=_shaded(spot.share, _TIME_RGB),
        )
    parts.append(top)
    loops = view.iterations
    for block in view.source_blocks():
        parts.append(
            _rich_source_table(
                block, _profile_columns(loops), _profile_row(view, loops), _TIME_RGB
            )
        )
    tree = Tree(f"call tree {format_seconds(view.functions.time)}")
    nodes: dict[int, Any] = {0: tree}
    for depth, node in _flame_rows(view.functions):
        where = f" ({_short(node.file)})" if node.file else ""
        label = (
            f"{node.function}{where} {format_seconds(node.time)} "
            f"{format_share(node.share)}"
        )
        if node.self_time and node.children:
            label += f", own lines {format_seconds(node.self_time)}"
        nodes[depth] = nodes[depth - 1].add(
            plain(label), style=_shaded(node.share, _TIME_RGB)
        )
    parts.append(tree)
    return Group(*parts)


def _memory_row(view: MemoryView) -> Callable[[str, int], Any]:
    by_line = view.by_line

    def row(file: str, number: int) -> tuple[list[str], float] | None:
        line = by_line.get((file, number))
        if line is None:
            return None
        cells = [
            format_bytes(line.bytes),
            format_share(line.share),
            str(len(line.buffers)),
        ]
        return cells, line.share

    return row


def _buffer_where(buffer: Buffer) -> str:
    line = _short(buffer.source.file, buffer.source.line) if buffer.source else ""
    if buffer.argument is None:
        return line
    if buffer.opcode == "parameter" or not line:
        return f"argument {buffer.argument}"
    return f"{line}, in {buffer.argument}'s buffer"


@rich_renderable.register
def _(view: MemoryView) -> Any:
    from rich.console import Group
    from rich.table import Table

    peak = view.peak_bytes
    head = memory_summary(view)
    head.append("live bytes over the schedule: " + sparkline(view.timeline))
    parts: list[Any] = [plain("\n".join(head))]
    table = Table(
        title="largest buffers at the peak",
        title_justify="left",
        box=None,
        pad_edge=False,
    )
    for column in ("Bytes", "%", "Kind", "Buffer", "Shape", "Defined at"):
        table.add_column(
            column, justify="right" if column in ("Bytes", "%") else "left"
        )
    for buffer in view.largest(view.show_top):
        share = buffer.peak_bytes / peak if peak else 0.0
        table.add_row(
            format_bytes(buffer.bytes),
            format_share(share),
            plain(kind_label(buffer)),
            plain(buffer.name),
            plain(buffer.shape),
            plain(_buffer_where(buffer)),
            style=_shaded(share, _BYTES_RGB),
        )
    parts.append(table)
    for block in view.source_blocks():
        parts.append(
            _rich_source_table(
                block,
                ["Line #", "Bytes", "%", "Buffers"],
                _memory_row(view),
                _BYTES_RGB,
            )
        )
    return Group(*parts)


# --------------------------------------------------------------------------- HTML

_CSS = """
{root}{{font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.45}}
{root} .jxp-head{{white-space:pre-wrap;margin-bottom:6px}}
{root} table.jxp-top{{border-collapse:collapse;margin:4px 0 10px}}
{root} table.jxp-top td,{root} table.jxp-top th{{padding:1px 8px;text-align:left}}
{root} .jxp-num{{text-align:right!important}}
{root} .jxp-block{{margin:8px 0;border:1px solid rgba(128,128,128,.35)}}
{root} .jxp-title{{padding:2px 6px;background:rgba(128,128,128,.12)}}
{root} .jxp-row>summary,{root} .jxp-cold{{display:grid;grid-template-columns:{cols};
 gap:0 8px;white-space:pre;padding:0 6px;list-style:none;cursor:default}}
{root} .jxp-row>summary{{cursor:pointer}}
{root} .jxp-row>summary::-webkit-details-marker{{display:none}}
{root} .jxp-row[open]>summary{{outline:1px solid rgba(0,0,0,.4)}}
{root} .jxp-c{{text-align:right;color:inherit}}
{root} .jxp-hdr{{font-weight:bold}}
{root} .jxp-code{{overflow:hidden;text-overflow:ellipsis}}
{root} .jxp-ops{{margin:2px 0 6px 7ch;padding:2px 6px;border-left:3px solid rgba(128,128,128,.5)}}
{root} .jxp-ops table td{{padding:0 8px 0 0}}
{root} .jxp-tree ul{{list-style:none;margin:0;padding-left:2ch}}
{root} .jxp-bar{{display:inline-block;height:.8em;vertical-align:middle;margin-right:4px}}
"""


def _bg(share: float, rgb: tuple[int, int, int]) -> str:
    r, g, b = rgb
    return f"background:rgba({r},{g},{b},{shade(share) * 0.85:.3f})"


def _html_block(
    block: SourceBlock,
    header: list[str],
    row_of: Callable[[str, int], tuple[list[str], float, str] | None],
    rgb: tuple[int, int, int],
) -> str:
    columns = len(header) - 1
    title = _e(_short(block.file)) + (
        f" — {_e(block.function)}" if block.function else ""
    )
    names = "".join(f'<span class="jxp-c">{_e(h)}</span>' for h in header)
    rows = [
        f'<div class="jxp-block"><div class="jxp-title" title="{_e(block.file)}">'
        f"{title}</div>"
        f'<div class="jxp-cold jxp-hdr">{names}<span>Line contents</span></div>'
    ]
    for number, text in block.rows:
        found = row_of(block.file, number)
        if found is None:
            empty = '<span class="jxp-c"></span>' * columns
            rows.append(
                f'<div class="jxp-cold"><span class="jxp-c">{number}</span>{empty}'
                f'<span class="jxp-code">{_e(text)}</span></div>'
            )
            continue
        cells, share, detail = found
        spans = "".join(f'<span class="jxp-c">{_e(c)}</span>' for c in cells)
        rows.append(
            f'<details class="jxp-row" data-line="{number}">'
            f'<summary style="{_bg(share, rgb)}"><span class="jxp-c">{number}</span>'
            f'{spans}<span class="jxp-code">{_e(text)}</span></summary>'
            f'<div class="jxp-ops">{detail}</div></details>'
        )
    rows.append("</div>")
    return "".join(rows)


def _line_detail(view: ProfileView, file: str, number: int) -> str:
    line = view.by_line[(file, number)]
    out = [
        f"<div>{_e(format_count(line.flops))} flops, "
        f"{_e(format_bytes(int(line.bytes_accessed)))} accessed per run"
        + (
            f"; {_e(format_count(line.count))} executions per run"
            if line.count > 1
            else ""
        )
        + "</div><table><tr><th>op</th><th>kind</th><th>time here</th><th>of op</th>"
        "<th>fusion members on this line</th></tr>"
    ]
    for op, seconds in view.ops_at(file, number):
        here = [m for m in line.ops if m in op.members] if op.members else []
        out.append(
            f'<tr class="jxp-op"><td>{_e(op.name)} ({_e(op.opcode)})</td>'
            f"<td>{_e(op.kind)}</td><td>{_e(format_seconds(seconds))}</td>"
            f"<td>{_e(format_share(seconds / op.time if op.time else 0.0))}</td>"
            f"<td>{_e(', '.join(here))}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def _tree_html(node: FunctionTime, depth: int = 0) -> str:
    if depth > MAX_TREE_DEPTH:
        return ""
    width = max(1, round(node.share * 120))
    label = (
        f'<span class="jxp-bar" style="width:{width}px;{_bg(node.share, _TIME_RGB)}">'
        f'</span>{_e(node.function)} <span title="{_e(node.file)}">'
        f"{_e(f'({_short(node.file)})' if node.file else '')}</span> "
        f"{_e(format_seconds(node.time))} {_e(format_share(node.share))}"
    )
    children = "".join(_tree_html(child, depth + 1) for child in node.children)
    return f"<li>{label}<ul>{children}</ul></li>" if children else f"<li>{label}</li>"


def _wrap(kind: str, body: str, columns: str) -> str:
    rid = f"jxp-{kind}-{next(_ids)}"
    css = _CSS.format(root=f"#{rid}", cols=columns)
    return f'<div class="jaxscope-{kind}" id="{rid}"><style>{css}</style>{body}</div>'


@html.register
def _(view: ProfileView) -> str:
    loops = view.iterations
    head = _e("\n".join(profile_summary(view)))
    top = [
        '<table class="jxp-top"><tr><th>#</th><th>Time</th><th>%</th><th>Where</th><th>What</th></tr>'
    ]
    for rank, spot in enumerate(view.top(view.show_top), 1):
        where = str(spot.source) if spot.source else "?"
        what = (
            spot.code if spot.kind == "line" else f"{spot.kind} {', '.join(spot.ops)}"
        )
        top.append(
            f'<tr class="jxp-hot" style="{_bg(spot.share, _TIME_RGB)}"><td>{rank}</td>'
            f'<td class="jxp-num">{_e(format_seconds(spot.time))}</td>'
            f'<td class="jxp-num">{_e(format_share(spot.share))}</td>'
            f'<td title="{_e(where)}">{_e(_short(spot.source.file, spot.source.line) if spot.source else "?")}</td>'
            f"<td><code>{_e(what)}</code></td></tr>"
        )
    top.append("</table>")
    row = _profile_row(view, loops)

    def row_of(file: str, number: int) -> tuple[list[str], float, str] | None:
        found = row(file, number)
        if found is None:
            return None
        return found[0], found[1], _line_detail(view, file, number)

    header = _profile_columns(loops)
    n_columns = len(header) - 1
    blocks = "".join(
        _html_block(b, header, row_of, _TIME_RGB) for b in view.source_blocks()
    )
    tree = f'<div class="jxp-tree"><div>call tree</div><ul>{_tree_html(view.functions)}</ul></div>'
    columns = "6ch " + " ".join(["9ch"] * n_columns) + " minmax(20ch,1fr)"
    body = f'<div class="jxp-head">{head}</div>{"".join(top)}{blocks}{tree}'
    return _wrap("profile", body, columns)


def _buffers_detail(view: MemoryView, file: str, number: int) -> str:
    rows = [
        f"<tr><td>{_e(b.name)}</td><td>{_e(kind_label(b))}</td><td>{_e(b.shape)}</td>"
        f"<td>{_e(format_bytes(b.bytes))}</td></tr>"
        for b in view.buffers_at(file, number)
    ]
    head = "<tr><th>buffer</th><th>kind</th><th>shape</th><th>bytes</th></tr>"
    return f"<table>{head}{''.join(rows)}</table>"


@html.register
def _(view: MemoryView) -> str:
    peak = view.peak_bytes
    head = _e("\n".join(memory_summary(view)))
    spark = f'<div class="jxp-head" title="live bytes over the schedule">live bytes over the schedule: {_e(sparkline(view.timeline, 100))}</div>'
    table = [
        '<table class="jxp-top"><tr><th>Bytes</th><th>%</th><th>Kind</th><th>Buffer</th><th>Shape</th><th>Defined at</th></tr>'
    ]
    for buffer in view.largest(view.show_top):
        share = buffer.peak_bytes / peak if peak else 0.0
        table.append(
            f'<tr class="jxp-buf" style="{_bg(share, _BYTES_RGB)}">'
            f'<td class="jxp-num">{_e(format_bytes(buffer.bytes))}</td>'
            f'<td class="jxp-num">{_e(format_share(share))}</td><td>{_e(kind_label(buffer))}</td>'
            f"<td>{_e(buffer.name)}</td><td>{_e(buffer.shape)}</td>"
            f"<td>{_e(_buffer_where(buffer))}</td></tr>"
        )
    table.append("</table>")
    row = _memory_row(view)

    def row_of(file: str, number: int) -> tuple[list[str], float, str] | None:
        found = row(file, number)
        if found is None:
            return None
        return found[0], found[1], _buffers_detail(view, file, number)

    blocks = "".join(
        _html_block(b, ["Line #", "Bytes", "%", "Buffers"], row_of, _BYTES_RGB)
        for b in view.source_blocks()
    )
    body = f'<div class="jxp-head">{head}</div>{spark}{"".join(table)}{blocks}'
    return _wrap("memory", body, "6ch 9ch 9ch 9ch minmax(20ch,1fr)")


# ------------------------------------------------------------------------ residuals


def residuals_summary(view: ResidualsView) -> list[str]:
    """The header lines of a residuals display."""
    name = f" of {view.function_name}" if view.function_name else ""
    saved = [r for r in view.residuals if r.argument is None]
    args = [r for r in view.residuals if r.argument is not None]
    if not view.residuals and not view.recomputed:
        return [
            f"js.residuals{name}: no backward pass found (no jax.grad, "
            "value_and_grad or vjp inside); nothing is saved for one"
        ]
    out = [
        f"js.residuals{name}: {plural(len(saved), 'value')} saved for the backward "
        f"pass, {format_bytes(view.bytes)}; {plural(len(args), 'argument')} read "
        "there too"
    ]
    if view.differentiated:
        out.append(
            "(it takes no gradient itself: differentiated here with respect to "
            "every argument, as print_saved_residuals does)"
        )
    if view.recomputed:
        out.append(
            f"recomputed by jax.checkpoint: {plural(len(view.recomputed), 'equation')}, "
            f"~{format_count(view.recompute_flops)} flops "
            f"(policies: {', '.join(view.policies)})"
        )
    for finding in view.findings:
        out.append(f"finding: {finding.message}")
        out.append(f"  fix: {finding.fix}")
    memory = view.memory
    if memory is not None:
        kept = memory.kinds.get("residual", 0)
        out.append(
            f"compiled: {format_bytes(kept)} of residuals live at the memory peak "
            f"of {format_bytes(memory.peak_bytes)}"
        )
    return out


def _residual_cells(line: ResidualLine) -> list[str]:
    recomputed = (
        f"{line.recomputed} ({format_count(line.recompute_flops)} flops)"
        if line.recomputed
        else ""
    )
    return [
        _short(line.file, line.line),
        str(len(line.residuals)) if line.residuals else "",
        format_bytes(line.bytes) if line.residuals else "",
        format_bytes(line.peak_bytes) if line.peak_bytes else "",
        recomputed,
        line.code,
    ]


_RESIDUAL_COLUMNS = ("Line", "Saved", "Bytes", "At peak", "Recomputed", "Line contents")


@rich_renderable.register
def _(view: ResidualsView) -> Any:
    from rich.console import Group
    from rich.table import Table

    parts: list[Any] = [plain("\n".join(residuals_summary(view)))]
    if view.lines:
        table = Table(
            title="saved for the backward pass, by line",
            title_justify="left",
            box=None,
            pad_edge=False,
        )
        for column in _RESIDUAL_COLUMNS:
            numeric = column in ("Saved", "Bytes", "At peak")
            table.add_column(
                column,
                justify="right" if numeric else "left",
                no_wrap=column != "Line contents",
            )
        for line in view.lines[: view.show_top]:
            table.add_row(*(plain(c) for c in _residual_cells(line)))
        parts.append(table)
    return Group(*parts)


@html.register
def _(view: ResidualsView) -> str:
    head = _e("\n".join(residuals_summary(view)))
    rows = "".join(
        "<tr>" + "".join(f"<td>{_e(c)}</td>" for c in _residual_cells(line)) + "</tr>"
        for line in view.lines[: view.show_top]
    )
    columns = "".join(f"<th>{_e(c)}</th>" for c in _RESIDUAL_COLUMNS)
    table = f'<table class="jxp-top"><tr>{columns}</tr>{rows}</table>' if rows else ""
    body = f'<div class="jxp-head">{head}</div>{table}'
    return _wrap("memory", body, "6ch 9ch 9ch 9ch minmax(20ch,1fr)")
