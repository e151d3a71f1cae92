"""How displays lay out an HLO module: the ENTRY computation first, each fused
computation under the fusion op that calls it, the source tables left out.

Pure data over the module's lines (indices into ``HloView.text``), shared by the
terminal and the HTML renderers; ``.text`` itself is never changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxscope._hlo.parse import (
    COMPUTATION_HEADER,
    HLO_SECTIONS,
    balanced,
    parse_instruction,
    split_top_level,
)

_METADATA = ", metadata={"


@dataclass(slots=True)
class Computation:
    """One computation: its header line, instruction lines and closing ``}`` line."""

    name: str
    header: int
    body: list[int] = field(default_factory=list)
    end: int = -1
    entry: bool = False
    # body line -> the computation that line's fusion op calls
    fused_at: dict[int, str] = field(default_factory=dict)


@dataclass(slots=True)
class Outline:
    """A module's computations in display order, and which ones are fused.

    ``order`` starts with the ENTRY computation, then every computation that no
    fusion op calls, in module order; fused computations are reached through
    ``Computation.fused_at`` of the computation holding their fusion op.
    """

    module_line: int  # the ``HloModule`` line, -1 when absent
    computations: dict[str, Computation]
    order: list[str]
    fused: set[str]
    table_lines: int  # lines of source tables (``FileNames``...) left out


def outline(lines: list[str]) -> Outline:
    """The display layout of an HLO module's ``lines``."""
    computations: dict[str, Computation] = {}
    module_line = -1
    current: Computation | None = None
    in_tables = False
    table_lines = 0
    fused: set[str] = set()
    for index, line in enumerate(lines):
        if current is not None:
            if line.startswith("}"):
                current.end = index
                current = None
            elif line.strip():
                current.body.append(index)
                if " fusion(" in line:
                    instr = parse_instruction(line, index)
                    callee = instr.attr("calls") if instr is not None else None
                    if callee and instr is not None and instr.opcode == "fusion":
                        callee = callee.lstrip("%")
                        current.fused_at[index] = callee
                        fused.add(callee)
            continue
        if line.startswith("HloModule"):
            module_line = index
            continue
        if line in HLO_SECTIONS:
            in_tables = True
        header = COMPUTATION_HEADER.match(line) if line.rstrip().endswith("{") else None
        if header is not None:
            in_tables = False
            current = Computation(
                name=header.group(2), header=index, entry=bool(header.group(1))
            )
            computations[current.name] = current
            continue
        if in_tables and line.strip():
            table_lines += 1
    entry = [name for name, comp in computations.items() if comp.entry]
    rest = [
        name
        for name, comp in computations.items()
        if not comp.entry and name not in fused
    ]
    return Outline(module_line, computations, entry + rest, fused, table_lines)


def without_metadata(line: str) -> str:
    """An instruction line without its ``, metadata={...}`` (shown as the source column)."""
    at = line.find(_METADATA)
    if at < 0:
        return line
    depth = 0
    quoted = escaped = False
    for i in range(at + len(_METADATA) - 1, len(line)):
        ch = line[i]
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return line[:at] + line[i + 1 :]
    return line[:at]


@dataclass(frozen=True, slots=True)
class Row:
    """One display row.

    ``kind``: ``"line"`` (text line ``index``: a computation header, an instruction
    or a closing brace), ``"fused"`` (the one-line summary of fused computation
    ``name`` with ``count`` ops, its body left out), ``"open"`` / ``"close"`` (the
    body of fused computation ``name`` follows / has ended). ``depth`` counts the
    fusion ops the row is nested under.
    """

    kind: str
    depth: int
    index: int = -1
    name: str = ""
    count: int = 0


def rows(layout: Outline, *, expand_fused: bool) -> list[Row]:
    """Every row of the display, in order; fused bodies only when ``expand_fused``."""
    out: list[Row] = []
    seen: set[str] = set()

    def computation(comp: Computation, depth: int) -> None:
        seen.add(comp.name)
        out.append(Row("line", depth, comp.header))
        for index in comp.body:
            out.append(Row("line", depth, index))
            callee = comp.fused_at.get(index)
            called = layout.computations.get(callee) if callee else None
            if called is None or called.name in seen:
                continue
            if expand_fused:
                out.append(
                    Row("open", depth + 1, name=called.name, count=len(called.body))
                )
                computation(called, depth + 1)
                out.append(Row("close", depth + 1, name=called.name))
            else:
                seen.add(called.name)
                out.append(
                    Row("fused", depth + 1, name=called.name, count=len(called.body))
                )
        if comp.end >= 0:
            out.append(Row("line", depth, comp.end))

    for name in layout.order:
        if name not in seen:
            computation(layout.computations[name], 0)
    return out


def module_title(line: str) -> str:
    """``HloModule jit_f, is_scheduled=true``: the module line up to its first
    braced attribute (the layouts, repeated by the ENTRY header)."""
    brace = line.find("{")
    if brace < 0:
        return line
    cut = line.rfind(", ", 0, brace)
    return line[:cut] if cut >= 0 else line


def short_header(line: str, width: int = 100) -> str:
    """A computation header longer than ``width`` with its parameter list (and a
    long result tuple) counted instead of spelled: each parameter has its own
    ``parameter(i)`` line below, and the result its ROOT line.

    ``ENTRY %main.28 (a: f32[32], ...) -> (f32[32], ...) {`` becomes
    ``ENTRY %main.28 (32 parameters) -> (30 results) {``.
    """
    if len(line) <= width:
        return line
    start = line.find(" (")
    if start < 0:
        return line
    end = balanced(line, start + 1, "(", ")")
    params = [p for p in split_top_level(line[start + 2 : end - 1]) if p.strip()]
    rest = line[end:]
    arrow = rest.find("-> ")
    if arrow < 0:
        return line
    result = rest[arrow + 3 :].rstrip().removesuffix("{").rstrip()
    if len(result) > width // 3 and result.startswith("("):
        items = [r for r in split_top_level(result[1:-1]) if r.strip()]
        result = f"({len(items)} results)"
    counted = f"({len(params)} parameter{'' if len(params) == 1 else 's'})"
    return f"{line[:start]} {counted} -> {result} {{"
