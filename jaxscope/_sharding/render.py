"""Rendering of ``ShardingView`` (device grid, pytree table) and ``ProgramShardingView``.

The grid geometry comes from ``ShardingLayout`` (computed in the core); this module only
draws it: a coloured rich table in a terminal, a CSS grid with hover titles in HTML.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

from jaxscope._display import html, plain, printable, rich_renderable
from jaxscope._format import format_bytes, plural
from jaxscope._hlo.parse import short_op_name
from jaxscope._sharding.array import ShardingView
from jaxscope._sharding.layout import LayoutCell, ShardingLayout
from jaxscope._sharding.mesh import MeshGrid
from jaxscope._sharding.program import ProgramShardingView
from jaxscope._source import short_loc

# Pastel backgrounds, dark text: readable in light and dark notebook themes.
PALETTE = (
    "#a6cee3",
    "#b2df8a",
    "#fb9a99",
    "#fdbf6f",
    "#cab2d6",
    "#ffff99",
    "#8dd3c7",
    "#bebada",
    "#fb8072",
    "#80b1d3",
    "#fdb462",
    "#b3de69",
    "#fccde5",
    "#d9d9d9",
    "#bc80bd",
    "#ccebc5",
    "#ffed6f",
    "#e5c494",
    "#b3b3b3",
    "#66c2a5",
)

MAX_GRID = 32  # tiles per axis drawn; more are elided
MAX_SHARD_ROWS = 16
MAX_OP_ROWS = 60


def _add_row(table: Any, *cells: str) -> None:
    """A table row of user strings: plain text, never rich markup."""
    table.add_row(*(plain(cell) for cell in cells))


def colour(group: int) -> str:
    """The background colour of device group ``group``."""
    return PALETTE[group % len(PALETTE)]


def cell_label(cell: LayoutCell) -> str:
    """``"CPU 0,2,4,6"``; shards of other processes add ``"(proc 1)"``."""
    if not cell.labels:
        return "-"
    kinds = {label.rsplit(" ", 1)[0] for label in cell.labels}
    if len(kinds) == 1:
        text = f"{next(iter(kinds))} " + ",".join(
            label.rsplit(" ", 1)[1] for label in cell.labels
        )
    else:
        text = ",".join(cell.labels)
    if not cell.addressable:
        procs = ",".join(str(p) for p in cell.process_indices)
        text += f" (proc {procs})"
    return text


def cell_title(layout: ShardingLayout, cell: LayoutCell) -> str:
    """The hover text of a cell: devices, index ranges, processes."""
    parts = [f"devices: {', '.join(cell.labels) or '-'}"]
    if layout.row_dim is not None:
        parts.append(f"dim {layout.row_dim}: {cell.rows[0]}:{cell.rows[1]}")
    if layout.col_dim is not None:
        parts.append(f"dim {layout.col_dim}: {cell.cols[0]}:{cell.cols[1]}")
    parts.append(f"process: {', '.join(str(p) for p in cell.process_indices)}")
    if cell.pieces > 1:
        parts.append(f"{cell.pieces} different blocks along the collapsed dimensions")
    elif len(cell.device_ids) > 1:
        parts.append(f"{len(cell.device_ids)} replicas of one block")
    if not cell.addressable:
        parts.append("not addressable from this process")
    return "\n".join(parts)


def header(view: ShardingView) -> str:
    """Two lines: dtype[shape], spec, mesh; then devices, bytes per device, replication."""
    mesh = (
        " x ".join(f"{k}={v}" for k, v in view.mesh.items()) if view.mesh else "no mesh"
    )
    shape = ", ".join(str(d) for d in view.shape or ())
    text = (
        f"{view.dtype}[{shape}]  {view.spec}  mesh: {mesh}\n"
        f"{view.n_devices} device{'s' if view.n_devices != 1 else ''}, "
        f"{format_bytes(view.bytes_per_device)} per device"
    )
    if view.replication > 1:
        text += f", each shard on {plural(view.replication, 'device')}"
    if view.committed is False:
        text += " (uncommitted)"
    if view.memory_kind not in (None, "device"):
        text += f", memory: {view.memory_kind}"
    return text


def dims_note(layout: ShardingLayout) -> str:
    """Which dimensions the grid shows and which it collapses."""
    if not layout.collapsed:
        return ""
    shown = [d for d in (layout.row_dim, layout.col_dim) if d is not None]
    return (
        f"grid: rows = dim {shown[0]}, columns = dim {shown[1]}; dims "
        f"{', '.join(str(d) for d in layout.collapsed)} collapsed "
        "(pick others with v.with_dims(a, b))"
        if len(shown) == 2
        else f"dims {', '.join(str(d) for d in layout.collapsed)} collapsed"
    )


def _elided(edges: tuple[int, ...]) -> list[int]:
    n = len(edges) - 1
    if n <= MAX_GRID:
        return list(range(n))
    half = MAX_GRID // 2
    return [*range(half), -1, *range(n - half, n)]


def _grid_rich(layout: ShardingLayout) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    rows = _elided(layout.row_edges)
    cols = _elided(layout.col_edges)
    labels = [
        printable(cell_label(c)).replace(" (proc", "\n(proc") for c in layout.cells
    ]
    width = max((len(line) for t in labels for line in t.split("\n")), default=3) + 2
    table = Table(show_header=False, show_lines=True, box=box.SQUARE, padding=(0, 0))
    for _ in cols:
        table.add_column(width=width, justify="center", no_wrap=True)
    for r in rows:
        cells = []
        for c in cols:
            if r < 0 or c < 0:
                cells.append(Text("…", justify="center"))
                continue
            cell = layout.cell(r, c)
            style = f"black on {colour(cell.group)}"
            label = labels[r * (len(layout.col_edges) - 1) + c]
            cells.append(Text(label, style=style, justify="center"))
        table.add_row(*cells)
    return table


def _shards_table(view: ShardingView) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in ("device", "process", "index", "shape", "bytes", "replica"):
        table.add_column(name)
    for shard in view.shards[:MAX_SHARD_ROWS]:
        proc = str(shard.process_index) + ("" if shard.addressable else " (remote)")
        _add_row(
            table,
            shard.label,
            proc,
            shard.ranges,
            str(shard.shape),
            format_bytes(shard.bytes),
            str(shard.replica_id),
        )
    if len(view.shards) > MAX_SHARD_ROWS:
        _add_row(table, f"… {len(view.shards) - MAX_SHARD_ROWS} more", *[""] * 5)
    return table


def _tree_table(view: ShardingView) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for name in ("path", "shape", "dtype", "spec", "bytes/device", "replication"):
        table.add_column(name)
    for path, leaf in view.leaves:
        _add_row(
            table,
            path,
            str(list(leaf.shape or ())),
            str(leaf.dtype),
            str(leaf.spec),
            format_bytes(leaf.bytes_per_device),
            f"x{leaf.replication}",
        )
    return table


def device_groups(layout: ShardingLayout | None) -> dict[int, int]:
    """Device id -> the colour group of the first tile it holds."""
    groups: dict[int, int] = {}
    if layout is None:
        return groups
    for cell in layout.cells:
        for device in cell.device_ids:
            groups.setdefault(device, cell.group)
    return groups


def device_processes(view: ShardingView) -> dict[int, int]:
    """Device id -> process index, when the array spans several processes."""
    procs = {s.device_id: s.process_index for s in view.shards}
    return procs if len(set(procs.values())) > 1 else {}


def _device_text(device: int, procs: dict[int, int]) -> str:
    return f"{device} p{procs[device]}" if device in procs else str(device)


def _mesh_rich(
    grid: MeshGrid, groups: dict[int, int], procs: dict[int, int] | None = None
) -> Any:
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    table.add_column("")
    for label in grid.col_labels:
        table.add_column(plain(label), justify="center")
    for label, row in zip(grid.row_labels, grid.rows, strict=True):
        cells = []
        for device in row:
            group = groups.get(device)
            style = f"black on {colour(group)}" if group is not None else ""
            cells.append(Text(f" {_device_text(device, procs or {})} ", style=style))
        table.add_row(plain(label), *cells)
    return Group(plain(f"mesh ({' x '.join(grid.axes)}): device ids", "dim"), table)


def mesh_html(
    grid: MeshGrid, groups: dict[int, int], procs: dict[int, int] | None = None
) -> str:
    """The mesh as a small table of device ids, coloured like the array's tiles."""
    head = "<th></th>" + "".join(f"<th>{_e(c)}</th>" for c in grid.col_labels)
    body = []
    for label, row in zip(grid.row_labels, grid.rows, strict=True):
        tds = []
        for device in row:
            group = groups.get(device)
            style = (
                f' style="background:{colour(group)};color:#111"'
                if group is not None
                else ""
            )
            tds.append(f"<td{style}>{_e(_device_text(device, procs or {}))}</td>")
        body.append(f"<tr><th>{_e(label)}</th>{''.join(tds)}</tr>")
    return (
        f'<div class="jxs-dim">mesh ({_e(" x ".join(grid.axes))}): device ids</div>'
        f'<table class="jxs-mesh"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _placement(view: ShardingView) -> str:
    """Where one array lives: ``mesh: data=4 x model=2`` or ``single device: cpu:0``."""
    if view.mesh:
        return "mesh: " + " x ".join(f"{k}={v}" for k, v in view.mesh.items())
    devices = sorted({(s.platform, s.device_id) for s in view.shards})
    if len(devices) == 1:
        platform, device_id = devices[0]
        return f"single device: {platform}:{device_id}"
    return f"no mesh ({plural(len(devices), 'device')})"


def tree_header(view: ShardingView) -> str:
    """``3 arrays, mesh: data=4 x model=2``; where the leaves differ, each placement."""
    placements = list(dict.fromkeys(_placement(leaf) for _, leaf in view.leaves))
    count = plural(len(view.leaves), "array")
    if len(placements) == 1:
        return f"{count}, {placements[0]}"
    shown = "; ".join(p.removeprefix("mesh: ") for p in placements[:3])
    more = f"; {len(placements) - 3} more" if len(placements) > 3 else ""
    return f"{count}, mesh: mixed ({shown}{more})"


@rich_renderable.register
def _(view: ShardingView) -> Any:
    from rich.console import Group

    if view.is_tree:
        return Group(
            plain(tree_header(view), "bold"),
            _tree_table(view),
        )
    assert view.layout is not None
    parts: list[Any] = [plain(header(view), "bold")]
    note = dims_note(view.layout)
    if note:
        parts.append(plain(note, "dim"))
    parts.append(_grid_rich(view.layout))
    grid = view.mesh_grid
    if grid is not None:
        parts.append(
            _mesh_rich(grid, device_groups(view.layout), device_processes(view))
        )
    parts.append(_shards_table(view))
    return Group(*parts)


def runs_text(runs: int | None) -> str:
    """``"1"``, ``"x5"`` (in a loop of 5), ``"loop"`` (a loop of unknown length)."""
    if runs is None:
        return "loop"
    return "1" if runs == 1 else f"x{runs}"


def axis_lines(view: ProgramShardingView) -> list[str]:
    """``"data: 2 all-reduces, 3.4 KiB"`` per group of mesh axes, heaviest first."""
    rows: list[tuple[int, str]] = []
    for axes, items in view.by_axis.items():
        counts: dict[str, int] = {}
        for c in items:
            counts[c.kind] = counts.get(c.kind, 0) + 1
        total = sum(c.total_bytes for c in items)
        name = " x ".join(axes) if axes else "groups off the mesh"
        kinds = ", ".join(plural(n, kind) for kind, n in counts.items())
        rows.append((total, f"{name}: {kinds}, {format_bytes(total)}"))
    return [text for _, text in sorted(rows, key=lambda r: -r[0])]


def why_lines(view: ProgramShardingView) -> list[str]:
    """One line per collective that has a reason: its kind, then why (and a
    suggestion where one is known)."""
    out: list[str] = []
    for c in view.collectives:
        if c.reason is None:
            continue
        asked = " (asked for)" if c.reason.asked else ""
        line = f"{c.kind}{asked}: {c.reason.text}"
        if c.reason.suggestion:
            line += f"; to avoid it: {c.reason.suggestion}"
        out.append(line)
    return out


def _src(loc: Any) -> str:
    return short_loc(loc) if loc is not None else "-"


@rich_renderable.register
def _(view: ProgramShardingView) -> Any:
    from rich import box
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    mesh = " x ".join(f"{k}={v}" for k, v in view.mesh.items()) if view.mesh else "none"
    parts: list[Any] = [
        plain(
            f"shardings of {view.function_name}: {plural(view.num_devices, 'device')}, "
            f"mesh: {mesh}, {plural(len(view.collectives), 'collective')}"
            + (
                f" moving {format_bytes(view.collective_bytes)} per device"
                if view.collectives
                else ""
            ),
            "bold",
        )
    ]
    grid = view.mesh_grid
    if grid is not None and len(grid.rows) * len(grid.col_labels) <= 64:
        parts.append(_mesh_rich(grid, {}))
    io = Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, title_justify="left"
    )
    io.add_column("")
    io.add_column("path")
    io.add_column("sharding")
    for path, spec in view.inputs:
        _add_row(io, "in", path, spec)
    for path, spec in view.outputs:
        _add_row(io, "out", path, spec)
    parts.append(io)
    if view.collectives:
        parts.append(Text("collectives", style="bold"))
        ct = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for name in ("kind", "bytes/device", "runs", "over", "source", "op"):
            ct.add_column(name)
        for c in view.collectives:
            over = (
                ", ".join(c.axes)
                if c.axes
                else (c.groups_text[:40] if c.groups_text else "-")
            )
            _add_row(
                ct,
                c.kind,
                format_bytes(c.bytes),
                runs_text(c.runs),
                over,
                _src(c.source),
                short_op_name(c.op_name),
            )
        parts.append(ct)
        reasons = why_lines(view)
        if reasons:
            parts.append(Text("why", style="bold"))
            parts.extend(plain("  " + line) for line in reasons)
        parts.append(Text("per source line", style="bold"))
        for row in view.line_summary:
            parts.append(plain("  " + row.text))
        parts.append(Text("per mesh axis", style="bold"))
        parts.extend(plain("  " + line) for line in axis_lines(view))
    else:
        parts.append(Text("no collectives", style="dim"))
    if view.replication:
        parts.append(Text("replicated where a mesh axis could split it", style="bold"))
        parts.extend(plain("  " + f.text) for f in view.replication)
    shown = view.shown_ops
    if view.ops:
        parts.append(plain(f"op shardings ({view.ops_stage})", "bold"))
    if shown:
        ot = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for name in ("op", "opcode", "shape", "per device", "sharding", "source"):
            ot.add_column(name)
        for op in shown[:MAX_OP_ROWS]:
            _add_row(
                ot,
                op.name,
                op.opcode,
                op.shape.split("{")[0],
                view.local_shape(op),
                op.spec or op.sharding,
                _src(op.source),
            )
        if len(shown) > MAX_OP_ROWS:
            _add_row(ot, f"… {len(shown) - MAX_OP_ROWS} more", *[""] * 5)
        parts.append(ot)
    if view.folded_ops:
        parts.append(plain("  " + folded_note(view.folded_ops), "dim"))
    return Group(*parts)


def folded_note(folded: dict[str, int]) -> str:
    """``"+ 96 bookkeeping ops not listed (copy 90, parameter 6): all=True / --all
    lists them"``."""
    n = sum(folded.values())
    counts = ", ".join(f"{opcode} {k}" for opcode, k in folded.items())
    return (
        f"+ {plural(n, 'bookkeeping op')} not listed ({counts}): "
        "all=True / --all lists them"
    )


# ------------------------------------------------------------------------------ HTML

_CSS = (
    "<style>"
    ".jxs-shard{font-family:monospace;font-size:12px}"
    ".jxs-shard .jxs-grid{display:grid;gap:1px;background:#444;border:1px solid #444;"
    "max-width:640px;margin:6px 0}"
    ".jxs-shard .jxs-cell{color:#111;padding:4px 2px;text-align:center;min-height:22px;"
    "overflow:hidden;white-space:nowrap;text-overflow:ellipsis}"
    ".jxs-shard .jxs-remote{background-image:repeating-linear-gradient(45deg,"
    "transparent,transparent 4px,rgba(0,0,0,.12) 4px,rgba(0,0,0,.12) 8px)}"
    ".jxs-shard table{border-collapse:collapse;margin:4px 0}"
    ".jxs-shard td,.jxs-shard th{padding:1px 8px;text-align:left;"
    "border-bottom:1px solid rgba(127,127,127,.3)}"
    ".jxs-shard .jxs-num{text-align:right}"
    ".jxs-shard .jxs-head{font-weight:bold}"
    ".jxs-shard .jxs-dim{opacity:.7}"
    "</style>"
)


def _e(text: Any) -> str:
    return _html.escape(printable(str(text)))


# A number, a size ("1.5 KiB") or a factor ("x2"): a cell of a right-aligned column.
_NUMBER = re.compile(r"x?[\d.,]+(?:\s*[KMGTP]?i?B)?")


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    """Text columns aligned left, columns of numbers right."""
    numeric = [
        any(str(row[i]).strip() for row in rows)
        and all(
            _NUMBER.fullmatch(str(row[i]).strip())
            for row in rows
            if str(row[i]).strip()
        )
        for i in range(len(headers))
    ]
    cls = [' class="jxs-num"' if n else "" for n in numeric]
    head = "".join(f"<th{c}>{_e(h)}</th>" for h, c in zip(headers, cls, strict=True))
    body = "".join(
        "<tr>"
        + "".join(f"<td{c}>{_e(v)}</td>" for v, c in zip(row, cls, strict=True))
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _fr(edges: tuple[int, ...], picks: list[int]) -> str:
    sizes = [edges[i + 1] - edges[i] if i >= 0 else 0 for i in picks]
    total = sum(sizes) or 1
    return " ".join(
        f"{max(0.5, 10 * s / total):.2f}fr" if i >= 0 else "0.5fr"
        for s, i in zip(sizes, picks, strict=True)
    )


def grid_html(layout: ShardingLayout) -> str:
    """The layout as a CSS grid: one coloured div per tile, details on hover."""
    rows = _elided(layout.row_edges)
    cols = _elided(layout.col_edges)
    style = (
        f"grid-template-columns:{_fr(layout.col_edges, cols)};"
        f"grid-template-rows:{' '.join('auto' for _ in rows)}"
    )
    out = [f'<div class="jxs-grid" style="{style}">']
    for r in rows:
        for c in cols:
            if r < 0 or c < 0:
                out.append('<div class="jxs-cell" style="background:#eee">…</div>')
                continue
            cell = layout.cell(r, c)
            cls = "jxs-cell" + ("" if cell.addressable else " jxs-remote")
            out.append(
                f'<div class="{cls}" style="background:{colour(cell.group)}" '
                f'title="{_e(cell_title(layout, cell))}" '
                f'data-devices="{_e(",".join(str(i) for i in cell.device_ids))}">'
                f"{_e(cell_label(cell))}</div>"
            )
    out.append("</div>")
    return "".join(out)


@html.register
def _(view: ShardingView) -> str:
    if view.is_tree:
        rows = [
            [
                path,
                str(list(leaf.shape or ())),
                leaf.dtype,
                leaf.spec,
                format_bytes(leaf.bytes_per_device),
                f"x{leaf.replication}",
            ]
            for path, leaf in view.leaves
        ]
        return (
            f'{_CSS}<div class="jxs-shard"><div class="jxs-head">'
            f"{_e(tree_header(view))}</div>"
            + _table(
                ["path", "shape", "dtype", "spec", "bytes/device", "replication"], rows
            )
            + "</div>"
        )
    assert view.layout is not None
    note = dims_note(view.layout)
    shard_rows = [
        [
            s.label,
            f"{s.process_index}{'' if s.addressable else ' (remote)'}",
            s.ranges,
            str(s.shape),
            format_bytes(s.bytes),
            s.replica_id,
        ]
        for s in view.shards[:MAX_SHARD_ROWS]
    ]
    more = (
        f'<div class="jxs-dim">… {len(view.shards) - MAX_SHARD_ROWS} more shards</div>'
        if len(view.shards) > MAX_SHARD_ROWS
        else ""
    )
    return (
        f'{_CSS}<div class="jxs-shard"><div class="jxs-head">'
        + "<br>".join(_e(line) for line in header(view).split("\n"))
        + "</div>"
        + (f'<div class="jxs-dim">{_e(note)}</div>' if note else "")
        + grid_html(view.layout)
        + (
            mesh_html(
                view.mesh_grid, device_groups(view.layout), device_processes(view)
            )
            if view.mesh_grid is not None
            else ""
        )
        + "<details><summary>shards</summary>"
        + _table(
            ["device", "process", "index", "shape", "bytes", "replica"], shard_rows
        )
        + more
        + "</details></div>"
    )


@html.register
def _(view: ProgramShardingView) -> str:
    mesh = " x ".join(f"{k}={v}" for k, v in view.mesh.items()) if view.mesh else "none"
    out = [
        _CSS,
        '<div class="jxs-shard">',
        f'<div class="jxs-head">shardings of {_e(view.function_name)}: '
        f"{_e(plural(view.num_devices, 'device'))}, mesh: {_e(mesh)}, "
        f"{_e(plural(len(view.collectives), 'collective'))}"
        + (
            f" moving {_e(format_bytes(view.collective_bytes))} per device"
            if view.collectives
            else ""
        )
        + "</div>",
        _table(
            ["", "path", "sharding"],
            [["in", p, s] for p, s in view.inputs]
            + [["out", p, s] for p, s in view.outputs],
        ),
    ]
    grid = view.mesh_grid
    if grid is not None and len(grid.rows) * len(grid.col_labels) <= 64:
        out.insert(3, mesh_html(grid, {}))
    if view.collectives:
        out.append('<div class="jxs-head">collectives</div>')
        out.append(
            _table(
                ["kind", "bytes/device", "runs", "over", "source", "op"],
                [
                    [
                        c.kind,
                        format_bytes(c.bytes),
                        runs_text(c.runs),
                        ", ".join(c.axes) if c.axes else (c.groups_text or "-"),
                        _src(c.source),
                        short_op_name(c.op_name),
                    ]
                    for c in view.collectives
                ],
            )
        )
        reasons = why_lines(view)
        if reasons:
            out.append('<div class="jxs-head">why</div><ul>')
            out.extend(f"<li>{_e(line)}</li>" for line in reasons)
            out.append("</ul>")
        out.append('<div class="jxs-head">per source line</div><ul>')
        out.extend(f"<li>{_e(r.text)}</li>" for r in view.line_summary)
        out.append("</ul>")
        out.append('<div class="jxs-head">per mesh axis</div><ul>')
        out.extend(f"<li>{_e(line)}</li>" for line in axis_lines(view))
        out.append("</ul>")
    else:
        out.append('<div class="jxs-dim">no collectives</div>')
    if view.replication:
        out.append(
            '<div class="jxs-head">replicated where a mesh axis could split it</div><ul>'
        )
        out.extend(f"<li>{_e(f.text)}</li>" for f in view.replication)
        out.append("</ul>")
    shown = view.shown_ops
    if view.ops:
        out.append(
            f"<details><summary>op shardings ({_e(view.ops_stage)}, "
            f"{_e(plural(len(shown), 'op'))})</summary>"
        )
        out.append(
            _table(
                ["op", "opcode", "shape", "per device", "sharding", "source"],
                [
                    [
                        o.name,
                        o.opcode,
                        o.shape.split("{")[0],
                        view.local_shape(o),
                        o.spec or o.sharding,
                        _src(o.source),
                    ]
                    for o in shown[:MAX_OP_ROWS]
                ],
            )
        )
        if view.folded_ops:
            out.append(f'<div class="jxs-dim">{_e(folded_note(view.folded_ops))}</div>')
        out.append("</details>")
    out.append("</div>")
    return "".join(out)
