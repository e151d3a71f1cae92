"""The op table of a StableHLO module, from the MLIR locations it prints.

``as_text(debug_info=True)`` carries a location on each op (``loc(#locN)``) and
``#locN = loc(...)`` aliases at the end, built from file locations
(``"file":line:col``), named locations (``"f"(#loc3)`` names the frame's function,
``"jit(f)/dense/dot_general"(#loc25)`` the op) and ``callsite(callee at caller)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from jaxscope._hlo.ops import LocResolver, ParsedOps
from jaxscope._hlo.parse import Frame
from jaxscope._records import OpInfo, SourceLoc
from jaxscope._source import ProgramScope

_LOC_ALIAS = re.compile(r"^#(loc\d*)\s*=\s*loc\((.*)\)\s*$")
FUNC_HEADER = re.compile(r"^\s*func\.func\s+(?:\w+\s+)?@([\w.$\-]+)")
_MLIR_OP = re.compile(
    r'^\s*(?:(%[\w#:$.\-]+(?:\s*,\s*%[\w#:$.\-]+)*)\s*=\s*)?"?([a-z_][\w.]*)"?'
)
_FILE_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
_TERMINATORS = frozenset({"return", "func.return", "stablehlo.return", "mhlo.return"})
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


class _MlirLocs:
    """MLIR location expressions → (frames innermost first, op name)."""

    def __init__(self, aliases: Mapping[str, str]) -> None:
        self.aliases = aliases
        self._cache: dict[str, tuple[list[Frame], str]] = {}

    def resolve(self, expr: str) -> tuple[list[Frame], str]:
        expr = expr.strip()
        cached = self._cache.get(expr)
        if cached is not None:
            return cached
        self._cache[expr] = ([], "")  # guards against alias cycles
        result = self._resolve(expr)
        self._cache[expr] = result
        return result

    def _resolve(self, expr: str) -> tuple[list[Frame], str]:
        if expr.startswith("#"):
            body = self.aliases.get(expr[1:])
            return self.resolve(body) if body is not None else ([], "")
        if expr.startswith("loc(") and expr.endswith(")"):
            return self.resolve(expr[4:-1])
        if expr.startswith("callsite(") and expr.endswith(")"):
            callee, caller = _split_callsite(expr[len("callsite(") : -1])
            callee_frames, callee_name = self.resolve(callee)
            caller_frames, _ = self.resolve(caller)
            return callee_frames + caller_frames, callee_name
        if expr.startswith("fused"):
            start = expr.find("[")
            end = expr.rfind("]")
            if start >= 0 and end > start:
                parts = _split_top(expr[start + 1 : end], ",")
                for part in parts:
                    frames, name = self.resolve(part)
                    if frames or name:
                        return frames, name
            return [], ""
        file_loc = _FILE_LOC.match(expr)
        if file_loc is not None:
            return [
                Frame(
                    file_loc.group(1).replace('\\"', '"'),
                    int(file_loc.group(2)),
                    int(file_loc.group(3)),
                    None,
                )
            ], ""
        if expr.startswith('"'):
            match = _STRING.match(expr)
            if match is None:
                return [], ""
            name = match.group(0)[1:-1].replace('\\"', '"')
            child = expr[match.end() :].strip()
            if not (child.startswith("(") and child.endswith(")")):
                return [], name
            inner = child[1:-1].strip()
            frames, inner_name = self.resolve(inner)
            looks_like_function = "(" not in name and "/" not in name
            if (
                looks_like_function
                and len(frames) == 1
                and _is_file_loc(inner, self.aliases)
            ):
                # "f"("file":3:4) names the frame's function; "jit(f)/sin"(...) the op
                fr = frames[0]
                return [Frame(fr.file, fr.line, fr.column, name)], inner_name
            return frames, name or inner_name
        return [], ""


def _is_file_loc(expr: str, aliases: Mapping[str, str], depth: int = 0) -> bool:
    expr = expr.strip()
    while expr.startswith("#") and depth < 50:
        body = aliases.get(expr[1:])
        if body is None:
            return False
        expr = body.strip()
        depth += 1
    return _FILE_LOC.match(expr) is not None


def _split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` outside brackets and strings."""
    parts: list[str] = []
    depth = 0
    start = 0
    in_string = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "([<{":
            depth += 1
        elif ch in ")]>}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
        i += 1
    parts.append(text[start:])
    return parts


def _split_callsite(body: str) -> tuple[str, str]:
    parts = _split_top(body, " at ")
    if len(parts) < 2:
        return body, ""
    return parts[0], " at ".join(parts[1:])


def _mlir_result_type(line: str) -> str:
    arrow = line.rfind(" -> ")
    if arrow >= 0:
        return line[arrow + 4 :].strip()
    colon = line.rfind(" : ")
    if colon >= 0:
        return line[colon + 3 :].strip()
    return ""


@dataclass(slots=True)
class _Row:
    """One op as printed: where, what, and its location expression (if any yet)."""

    index: int  # line of the text printed without locations
    name: str
    opcode: str
    shape: str
    computation: str
    loc: str | None


def _loc_aliases(lines: list[str]) -> dict[str, str]:
    """The ``#locN = loc(...)`` aliases printed after the module."""
    aliases: dict[str, str] = {}
    for line in reversed(lines):
        match = _LOC_ALIAS.match(line)
        if match is None:
            if line.strip():
                break
            continue
        aliases[match.group(1)] = match.group(2)
    return aliases


def _split_loc(line: str) -> tuple[str | None, str]:
    """``line`` as (its trailing ``loc(...)`` expression or None, the code before)."""
    at = line.rfind(" loc(")
    if at >= 0 and line.rstrip().endswith(")"):
        return line[at + 5 :].rstrip()[:-1], line[:at]
    return None, line


def _op_row(code: str, index: int, computation: str, loc: str | None) -> _Row | None:
    """The row of an op line (``%0 = stablehlo.sine ...``), or None for others."""
    op = _MLIR_OP.match(code)
    if op is None or not ("." in op.group(2) or op.group(1)):
        return None
    opcode = op.group(2)
    if opcode in _TERMINATORS:
        return None
    name = (op.group(1) or "").split(",")[0].strip().split(":")[0]
    opens_region = code.rstrip().endswith("{")
    shape = "" if opens_region else _mlir_result_type(code)
    return _Row(index, name, opcode, shape, computation, loc)


def _rows(lines: list[str]) -> list[_Row]:
    """Every op of the module, terminators (``return``) left out.

    An op whose body spans several lines (``stablehlo.while``, ``case``, a generic
    ``reduce``) takes the location printed after its closing brace.
    """
    computation = ""
    rows: list[_Row] = []
    pending: list[tuple[_Row, int]] = []  # (row, brace depth when it opened)
    depth = 0
    line_index = -1
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#loc"):
            continue  # location aliases are absent from the text without debug info
        line_index += 1
        if not stripped:
            continue
        bare = _STRING.sub('""', line)
        opens, closes = bare.count("{"), bare.count("}")
        loc_expr, code = _split_loc(line)
        func = FUNC_HEADER.match(code)
        if func is not None:
            computation = func.group(1)
        elif stripped.startswith("}"):
            after = depth - closes + opens
            if pending and loc_expr is not None and pending[-1][1] == after:
                row = pending.pop()[0]
                row.loc = loc_expr
                if not row.shape:  # generic form: the type follows the region
                    row.shape = _mlir_result_type(code)
        elif not stripped.startswith(("module", "^", "cond", "do", "reducer")):
            row = _op_row(code, line_index, computation, loc_expr)
            if row is not None:
                rows.append(row)
                if loc_expr is None:
                    pending.append((row, depth))
        depth += opens - closes
    return rows


def parse_stablehlo(debug_text: str, scope: ProgramScope | None = None) -> ParsedOps:
    """The op table of a StableHLO module printed with ``debug_info=True``.

    ``lines`` index the same text without locations, which has the same line
    structure up to the ``#loc`` lines.
    """
    lines = debug_text.splitlines()
    locs = _MlirLocs(_loc_aliases(lines))
    resolver = LocResolver(scope=scope)
    rows = _rows(lines)
    stacks: dict[str, tuple[list[Frame], str]] = {}
    for row in rows:
        if row.loc and row.loc not in stacks:
            # a pathological location chain gives no source rather than a crash
            try:
                stacks[row.loc] = locs.resolve(row.loc)
            except RecursionError:
                stacks[row.loc] = ([], "")
    resolver.cut.learn(frames for frames, _ in stacks.values())
    ops: list[OpInfo] = []
    resolved: dict[str, tuple[SourceLoc | None, str]] = {}
    for row in rows:
        known: tuple[SourceLoc | None, str] | None = (None, "")
        if row.loc:
            known = resolved.get(row.loc)
            if known is None:
                frames, op_name = stacks[row.loc]
                known = resolved[row.loc] = (resolver.loc(frames), op_name)
        source, op_name = known
        ops.append(
            OpInfo(
                name=row.name,
                opcode=row.opcode,
                shape=row.shape,
                source=source,
                fusion=None,
                op_name=op_name,
                computation=row.computation,
            )
        )
    return ParsedOps(ops, [row.index for row in rows], resolver.raw_files)
