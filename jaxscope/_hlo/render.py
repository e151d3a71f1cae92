"""Rendering of ``HloView``: coloured text, and Compiler-Explorer style HTML.

Text: the stage's text with opcodes, names and shapes coloured and each op line
followed by ``# file:line``; with ``show_cost`` a cost/memory table.

HTML: the user's source lines on the left, the HLO on the right. Lines of the same
source share a tint; hovering a source line highlights its ops and hovering an op
highlights its source line (pure CSS ``:has()``, so it works where scripts do not
run); a click scrolls the other side to the match (a few lines of inline JS).
Computations are collapsible ``<details>``; fused computations start folded in long
modules. Every string from the program or the user is escaped.
"""

from __future__ import annotations

import hashlib
import html as _html
import itertools
import re
from typing import Any

from jaxscope._bundles import inline_script
from jaxscope._display import html, plain, printable, rich_renderable
from jaxscope._format import plural
from jaxscope._hlo.outline import (
    module_title,
    outline,
    rows,
    short_header,
    without_metadata,
)
from jaxscope._hlo.parse import COMPUTATION_HEADER, HLO_SECTIONS, instruction_parts
from jaxscope._hlo.stablehlo import FUNC_HEADER
from jaxscope._hlo.view import HloView
from jaxscope._records import OpInfo, SourceLoc
from jaxscope._source import full_loc, short_loc

# Displays never flood a notebook or terminal; `.text` always has everything.
DISPLAY_MAX_LINES = 5000
# Fused computations start folded in the HTML of modules longer than this.
FOLD_FUSED_OVER_LINES = 300
# Per-source-line highlight rules are emitted for at most this many lines.
MAX_CSS_KEYS = 2000
_PALETTE = 12

_MLIR_OP = re.compile(r"^(\s*)((?:%[\w#:$.\-]+(?:, )?)+)( = )(\"?[\w.]+\"?)(.*)$")
_MLIR_NO_RESULT = re.compile(r"^(\s*)([a-z_]+\.[\w.]+|return)(\b.*)$")

_ids = itertools.count()


def _stage_title(view: HloView) -> str:
    title = {"stablehlo": "StableHLO", "hlo": "HLO", "optimized": "optimized HLO"}
    return title.get(view.stage, view.stage)


def _display_lines(view: HloView) -> tuple[list[str], int]:
    lines = view.text.splitlines()
    hidden = max(0, len(lines) - DISPLAY_MAX_LINES)
    return lines[:DISPLAY_MAX_LINES], hidden


def _ops_by_line(view: HloView) -> dict[int, OpInfo]:
    return {
        line: op for op, line in zip(view.ops, view.op_lines, strict=True) if line >= 0
    }


def _summary(view: HloView) -> str:
    ops = view.ops
    mapped = sum(1 for op in ops if op.source is not None)
    name = f" of {view.function_name}" if view.function_name else ""
    return (
        f"{_stage_title(view)}{name}: {plural(len(ops), 'op')}, {mapped} mapped to "
        f"{plural(len(view.by_line), 'source line')}"
    )


def _fmt_number(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4g}"


def cost_rows(view: HloView) -> list[tuple[str, str]]:
    """``(label, value)`` rows of the cost/memory table."""
    rows: list[tuple[str, str]] = []
    cost = view.cost
    if cost is None:
        rows.append(("cost", "not available on this backend"))
    else:
        for key in ("flops", "transcendentals", "bytes_accessed"):
            if key in cost:
                rows.append((key, _fmt_number(cost[key])))
        rows += _loop_rows(view)
    memory = view.memory
    if memory is None:
        rows.append(("memory", "not available on this backend"))
    else:
        for key, value in memory.items():
            rows.append((key, _fmt_number(value)))
    return rows


def _loop_rows(view: HloView) -> list[tuple[str, str]]:
    """The caveat that XLA counts a loop body once, and the flops estimate with
    each body counted per iteration where the trip count is static."""
    loops = view.loops
    if not loops:
        return []
    counts = ", ".join(
        f"{loop.primitive} x{loop.trip_count}"
        if loop.trip_count is not None
        else f"{loop.primitive} with no static trip count"
        for loop in loops
    )
    rows = [
        (
            "note",
            f"XLA counts each loop body once: {plural(len(loops), 'loop')} ({counts})",
        )
    ]
    estimate = view.flops_estimate
    if estimate is not None:
        rows.append(("flops x trip counts", f"~{_fmt_number(estimate)} (estimate)"))
    return rows


# --------------------------------------------------------------------------- text


def _spans(line: str, stage: str) -> list[tuple[str, str]]:
    """``line`` cut into ``(text, style)`` pieces: names, opcodes, shapes, metadata."""
    if stage == "stablehlo":
        match = _MLIR_OP.match(line)
        if match is not None:
            indent, names, eq, opcode, rest = match.groups()
            return [
                (indent, ""),
                (names, "cyan"),
                (eq, ""),
                (opcode, "bold magenta"),
                (rest, ""),
            ]
        match = _MLIR_NO_RESULT.match(line)
        if match is not None:
            indent, opcode, rest = match.groups()
            return [(indent, ""), (opcode, "bold magenta"), (rest, "")]
        return [(line, "dim" if line.startswith("#loc") else "")]
    parts = instruction_parts(line)
    if parts is None:
        return [(line, "bold" if COMPUTATION_HEADER.match(line) else "")]
    indent, root, name, eq, shape, space, opcode, rest = parts
    spans = [
        (indent, ""),
        (root or "", "bold"),
        (name, "cyan"),
        (eq, ""),
        (shape, "green"),
        (space, ""),
        (opcode, "bold magenta"),
    ]
    meta = rest.find(", metadata={")
    if meta >= 0:
        spans += [(rest[:meta], ""), (rest[meta:], "dim")]
    else:
        spans.append((rest, ""))
    return spans


class _StyledLines:
    """Many styled lines, hard-wrapped at the console width.

    A rich ``Text`` of thousands of lines spends seconds in word wrapping; HLO has
    few useful word breaks, so lines are cut at the width and yielded as segments.
    """

    def __init__(self, lines: list[list[tuple[str, str]]]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.segment import Segment
        from rich.style import Style

        width = max(1, options.max_width)
        styles: dict[str, Any] = {}
        newline = Segment.line()
        for spans in self.lines:
            column = 0
            for piece, style_name in spans:
                if not piece:
                    continue
                style = styles.get(style_name)
                if style is None:
                    style = styles[style_name] = (
                        Style.parse(style_name) if style_name else None
                    )
                while piece:
                    room = width - column
                    if room <= 0:
                        yield newline
                        column, room = 0, width
                    chunk, piece = piece[:room], piece[room:]
                    yield Segment(chunk, style)
                    column += len(chunk)
            yield newline

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        longest = max(
            (sum(len(piece) for piece, _ in spans) for spans in self.lines), default=0
        )
        return Measurement(1, min(longest, options.max_width))


def cost_table(view: HloView) -> Any:
    """A rich table of cost and memory analysis."""
    from rich.table import Table

    table = Table(title="cost and memory", show_header=False, title_justify="left")
    table.add_column("what")
    table.add_column("value", justify="right")
    for label, value in cost_rows(view):
        table.add_row(plain(label), plain(value))
    return table


def _folded_note(n_folded: int) -> str:
    return (
        f"{n_folded} fused computations folded; view.expand_fused = True "
        "(%hlo --all) shows them"
    )


def _hlo_styled(view: HloView) -> list[list[tuple[str, str]]]:
    """The module as display rows: ENTRY first, fused computations folded (or
    nested under their fusion op), op metadata shown as the source column."""
    lines = view.text.splitlines()
    layout = outline(lines)
    at_line = _ops_by_line(view)
    styled: list[list[tuple[str, str]]] = []
    if layout.module_line >= 0:
        styled.append([(printable(module_title(lines[layout.module_line])), "bold")])
    n_folded = 0
    shown = 0
    headers = {c.header for c in layout.computations.values()}
    all_rows = rows(layout, expand_fused=view.expand_fused)
    for position, row in enumerate(all_rows):
        if shown >= DISPLAY_MAX_LINES:
            left = sum(1 for r in all_rows[position:] if r.kind in ("line", "fused"))
            styled.append(
                [(f"... {left} more lines not shown (view.text has them all)", "dim")]
            )
            break
        pad = "    " * row.depth
        if row.kind == "fused":
            n_folded += 1
            shown += 1
            styled.append(
                [(pad, ""), (printable(f"  {row.name}: {row.count} ops"), "dim")]
            )
            continue
        if row.kind != "line":
            continue
        shown += 1
        line = lines[row.index]
        if row.index in headers:
            line = short_header(line)
        if row.depth == 0 and not line.startswith((" ", "}")) and styled:
            styled.append([])
        spans = [(pad, ""), *_spans(without_metadata(line), view.stage)]
        op = at_line.get(row.index)
        if op is not None and op.source is not None:
            spans.append((f"  # {short_loc(op.source)}", "yellow"))
        styled.append([(printable(piece), style) for piece, style in spans])
    if n_folded:
        styled.append([(_folded_note(n_folded), "dim")])
    return styled


@rich_renderable.register
def _(view: HloView) -> Any:
    from rich.console import Group

    if view.stage == "stablehlo":
        lines, hidden = _display_lines(view)
        at_line = _ops_by_line(view)
        styled: list[list[tuple[str, str]]] = []
        for index, line in enumerate(lines):
            spans = _spans(line, view.stage)
            op = at_line.get(index)
            if op is not None and op.source is not None:
                spans.append((f"  # {short_loc(op.source)}", "yellow"))
            styled.append([(printable(piece), style) for piece, style in spans])
        if hidden:
            styled.append(
                [(f"... {hidden} more lines not shown (view.text has them all)", "dim")]
            )
    else:
        styled = _hlo_styled(view)
    body = _StyledLines(styled)
    parts: list[Any] = [plain(_summary(view), "bold"), body]
    if view.show_cost:
        parts.append(cost_table(view))
    return Group(*parts)


# --------------------------------------------------------------------------- HTML

_CSS = """
{root}{{font-family:var(--jp-code-font-family,monospace);font-size:12px;line-height:1.45}}
{root} .jxh-head{{font-weight:bold;margin:2px 0 6px}}
{root} .jxh-panes{{display:flex;gap:8px;align-items:flex-start}}
{root} .jxh-src,{root} .jxh-code{{max-height:480px;overflow:auto;border:1px solid rgba(128,128,128,.35);border-radius:3px}}
{root} .jxh-src{{flex:0 0 auto;max-width:38%;min-width:14em}}
{root} .jxh-code{{flex:1 1 auto;min-width:0}}
{root} .jxh-l,{root} .jxh-s{{white-space:pre;min-height:1.45em;padding:0 6px;border-left:3px solid transparent;cursor:default}}
{root} .jxh-s{{cursor:pointer;overflow:hidden;text-overflow:ellipsis}}
{root} .jxh-op{{cursor:pointer}}
{root} .jxh-at{{opacity:.65;display:inline-block;width:15ch;overflow:hidden;text-overflow:ellipsis;vertical-align:bottom;margin-right:1ch}}
{root} .jxh-loc{{opacity:.75}}
{root} .jxh-n{{opacity:.6}}
{root} .jxh-meta{{opacity:.55}}
{root} .jxh-opc{{font-weight:bold;color:#a626a4}}
{root} .jxh-name{{color:#0184bc}}
{root} .jxh-shape{{color:#50a14f}}
{root} details.jxh-comp>summary{{white-space:pre;padding:0 6px;font-weight:bold;cursor:pointer}}
{root} .jxh-note{{opacity:.7;font-style:italic;padding:2px 6px}}
{root} table.jxh-cost{{border-collapse:collapse;margin:0 0 6px}}
{root} table.jxh-cost td{{padding:1px 10px;border-bottom:1px solid rgba(128,128,128,.25)}}
{root} table.jxh-cost td:last-child{{text-align:right}}
{root} .jxh-hit{{outline:1px solid rgba(255,140,0,.9);background:rgba(255,165,0,.35)!important}}
"""

_TINTS = [
    "rgba(31,119,180,.13)",
    "rgba(255,127,14,.13)",
    "rgba(44,160,44,.13)",
    "rgba(214,39,40,.12)",
    "rgba(148,103,189,.13)",
    "rgba(140,86,75,.13)",
    "rgba(227,119,194,.13)",
    "rgba(127,127,127,.13)",
    "rgba(188,189,34,.15)",
    "rgba(23,190,207,.13)",
    "rgba(255,215,0,.16)",
    "rgba(0,128,128,.13)",
]


def _short(loc: Any) -> str:
    """``model.py:12``-style location (the full path is in the line's title)."""
    return short_loc(loc)


def _e(text: str) -> str:
    return _html.escape(printable(text), quote=True)


def _html_line(line: str, stage: str) -> str:
    if stage != "stablehlo":
        parts = instruction_parts(line)
        if parts is not None:
            indent, root, name, eq, shape, space, opcode, rest = parts
            meta = rest.find(", metadata={")
            tail = (
                _e(rest[:meta]) + f'<span class="jxh-meta">{_e(rest[meta:])}</span>'
                if meta >= 0
                else _e(rest)
            )
            return (
                f'{_e(indent)}{_e(root or "")}<span class="jxh-name">{_e(name)}</span>'
                f'{_e(eq)}<span class="jxh-shape">{_e(shape)}</span>{_e(space)}'
                f'<span class="jxh-opc">{_e(opcode)}</span>{tail}'
            )
        return _e(line)
    match = _MLIR_OP.match(line)
    if match is not None:
        indent, names, eq, opcode, rest = match.groups()
        return (
            f'{_e(indent)}<span class="jxh-name">{_e(names)}</span>{_e(eq)}'
            f'<span class="jxh-opc">{_e(opcode)}</span>{_e(rest)}'
        )
    return _e(line)


def _is_block_start(line: str, stage: str) -> str | None:
    """The computation name if ``line`` opens a computation / function block."""
    if stage == "stablehlo":
        match = FUNC_HEADER.match(line)
        return match.group(1) if match is not None else None
    if line[:1] not in (" ", "") and line.rstrip().endswith("{"):
        match = COMPUTATION_HEADER.match(line)
        return match.group(2) if match is not None else None
    return None


def _cost_html(view: HloView) -> str:
    rows = "".join(
        f"<tr><td>{_e(label)}</td><td>{_e(value)}</td></tr>"
        for label, value in cost_rows(view)
    )
    return f'<table class="jxh-cost">{rows}</table>'


Keys = dict[tuple[str, int], int]  # source line -> its number among the shown ones


def _source_keys(at_line: dict[int, OpInfo]) -> Keys:
    """Each source line of the displayed ops, numbered in order of first display."""
    keys: Keys = {}
    for index in sorted(at_line):
        op = at_line[index]
        if op.source is not None and op.source.key not in keys:
            keys[op.source.key] = len(keys)
    return keys


def _source_pane(view: HloView, at_line: dict[int, OpInfo], keys: Keys) -> list[str]:
    """Every source line the displayed ops come from, in source order."""
    counts: dict[tuple[str, int], int] = {}
    functions: dict[tuple[str, int], str | None] = {}
    for op in at_line.values():
        if op.source is not None:
            counts[op.source.key] = counts.get(op.source.key, 0) + 1
            functions[op.source.key] = op.source.function
    rows: list[str] = []
    for key in sorted(keys, key=lambda k: (k[0], k[1])):
        k = keys[key]
        file, line = key
        code = view.source_line(file, line)
        function = functions.get(key) or ""
        title = f"{file}:{line}" + (f" in {function}" if function else "")
        rows.append(
            f'<div class="jxh-s" data-k="{k}" style="background:{_TINTS[k % _PALETTE]}" '
            f'title="{_e(title)}"><span class="jxh-loc">{_e(_short(SourceLoc(file=file, line=line)))}</span> '
            f'{_e(code)} <span class="jxh-n">({counts.get(key, 0)} ops)</span></div>'
        )
    if not rows:
        rows.append('<div class="jxh-note">no op carries a source line</div>')
    return rows


def _code_line(line: str, op: OpInfo | None, keys: Keys, stage: str) -> str:
    content = _html_line(line, stage)
    if op is None or op.source is None:
        return f'<div class="jxh-l"><span class="jxh-at"></span>{content}</div>'
    k = keys[op.source.key]
    fusion = f" (in fusion {op.fusion})" if op.fusion else ""
    title = f"{full_loc(op.source)}{fusion}" + (f" {op.op_name}" if op.op_name else "")
    return (
        f'<div class="jxh-l jxh-op" data-k="{k}" '
        f'style="background:{_TINTS[k % _PALETTE]}" title="{_e(title)}">'
        f'<span class="jxh-at">{_e(_short(op.source))}</span>{content}</div>'
    )


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _code_pane(
    view: HloView, lines: list[str], at_line: dict[int, OpInfo], keys: Keys
) -> list[str]:
    """The module's lines, computations (and the source tables) as ``<details>``."""
    fused = {op.computation for op in view.ops if op.fusion is not None}
    fold_fused = len(lines) > FOLD_FUSED_OVER_LINES
    out: list[str] = []
    block_indent: str | None = None
    in_tables = False
    for index, line in enumerate(lines):
        name = _is_block_start(line, view.stage) if block_indent is None else None
        if block_indent is None and not in_tables and line in HLO_SECTIONS:
            in_tables = True
            out.append(
                '<details class="jxh-comp"><summary>source tables ('
                + ", ".join(HLO_SECTIONS)
                + ")</summary>"
            )
        if in_tables and name is not None:
            in_tables = False
            out.append("</details>")
        if name is not None:
            block_indent = _indent(line)
            folded = fold_fused and name in fused
            out.append(
                f'<details class="jxh-comp"{"" if folded else " open"}>'
                f"<summary>{_e(line)}</summary>"
            )
            continue
        out.append(_code_line(line, at_line.get(index), keys, view.stage))
        if (
            block_indent is not None
            and line.strip().startswith("}")
            and _indent(line) == block_indent
        ):
            out.append("</details>")
            block_indent = None
    if block_indent is not None or in_tables:
        out.append("</details>")
    return out


def _hlo_code_pane(
    view: HloView, at_line: dict[int, OpInfo], keys: Keys
) -> tuple[list[str], int]:
    """``(parts, hidden)``: the ENTRY computation first, each fused computation a
    ``<details>`` under its fusion op, metadata shown as the source column; the
    top-level lines are capped at ``DISPLAY_MAX_LINES`` and fused bodies get what
    is left of that budget. ``hidden`` counts the lines left out."""
    lines = view.text.splitlines()
    layout = outline(lines)
    all_rows = rows(layout, expand_fused=True)
    headers = {c.header for c in layout.computations.values()}
    ends = {c.end for c in layout.computations.values()}
    entries = {c.header for c in layout.computations.values() if c.entry}
    top_lines = sum(1 for r in all_rows if r.kind == "line" and r.depth == 0)
    fused_budget = max(0, DISPLAY_MAX_LINES - top_lines)
    fold = len(lines) > FOLD_FUSED_OVER_LINES
    out: list[str] = []
    if layout.module_line >= 0:
        title = module_title(lines[layout.module_line])
        out.append(f'<div class="jxh-l" title="{_e(lines[layout.module_line])}">')
        out.append(f'<span class="jxh-at"></span>{_e(title)}</div>')
    shown = hidden = 0
    skipping: str | None = None
    for row in all_rows:
        if skipping is not None:
            if row.kind == "close" and row.name == skipping:
                skipping = None
            continue
        if row.kind == "open":
            pad = "    " * row.depth
            if row.count + 2 > fused_budget:
                out.append(
                    f'<div class="jxh-note">{_e(pad)}{_e(row.name)}: {row.count} ops '
                    "(not shown here; view.text has them)</div>"
                )
                skipping = row.name
                continue
            fused_budget -= row.count + 2
            out.append(
                f'<details class="jxh-comp jxh-fused"{"" if fold else " open"}>'
                f"<summary>{_e(pad)}{_e(row.name)}: {row.count} ops</summary>"
            )
            continue
        if row.kind == "close":
            out.append("</details>")
            continue
        if row.kind != "line":
            continue
        if row.depth == 0:
            if shown >= DISPLAY_MAX_LINES:
                hidden += 1
                continue
            shown += 1
        line = lines[row.index]
        if row.depth == 0 and row.index in headers:
            is_open = row.index in entries or not fold
            out.append(
                f'<details class="jxh-comp"{" open" if is_open else ""}>'
                f'<summary title="{_e(line)}">{_e(short_header(line))}</summary>'
            )
            continue
        pad = "    " * row.depth
        out.append(
            _code_line(
                pad + without_metadata(line), at_line.get(row.index), keys, "hlo"
            )
        )
        if row.depth == 0 and row.index in ends:
            out.append("</details>")
    if hidden:
        out.append("</details>")  # the computation cut short
    return out, hidden


def _style(root: str, n_keys: int) -> str:
    """The CSS of one display: the layout, and a hover rule per source line."""
    rules = [_CSS.format(root=root)]
    for k in range(min(n_keys, MAX_CSS_KEYS)):
        rules.append(
            f'{root}:has([data-k="{k}"]:hover) [data-k="{k}"]'
            "{outline:1px solid rgba(255,140,0,.9);background:rgba(255,165,0,.35)!important}"
        )
    return "".join(rules)


@html.register
def _(view: HloView) -> str:
    at_line = _ops_by_line(view)
    if view.stage == "stablehlo":
        lines, hidden = _display_lines(view)
        at_line = {i: op for i, op in at_line.items() if i < len(lines)}
        keys = _source_keys(at_line)
        code = _code_pane(view, lines, at_line, keys)
    else:
        keys = _source_keys(at_line)
        code, hidden = _hlo_code_pane(view, at_line, keys)
    digest = hashlib.sha1(f"{view.stage}\n{view.text}".encode()).hexdigest()[:10]
    rid = f"jxh-{digest}-{next(_ids)}"
    if hidden:
        code.append(
            f'<div class="jxh-note">... {hidden} more lines not shown '
            "(view.text has them all)</div>"
        )
    cost = _cost_html(view) if view.show_cost else ""
    return (
        f'<div class="jaxscope-hlo" id="{rid}"><style>{_style(f"#{rid}", len(keys))}</style>'
        f'<div class="jxh-head">{_e(_summary(view))}</div>{cost}'
        f'<div class="jxh-panes"><div class="jxh-src">{"".join(_source_pane(view, at_line, keys))}</div>'
        f'<div class="jxh-code">{"".join(code)}</div></div>'
        f"<script>{inline_script('hlo', rid)}</script></div>"
    )
