"""StableHLO / HLO / optimized HLO of a traced call: text, op table, cost and memory.

Everything here uses the public ``jax.stages`` API (``Lowered.as_text``,
``Lowered.compile``, ``Compiled.as_text``, ``cost_analysis``, ``memory_analysis``)
and parses the printed text, so no private JAX internal is needed:

* HLO (``as_text(dialect="hlo", debug_info=True)``) and optimized HLO
  (``Compiled.as_text()``) carry op metadata. Since jax 0.9 it is the compact form:
  ``FileNames`` / ``FunctionNames`` / ``FileLocations`` / ``StackFrames`` tables at
  the top and ``stack_frame_id=N`` on each op; before, ``source_file=`` /
  ``source_line=`` inline. Both are read. In the printed ``StackFrames`` table a
  frame's ``parent_frame_id`` is one more than the parent's id (``1`` = no parent).
* StableHLO (``as_text(debug_info=True)``) carries MLIR locations: ``loc(#locN)``
  on each op and ``#locN = loc(...)`` aliases at the end, built from file locations
  (``"file":line:col``), named locations (``"f"(#loc3)`` names the frame's function,
  ``"jit(f)/dense/dot_general"(#loc25)`` the op) and ``callsite(callee at caller)``.

The text a user sees (``.text``) is exactly what JAX prints for the stage; the
debug-info text used for the op table is produced separately, on first use.
Nothing is ever executed: the optimized stage compiles, the others only lower.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from jaxscope._exceptions import HloError, InvalidCallError, JaxscopeError
from jaxscope._records import OpInfo, SourceLoc
from jaxscope._source import display_filename, is_user_file

STAGES: tuple[str, ...] = ("stablehlo", "hlo", "optimized")


def check_stage(stage: Any, api_name: str = "js.hlo") -> str:
    """Return ``stage`` if it is one of ``STAGES``; raise ``InvalidCallError`` otherwise."""
    if not isinstance(stage, str) or stage not in STAGES:
        raise InvalidCallError(
            f"{api_name}: unknown stage {stage!r}; use stage='stablehlo', 'hlo' or "
            "'optimized' (post-fusion HLO)"
        )
    return stage


# --------------------------------------------------------------------------- frames


@dataclass(frozen=True, slots=True)
class _Frame:
    file: str
    line: int
    column: int
    function: str | None


# Front-end machinery JAX counts as user code: a call site traced through ``%hlo`` or a
# pytest run must show the cell / test line, not IPython's or pytest's own frames.
_MACHINERY = re.compile(
    r"[/\\](?:site|dist)-packages[/\\](?:IPython|ipykernel|ipykernel_launcher\.py|"
    r"traitlets|tornado|zmq|_pytest|pytest|pluggy|nbclient|jupyter_client|debugpy)"
    r"(?:[/\\]|$)"
)


class _LocResolver:
    """Raw frames → ``SourceLoc`` (innermost user frame), remembering raw file names."""

    def __init__(self) -> None:
        self.raw_files: dict[str, str] = {}
        self._user: dict[str, bool] = {}
        self._display: dict[str, str] = {}

    def _is_user(self, file: str) -> bool:
        known = self._user.get(file)
        if known is None:
            known = self._user[file] = (
                is_user_file(file)
                and not file.startswith("<frozen ")
                and _MACHINERY.search(file) is None
            )
        return known

    def loc(self, frames: list[_Frame]) -> SourceLoc | None:
        """The innermost user frame of ``frames`` (innermost first), else the innermost."""
        if not frames:
            return None
        chosen = next((fr for fr in frames if self._is_user(fr.file)), frames[0])
        shown = self._display.get(chosen.file)
        if shown is None:
            shown = self._display[chosen.file] = display_filename(chosen.file)
            self.raw_files.setdefault(shown, chosen.file)
        return SourceLoc(
            file=shown,
            line=chosen.line,
            column=chosen.column if chosen.column >= 0 else None,
            function=chosen.function,
        )


# --------------------------------------------------------------------------- HLO text

HLO_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_TABLE_ROW = re.compile(r"^(\d+)\s+(.*)$")
_ATTR = re.compile(r"(\w+)=(-?\d+)")
_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"$')
COMPUTATION_HEADER = re.compile(
    r"^(ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->\s*.*)?\{\s*$"
)
_INSTRUCTION = re.compile(r"^\s+(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
OPCODE = re.compile(r"([\w\-]+)\(")
_CALLS = re.compile(r"\bcalls=%?([\w.\-]+)")
OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_STACK_FRAME_ID = re.compile(r"\bstack_frame_id=(\d+)")
_SOURCE_FILE = re.compile(r'\bsource_file="((?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"\bsource_line=(\d+)")
_SOURCE_COLUMN = re.compile(r"\bsource_column=(\d+)")
_LAYOUT = re.compile(r"\{[^{}]*\}")


def _unquote(text: str) -> str:
    match = _QUOTED.match(text.strip())
    if match is None:
        return text.strip()
    return match.group(1).replace('\\"', '"').replace("\\\\", "\\")


def _split_shape(rest: str) -> tuple[str, str]:
    """``"f32[8,4]{1,0} dot(...)"`` → (``"f32[8,4]{1,0}"``, ``"dot(...)"``)."""
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    return rest[: i + 1], rest[i + 1 :].lstrip()
        return rest, ""
    shape, _, tail = rest.partition(" ")
    return shape, tail


def short_shape(shape: str) -> str:
    """An HLO shape without layouts: ``f32[8,4]{1,0}`` → ``f32[8,4]``."""
    previous = None
    while previous != shape:
        previous, shape = shape, _LAYOUT.sub("", shape)
    return shape


class _StackFrameTable:
    """The compact (jax >= 0.9) metadata tables at the top of an HLO module."""

    def __init__(self) -> None:
        self.file_names: dict[int, str] = {}
        self.function_names: dict[int, str] = {}
        self.file_locations: dict[int, dict[str, int]] = {}
        self.stack_frames: dict[int, tuple[int, int]] = {}
        self._chains: dict[int, list[_Frame]] = {}

    def add(self, section: str, line: str) -> None:
        match = _TABLE_ROW.match(line.strip())
        if match is None:
            return
        key, body = int(match.group(1)), match.group(2)
        if section == "FileNames":
            self.file_names[key] = _unquote(body)
        elif section == "FunctionNames":
            self.function_names[key] = _unquote(body)
        elif section == "FileLocations":
            self.file_locations[key] = {k: int(v) for k, v in _ATTR.findall(body)}
        elif section == "StackFrames":
            attrs = {k: int(v) for k, v in _ATTR.findall(body)}
            self.stack_frames[key] = (
                attrs.get("file_location_id", 0),
                attrs.get("parent_frame_id", 0),
            )

    def frame(self, frame_id: int) -> _Frame | None:
        """Frame ``frame_id``'s own location (its parents not followed), if known."""
        entry = self.stack_frames.get(frame_id)
        if entry is None:
            return None
        location = self.file_locations.get(entry[0])
        if location is None:
            return None
        file = self.file_names.get(location.get("file_name_id", 0))
        if file is None:
            return None
        return _Frame(
            file,
            location.get("line", 0),
            location.get("column", -1),
            self.function_names.get(location.get("function_name_id", 0)),
        )

    def frames(self, frame_id: int) -> list[_Frame]:
        """The stack of frame ``frame_id``, innermost first."""
        cached = self._chains.get(frame_id)
        if cached is not None:
            return cached
        chain: list[_Frame] = []
        seen: set[int] = set()
        current = frame_id
        while current in self.stack_frames and current not in seen:
            seen.add(current)
            frame = self.frame(current)
            if frame is not None:
                chain.append(frame)
            # printed parent ids are offset by one; 0 = none
            current = self.stack_frames[current][1] - 1
        self._chains[frame_id] = chain
        return chain


def iter_lines(text: str) -> Iterator[str]:
    """The lines of ``text``, split lazily (for readers that stop early)."""
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def read_frame_tables(lines: Iterable[str]) -> _StackFrameTable:
    """The ``FileNames`` / ``FunctionNames`` / ``FileLocations`` / ``StackFrames`` tables.

    They precede the computations of a module, so reading stops at the first
    computation header: with ``iter_lines`` only the head of a large module is read.
    """
    table = _StackFrameTable()
    section: str | None = None
    for line in lines:
        if not line or line[0] == " ":
            continue
        stripped = line.strip()
        if stripped in HLO_SECTIONS:
            section = stripped
        elif COMPUTATION_HEADER.match(line) is not None:
            break
        elif section is not None and stripped[:1].isdigit():
            table.add(section, stripped)
    return table


def stack_frame_id(metadata: str) -> int | None:
    """The ``stack_frame_id=N`` of an op's metadata (jax >= 0.9), if any."""
    found = _STACK_FRAME_ID.search(metadata)
    return int(found.group(1)) if found is not None else None


def inline_frame(metadata: str) -> _Frame | None:
    """The frame of older inline ``source_file=`` / ``source_line=`` metadata, if any."""
    file = _SOURCE_FILE.search(metadata)
    line_no = _SOURCE_LINE.search(metadata)
    if file is None or line_no is None:
        return None
    column = _SOURCE_COLUMN.search(metadata)
    return _Frame(
        file.group(1),
        int(line_no.group(1)),
        int(column.group(1)) if column else -1,
        None,
    )


def _instruction_lines(
    lines: Iterable[str],
) -> Iterator[tuple[int, str, re.Match[str]]]:
    """``(line index, computation, _INSTRUCTION match)`` of each instruction line."""
    computation = ""
    for index, line in enumerate(lines):
        if not line:
            continue
        if line[0] != " ":
            header = COMPUTATION_HEADER.match(line)
            if header is not None:
                computation = header.group(2)
            elif line.strip() == "}":
                computation = ""
            continue
        match = _INSTRUCTION.match(line)
        if match is not None:
            yield index, computation, match


@dataclass(frozen=True, slots=True)
class ParsedOps:
    """The op table of one module, plus where each op sits in the text."""

    ops: list[OpInfo]
    lines: list[int]  # ops[i] is printed on text line lines[i] (0-based)
    raw_files: dict[str, str]  # display file ("In [3]") -> file as JAX recorded it


def parse_hlo(text: str) -> ParsedOps:
    """The op table of an HLO module's text (``hlo`` or ``optimized`` stage).

    Every instruction of every computation is listed; an op inside a fused
    computation has ``fusion`` set to the name of the fusion instruction calling it.
    Sources come from the ``StackFrames`` tables or the older inline metadata.
    """
    resolver = _LocResolver()
    lines = text.splitlines()
    table = read_frame_tables(lines)
    rows: list[
        tuple[int, str, str, str, str, str]
    ] = []  # line, name, opcode, shape, comp, rest
    fusion_of_computation: dict[str, str] = {}
    sources: list[SourceLoc | None] = []
    op_names: list[str] = []
    frame_locs: dict[int, SourceLoc | None] = {}
    for index, computation, match in _instruction_lines(lines):
        name, rest = match.group(2), match.group(3)
        shape, tail = _split_shape(rest)
        opcode_match = OPCODE.match(tail)
        opcode = opcode_match.group(1) if opcode_match else tail.split(" ", 1)[0]
        if opcode == "fusion":
            calls = _CALLS.search(tail)
            if calls is not None:
                fusion_of_computation.setdefault(calls.group(1), name)
        rows.append((index, name, opcode, shape, computation, tail))
    for _, _, _, _, _, tail in rows:
        op_name = ""
        source: SourceLoc | None = None
        meta_at = tail.find("metadata={")
        if meta_at >= 0:
            meta = tail[meta_at:]
            found = OP_NAME.search(meta)
            if found is not None:
                op_name = found.group(1).replace('\\"', '"')
            frame_id = stack_frame_id(meta)
            if frame_id is not None:
                if frame_id in frame_locs:
                    source = frame_locs[frame_id]
                else:
                    source = frame_locs[frame_id] = resolver.loc(table.frames(frame_id))
            else:
                frame = inline_frame(meta)
                if frame is not None:
                    source = resolver.loc([frame])
        op_names.append(op_name)
        sources.append(source)
    ops = [
        OpInfo(
            name=name,
            opcode=opcode,
            shape=short_shape(shape),
            source=source,
            fusion=fusion_of_computation.get(comp),
            op_name=op_name,
            computation=comp,
        )
        for (_, name, opcode, shape, comp, _), source, op_name in zip(
            rows, sources, op_names, strict=True
        )
    ]
    return ParsedOps(ops, [row[0] for row in rows], resolver.raw_files)


# --------------------------------------------------------------------------- StableHLO

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
        self._cache: dict[str, tuple[list[_Frame], str]] = {}

    def resolve(self, expr: str) -> tuple[list[_Frame], str]:
        expr = expr.strip()
        cached = self._cache.get(expr)
        if cached is not None:
            return cached
        self._cache[expr] = ([], "")  # guards against alias cycles
        result = self._resolve(expr)
        self._cache[expr] = result
        return result

    def _resolve(self, expr: str) -> tuple[list[_Frame], str]:
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
                _Frame(
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
                return [_Frame(fr.file, fr.line, fr.column, name)], inner_name
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


def parse_stablehlo(debug_text: str) -> ParsedOps:
    """The op table of a StableHLO module printed with ``debug_info=True``.

    Terminators (``return``) are left out. An op whose body spans several lines
    (``stablehlo.while``, ``case``, a generic ``reduce``) takes the location printed
    after its closing brace. ``lines`` index the same text without locations, which
    has the same line structure up to the ``#loc`` lines.
    """
    lines = debug_text.splitlines()
    aliases: dict[str, str] = {}
    for line in reversed(lines):
        match = _LOC_ALIAS.match(line)
        if match is None:
            if line.strip():
                break
            continue
        aliases[match.group(1)] = match.group(2)
    locs = _MlirLocs(aliases)
    resolver = _LocResolver()
    computation = ""
    # (text line index, name, opcode, shape, computation, loc expression)
    rows: list[list[Any]] = []
    pending: list[tuple[int, int]] = []  # (row index, brace depth when it opened)
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
        at = line.rfind(" loc(")
        if at >= 0 and line.rstrip().endswith(")"):
            loc_expr: str | None = line[at + 5 :].rstrip()[:-1]
            code = line[:at]
        else:
            loc_expr, code = None, line
        func = FUNC_HEADER.match(code)
        if func is not None:
            computation = func.group(1)
        elif stripped.startswith("}"):
            after = depth - closes + opens
            if pending and loc_expr is not None and pending[-1][1] == after:
                row = rows[pending.pop()[0]]
                row[5] = loc_expr
                if not row[3]:  # generic form: the type follows the region
                    row[3] = _mlir_result_type(code)
        elif not stripped.startswith(("module", "^", "cond", "do", "reducer")):
            op = _MLIR_OP.match(code)
            if op is not None and ("." in op.group(2) or op.group(1)):
                opcode = op.group(2)
                if opcode not in _TERMINATORS:
                    results = op.group(1) or ""
                    name = results.split(",")[0].strip().split(":")[0]
                    opens_region = code.rstrip().endswith("{")
                    shape = "" if opens_region else _mlir_result_type(code)
                    rows.append(
                        [line_index, name, opcode, shape, computation, loc_expr]
                    )
                    if loc_expr is None:
                        pending.append((len(rows) - 1, depth))
        depth += opens - closes
    ops: list[OpInfo] = []
    resolved: dict[str, tuple[SourceLoc | None, str]] = {}
    for _, name, opcode, shape, comp, loc_expr in rows:
        known: tuple[SourceLoc | None, str] | None = (None, "")
        if loc_expr:
            known = resolved.get(loc_expr)
            if known is None:
                # a pathological location chain gives no source rather than a crash
                try:
                    frames, op_name = locs.resolve(loc_expr)
                except RecursionError:
                    frames, op_name = [], ""
                known = resolved[loc_expr] = (resolver.loc(frames), op_name)
        source, op_name = known
        ops.append(
            OpInfo(
                name=name,
                opcode=opcode,
                shape=shape,
                source=source,
                fusion=None,
                op_name=op_name,
                computation=comp,
            )
        )
    return ParsedOps(ops, [row[0] for row in rows], resolver.raw_files)


# --------------------------------------------------------------------------- cost / memory

_READABLE_COST = {
    "flops": "flops",
    "transcendentals": "transcendentals",
    "bytes accessed": "bytes_accessed",
    "optimal_seconds": "optimal_seconds",
    "utilization": "utilization",
}


def normalize_cost(raw: Any) -> dict[str, float] | None:
    """``cost_analysis()`` output as one dict with readable keys, or None.

    Readable keys (``flops``, ``transcendentals``, ``bytes_accessed``) come first,
    then every raw key as the backend spelled it. A list of dicts (one per
    program, as older JAX returned) is summed.
    """
    if raw is None:
        return None
    if isinstance(raw, (list, tuple)):
        merged: dict[str, float] = {}
        for part in cast("list[Any]", raw):
            if isinstance(part, Mapping):
                for key, value in cast("Mapping[Any, Any]", part).items():
                    if isinstance(value, (int, float)):
                        merged[str(key)] = merged.get(str(key), 0.0) + float(value)
        raw = merged
    if not isinstance(raw, Mapping) or not raw:
        return None
    items = cast("Mapping[Any, Any]", raw).items()
    numbers = {str(k): float(v) for k, v in items if isinstance(v, (int, float))}
    if not numbers:
        return None
    out: dict[str, float] = {}
    for raw_key, key in _READABLE_COST.items():
        if raw_key in numbers:
            out[key] = numbers[raw_key]
    out.update(numbers)
    return out


_MEMORY_FIELDS = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
    "alias_bytes": "alias_size_in_bytes",
    "generated_code_bytes": "generated_code_size_in_bytes",
}


def normalize_memory(stats: Any) -> dict[str, int | None] | None:
    """``memory_analysis()`` output as a dict of byte counts (None where absent)."""
    if stats is None:
        return None
    out: dict[str, int | None] = {}
    for key, attr in _MEMORY_FIELDS.items():
        value = getattr(stats, attr, None)
        out[key] = int(value) if isinstance(value, (int, float)) else None
    if all(value is None for value in out.values()):
        return None
    return out


def _safe(call: Callable[[], Any]) -> Any:
    # Backends may lack an analysis (NotImplementedError, XlaRuntimeError, ...).
    try:
        return call()
    except Exception:
        return None


# --------------------------------------------------------------------------- capture


class HloCapture:
    """One call lowered (and for ``optimized`` compiled): text now, the rest on demand.

    Holds the ``Lowered`` / ``Compiled`` stage objects (never the example arrays
    themselves) so that the op table, cost and memory are computed only when read.
    """

    __slots__ = (
        "_compiled",
        "_cost",
        "_cost_done",
        "_lowered",
        "_memory",
        "_memory_done",
        "_parsed",
        "stage",
        "text",
    )

    def __init__(self, lowered: Any, stage: str, compiled: Any = None) -> None:
        self.stage = check_stage(stage)
        self._lowered = lowered
        self._compiled = compiled
        self._parsed: ParsedOps | None = None
        self._cost: dict[str, float] | None = None
        self._cost_done = False
        self._memory: dict[str, int | None] | None = None
        self._memory_done = False
        if stage == "stablehlo":
            self.text: str = lowered.as_text()
        elif stage == "hlo":
            self.text = lowered.as_text(dialect="hlo")
        else:
            self.text = self.compiled().as_text()

    def compiled(self) -> Any:
        """The ``Compiled`` stage object (compiling on first use for other stages)."""
        if self._compiled is None:
            try:
                self._compiled = self._lowered.compile()
            except Exception as exc:
                raise HloError(
                    f"XLA could not compile the program ({type(exc).__name__}: "
                    f"{_first_line(exc)}); try stage='hlo' or stage='stablehlo'"
                ) from exc
        return self._compiled

    def debug_text(self) -> str:
        """The stage's text with source information (op metadata / MLIR locations)."""
        if self.stage == "stablehlo":
            return self._lowered.as_text(debug_info=True)
        if self.stage == "hlo":
            return self._lowered.as_text(dialect="hlo", debug_info=True)
        return self.text  # compiled HLO always carries its metadata

    def parsed(self) -> ParsedOps:
        """The op table, parsed on first use."""
        if self._parsed is None:
            try:
                source_text = self.debug_text()
            except Exception:
                # No debug-info printer for this program: ops without sources.
                source_text = self.text
            if self.stage == "stablehlo":
                self._parsed = parse_stablehlo(source_text)
            else:
                parsed = parse_hlo(source_text)
                if self.stage == "hlo":
                    parsed = _align_hlo_lines(parsed, self.text)
                self._parsed = parsed
        return self._parsed

    @property
    def lowered(self) -> Any:
        """The ``jax.stages.Lowered`` the text came from."""
        return self._lowered

    @property
    def ops(self) -> list[OpInfo]:
        return self.parsed().ops

    @property
    def cost(self) -> dict[str, float] | None:
        """Cost analysis: of the compiled program for ``optimized``, else of the lowered one."""
        if not self._cost_done:
            self._cost_done = True
            if self.stage == "optimized":
                raw = _safe(lambda: self.compiled().cost_analysis())
            else:
                raw = _safe(lambda: self._lowered.cost_analysis())
            self._cost = normalize_cost(raw)
        return self._cost

    @property
    def memory(self) -> dict[str, int | None] | None:
        """Memory analysis of the compiled program (compiles on first use if needed)."""
        if not self._memory_done:
            self._memory_done = True
            compiled = _safe(self.compiled)
            stats = (
                _safe(lambda: compiled.memory_analysis())
                if compiled is not None
                else None
            )
            self._memory = normalize_memory(stats)
        return self._memory


def _align_hlo_lines(parsed: ParsedOps, text: str) -> ParsedOps:
    """Re-point op line numbers from the debug text to ``text`` (no metadata tables)."""
    positions: dict[tuple[str, str], int] = {}
    for index, computation, match in _instruction_lines(text.splitlines()):
        positions.setdefault((computation, match.group(2)), index)
    lines = [positions.get((op.computation, op.name), -1) for op in parsed.ops]
    return ParsedOps(parsed.ops, lines, parsed.raw_files)


def _first_line(exc: BaseException) -> str:
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__


def capture(traced: Any, stage: str) -> HloCapture:
    """Lower a ``jax.stages.Traced`` (and compile it for ``optimized``); never run it."""
    check_stage(stage)
    try:
        lowered = traced.lower()
    except JaxscopeError:
        raise
    except Exception as exc:
        raise HloError(
            f"JAX could not lower the program ({type(exc).__name__}: "
            f"{_first_line(exc)}); check the function with js.jaxpr first"
        ) from exc
    return HloCapture(lowered, stage)


def by_line(ops: list[OpInfo]) -> dict[tuple[str, int], list[OpInfo]]:
    """``{(file, line): [ops]}`` in op order, for ops with a known source."""
    table: dict[tuple[str, int], list[OpInfo]] = {}
    for op in ops:
        if op.source is not None:
            table.setdefault(op.source.key, []).append(op)
    return table


def source_text(raw_file: str, line: int) -> str:
    """The text of ``raw_file`` at ``line`` (IPython cells included), or ``""``."""
    return linecache.getline(raw_file, line).strip()
