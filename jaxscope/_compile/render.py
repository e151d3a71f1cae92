# pyright: strict
"""Text (``%lprun``-style table and sorted summary) and HTML (source shaded by
compile cost, ``cython -a`` style) for ``CompileProfile`` and ``CellCompiles``."""

from __future__ import annotations

import itertools
from typing import Any

from jaxscope._compile.cell import CellCompiles
from jaxscope._compile.records import CompileProfile, LineCompileCost
from jaxscope._display import escape, html, plain, rich_renderable
from jaxscope._format import format_bytes, plural
from jaxscope._paths import short_path
from jaxscope._profile.source import SourceBlock, source_blocks
from jaxscope._profile.text import format_seconds, format_share, shade

_COLUMNS = ["Line #", "Eqns", "Cum eqns", "HLO ops", "Const", "Trace", "Compile~"]
_RGB = (230, 80, 60)
_ids = itertools.count()


def summary_lines(view: CompileProfile) -> list[str]:
    """The header and the sorted summary, as plain lines."""
    s, t = view.stages, view.totals
    out = [
        f"Compile profile of {view.function}: {format_seconds(s.total)} cold "
        f"(trace {format_seconds(s.trace)}, lower {format_seconds(s.lower)}, "
        f"XLA compile {format_seconds(s.compile)})",
        f"{t.eqns} jaxpr equations, {t.stablehlo_ops} StableHLO ops, {t.hlo_ops} "
        f"optimized-HLO ops, {format_bytes(t.constant_bytes)} of embedded constants",
        f"trace time per line: {view.trace_sampling} ({view.trace_samples} samples); "
        "Compile~ is an estimate (XLA's time apportioned by optimized-HLO ops)",
    ]
    if view.compiles_so_far:
        out.append(
            f"{view.function} had compiled {plural(view.compiles_so_far, 'program')} "
            "in this process before this profile (its jit cache; left as it was)"
        )
    if view.diagnoses:
        out.append("")
        out.append("Diagnoses:")
        for d in view.diagnoses:
            out.append(f"  [{d.kind}] {d}")
    nested = [f for f in view.functions if f.name]
    if nested:
        out.append("")
        out.append("Jitted functions inside (each body counted once):")
        for f in nested[: view.show_top]:
            where = f" called at {f.called_at}" if f.called_at else ""
            out.append(f"  {f.name}: {f.eqns} eqns{where}")
    top = [c for c in view.top(view.show_top) if c.eqns or c.hlo_ops]
    if top:
        out.append("")
        out.append(f"Top lines by equations ({len(top)} of {len(view.lines)}):")
        for c in top:
            out.append(f"  {_line_summary(c, view)}")
    return out


def _line_summary(c: LineCompileCost, view: CompileProfile) -> str:
    share = c.eqns / view.totals.eqns if view.totals.eqns else 0.0
    marks = f" [{', '.join(c.bodies)}]" if c.bodies else ""
    return (
        f"{format_share(share):>6} {c.eqns:>7} eqns {c.hlo_ops:>6} HLO "
        f"{format_seconds(c.trace_seconds):>9} trace  {c.source}  "
        f"{c.code}{marks}"
    )


def _cells(c: LineCompileCost) -> list[str]:
    return [
        str(c.eqns),
        str(c.eqns_cumulative),
        str(c.hlo_ops),
        format_bytes(c.constant_bytes) if c.constant_bytes else "",
        format_seconds(c.trace_seconds) if c.trace_seconds else "",
        format_seconds(c.compile_seconds_estimate)
        if c.compile_seconds_estimate
        else "",
    ]


def _blocks(view: CompileProfile) -> list[SourceBlock]:
    keys = [c.source.key for c in view.top(40) if c.source and (c.eqns or c.hlo_ops)]
    return source_blocks(keys)


def _share(view: CompileProfile, c: LineCompileCost) -> float:
    return c.eqns_cumulative / view.totals.eqns if view.totals.eqns else 0.0


@rich_renderable.register
def _(view: CompileProfile) -> Any:
    from rich.console import Group
    from rich.table import Table

    parts: list[Any] = [plain("\n".join(summary_lines(view)))]
    by_line = view.by_line
    for block in _blocks(view):
        title = short_path(block.file) + (
            f" — {block.function}" if block.function else ""
        )
        table = Table(
            title=plain(title), title_justify="left", box=None, pad_edge=False
        )
        for column in _COLUMNS:
            table.add_column(
                column, justify="right", no_wrap=True, min_width=max(len(column), 7)
            )
        table.add_column("Line contents", no_wrap=True, overflow="ellipsis", ratio=1)
        for number, text in block.rows:
            c = by_line.get((block.file, number))
            cells = _cells(c) if c else [""] * (len(_COLUMNS) - 1)
            style = ""
            if c is not None:
                strength = shade(_share(view, c) if view.totals.eqns else 0.0)
                if strength > 0:
                    r, g, b = (int(255 - (255 - v) * strength) for v in _RGB)
                    style = f"black on rgb({r},{g},{b})"
            table.add_row(str(number), *cells, plain(text), style=style)
        parts.append(plain(""))
        parts.append(table)
    return Group(*parts)


def _bg(share: float) -> str:
    r, g, b = _RGB
    return f"background:rgba({r},{g},{b},{shade(share) * 0.85:.3f})"


def _detail(view: CompileProfile, c: LineCompileCost) -> str:
    prims = ", ".join(f"{p} x{n}" for p, n in c.primitives)
    parts = [
        f"<div>{c.eqns} equations here ({c.eqns_cumulative} with its callees)"
        + (
            f", {c.body_eqns} in {escape(', '.join(c.bodies))} (counted once)"
            if c.bodies
            else ""
        )
        + f"; {c.stablehlo_ops} StableHLO ops; {c.hlo_ops} optimized-HLO ops"
        + "</div>",
        f"<div>primitives: {escape(prims)}</div>" if prims else "",
        f"<div>optimized HLO: {escape(', '.join(f'{o} x{n}' for o, n in c.hlo_opcodes))}"
        "</div>"
        if c.hlo_opcodes
        else "",
        f"<div>trace {escape(format_seconds(c.trace_seconds))} here, "
        f"{escape(format_seconds(c.trace_seconds_cumulative))} with callees; "
        f"XLA compile ≈ {escape(format_seconds(c.compile_seconds_estimate))} "
        "(estimate)</div>",
    ]
    if c.constant_bytes:
        parts.append(
            f"<div>embedded constants: {escape(format_bytes(c.constant_bytes))}</div>"
        )
    for d in view.diagnoses:
        if (
            d.source is not None
            and c.source is not None
            and d.source.key == c.source.key
        ):
            parts.append(
                f'<div class="jxc-diag"><b>{escape(d.kind)}</b>: {escape(d.message)}'
                f"<br>fix: <code>{escape(d.fix)}</code></div>"
            )
    library = [f for f in c.frames if c.source is None or f.key != c.source.key]
    if library:
        stack = " ← ".join(escape(str(f)) for f in library[:6])
        parts.append(f"<div>through: {stack}</div>")
    return "".join(parts)


_CSS = """
{root} {{font-family:var(--jp-code-font-family,monospace);font-size:12px}}
{root} .jxc-row,{root} .jxc-hdr,{root} .jxc-cold {{display:grid;
grid-template-columns:6ch repeat(6,9ch) minmax(20ch,1fr);white-space:pre}}
{root} .jxc-row {{cursor:pointer}}
{root} .jxc-c {{text-align:right;padding-right:1ch}}
{root} .jxc-title {{font-weight:bold;margin-top:8px}}
{root} .jxc-detail {{margin:2px 0 6px 6ch;padding:4px;border-left:3px solid #e65;
white-space:normal}}
{root} .jxc-diag {{color:#a30}}
{root} pre {{white-space:pre-wrap;margin:0 0 6px 0}}
"""


@html.register
def _(view: CompileProfile) -> str:
    root = f"jxc-{next(_ids)}"
    head = escape("\n".join(summary_lines(view)))
    body = [f"<pre>{head}</pre>"]
    by_line = view.by_line
    for block in _blocks(view):
        title = escape(short_path(block.file)) + (
            f" — {escape(block.function)}" if block.function else ""
        )
        names = "".join(f'<span class="jxc-c">{escape(h)}</span>' for h in _COLUMNS)
        body.append(
            f'<div class="jxc-title" title="{escape(block.file)}">{title}</div>'
            f'<div class="jxc-hdr">{names}<span>Line contents</span></div>'
        )
        for number, text in block.rows:
            c = by_line.get((block.file, number))
            if c is None:
                empty = '<span class="jxc-c"></span>' * (len(_COLUMNS) - 1)
                body.append(
                    f'<div class="jxc-cold"><span class="jxc-c">{number}</span>'
                    f"{empty}<span>{escape(text)}</span></div>"
                )
                continue
            spans = "".join(
                f'<span class="jxc-c">{escape(x)}</span>' for x in _cells(c)
            )
            body.append(
                f'<details data-line="{number}"><summary class="jxc-row" '
                f'style="{_bg(_share(view, c))}"><span class="jxc-c">{number}</span>'
                f"{spans}<span>{escape(text)}</span></summary>"
                f'<div class="jxc-detail">{_detail(view, c)}</div></details>'
            )
    css = _CSS.format(root=f"#{root}")
    return (
        f'<div class="jaxscope-compile" id="{root}"><style>{css}</style>'
        f"{''.join(body)}</div>"
    )


# ----------------------------------------------------------------- %%jaxcompile


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def cell_lines(view: CellCompiles) -> list[str]:
    """The cell's compiles as plain lines: totals, per function, per line."""
    out = [
        f"This cell compiled {_times(view.compiles)} for "
        f"{format_seconds(view.compile_seconds)} "
        f"({view.eager_compiles} of them eager ops outside any jit; "
        f"{view.persistent_cache_hits} persistent-cache hits)"
    ]
    if view.functions:
        out.append("")
        out.append("By function:")
        for f in view.functions:
            run = f", ran {format_seconds(f.run_seconds)}" if f.run_seconds else ""
            where = f"  at {f.call_site}" if f.call_site else ""
            out.append(
                f"  {f.function}: compiled {_times(f.compiles)} for "
                f"{format_seconds(f.compile_seconds)}{run}{where}"
            )
    if view.lines:
        out.append("")
        out.append("By line:")
        for line in view.lines:
            out.append(
                f"  {format_seconds(line.seconds):>9} {plural(line.compiles, 'compile'):>11}  "
                f"{line.source}  {line.code}"
            )
    if view.diagnoses:
        out.append("")
        out.append("Diagnoses:")
        for d in view.diagnoses:
            out.append(f"  [{d.kind}] {d}")
    if not view.compiles:
        out.append("(nothing compiled: every call hit a cache)")
    return out


@rich_renderable.register
def _(view: CellCompiles) -> Any:
    return plain("\n".join(cell_lines(view)))


def _table(caption: str, head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows
    )
    return (
        f"<table><caption>{escape(caption)}</caption>"
        f"<thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"
    )


@html.register
def _(view: CellCompiles) -> str:
    head, *_ = cell_lines(view)
    parts = [f'<div class="jaxscope-compile"><p>{escape(head)}</p>']
    if view.functions:
        rows = [
            [
                f.function,
                str(f.compiles),
                format_seconds(f.compile_seconds),
                format_seconds(f.run_seconds) if f.run_seconds else "",
                str(f.call_site or ""),
            ]
            for f in view.functions
        ]
        head_row = ["function", "compiles", "compile time", "ran", "called at"]
        parts.append(_table("By function", head_row, rows))
    if view.lines:
        rows = [
            [
                str(x.source),
                str(x.compiles),
                str(x.eager),
                format_seconds(x.seconds),
                x.code,
            ]
            for x in view.lines
        ]
        head_row = ["line", "compiles", "eager", "compile time", "code"]
        parts.append(_table("By line", head_row, rows))
    if view.diagnoses:
        items = "".join(f"<li>{escape(f'[{d.kind}] {d}')}</li>" for d in view.diagnoses)
        parts.append(f"<p>Diagnoses:</p><ul>{items}</ul>")
    parts.append("</div>")
    return "".join(parts)


__all__ = ["cell_lines", "summary_lines"]
