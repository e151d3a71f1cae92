"""The one reader of HLO text as XLA prints it (``Lowered.as_text(dialect="hlo")``,
``Compiled.as_text()``, modules dumped between passes): the HLO op table and the
sharding views both parse here. Only syntax: what a line says, not what it means.

A module is the ``HloModule`` header line; since jax 0.9 the source tables
``FileNames`` / ``FunctionNames`` / ``FileLocations`` / ``StackFrames`` (an op's
``metadata={... stack_frame_id=N}`` points into them; before, ops carried
``source_file=`` / ``source_line=`` inline); then computations: a header line ending
in ``{`` at column 0, one indented instruction per line, and ``}``. A printed
``parent_frame_id`` is one more than the parent's id (``1`` = no parent).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

HLO_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
COMPUTATION_HEADER = re.compile(
    r"^(ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->\s*.*)?\{\s*$"
)
# indent, "ROOT ", "%", name, " = ", the rest (shape, opcode, operands, attributes)
_INSTRUCTION = re.compile(r"^(\s+)(ROOT\s+)?(%?)([\w.\-]+)(\s*=\s*)(.*)$")
_OPCODE = re.compile(r"([\w\-]+)\(")
_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_STACK_FRAME_ID = re.compile(r"\bstack_frame_id=(\d+)")
_SOURCE_FILE = re.compile(r'\bsource_file="((?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"\bsource_line=(\d+)")
_SOURCE_COLUMN = re.compile(r"\bsource_column=(\d+)")
_TABLE_ROW = re.compile(r"^(\d+)\s+(.*)$")
_TABLE_ATTR = re.compile(r"(\w+)=(-?\d+)")
_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"$')
_COMMENT = re.compile(r"/\*.*?\*/")


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


def balanced(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket closing the one at ``text[start]`` (or the end)."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets."""
    parts: list[str] = []
    depth = start = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


# ------------------------------------------------------------------ source tables


@dataclass(frozen=True, slots=True)
class Frame:
    """One source location of an op's stack, as the module records it."""

    file: str
    line: int
    column: int  # -1 when unknown
    function: str | None


def _unquote(text: str) -> str:
    match = _QUOTED.match(text.strip())
    if match is None:
        return text.strip()
    return match.group(1).replace('\\"', '"').replace("\\\\", "\\")


class FrameTable:
    """The compact (jax >= 0.9) source tables at the top of an HLO module."""

    def __init__(self) -> None:
        self.file_names: dict[int, str] = {}
        self.function_names: dict[int, str] = {}
        self.file_locations: dict[int, dict[str, int]] = {}
        self.stack_frames: dict[int, tuple[int, int]] = {}
        self._chains: dict[int, list[Frame]] = {}

    def add(self, section: str, line: str) -> None:
        """Read one row of ``section``; other lines are ignored."""
        match = _TABLE_ROW.match(line.strip())
        if match is None:
            return
        key, body = int(match.group(1)), match.group(2)
        if section == "FileNames":
            self.file_names[key] = _unquote(body)
        elif section == "FunctionNames":
            self.function_names[key] = _unquote(body)
        elif section == "FileLocations":
            self.file_locations[key] = {k: int(v) for k, v in _TABLE_ATTR.findall(body)}
        elif section == "StackFrames":
            attrs = {k: int(v) for k, v in _TABLE_ATTR.findall(body)}
            self.stack_frames[key] = (
                attrs.get("file_location_id", 0),
                attrs.get("parent_frame_id", 0),
            )

    def frame(self, frame_id: int) -> Frame | None:
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
        return Frame(
            file,
            location.get("line", 0),
            location.get("column", -1),
            self.function_names.get(location.get("function_name_id", 0)),
        )

    def frames(self, frame_id: int) -> list[Frame]:
        """The stack of frame ``frame_id``, innermost first."""
        cached = self._chains.get(frame_id)
        if cached is not None:
            return cached
        chain: list[Frame] = []
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


def read_frame_tables(lines: Iterable[str]) -> FrameTable:
    """The ``FileNames`` / ``FunctionNames`` / ``FileLocations`` / ``StackFrames`` tables.

    They precede the computations of a module, so reading stops at the first
    computation header: with ``iter_lines`` only the head of a large module is read.
    """
    table = FrameTable()
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


def inline_frame(metadata: str) -> Frame | None:
    """The frame of older inline ``source_file=`` / ``source_line=`` metadata, if any."""
    file = _SOURCE_FILE.search(metadata)
    line_no = _SOURCE_LINE.search(metadata)
    if file is None or line_no is None:
        return None
    column = _SOURCE_COLUMN.search(metadata)
    return Frame(
        file.group(1),
        int(line_no.group(1)),
        int(column.group(1)) if column else -1,
        None,
    )


def op_name(metadata: str) -> str:
    """The ``op_name="..."`` of an op's metadata, unescaped (``""`` if none)."""
    found = _OP_NAME.search(metadata)
    return found.group(1).replace('\\"', '"') if found is not None else ""


# Name-stack words that are transforms, not the user's scopes.
_TRANSFORM_WORDS = frozenset(
    {"jit", "pjit", "jvp", "transpose", "vmap", "remat", "checkpoint", "pmap"}
)
_WORD = re.compile(r"[A-Za-z_][\w.\-]*")


def _top_level(text: str, sep: str) -> list[str]:
    """``text`` split at the ``sep`` characters outside parentheses."""
    parts: list[str] = []
    depth = start = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def short_op_name(name: str, limit: int = 48) -> str:
    """An op's ``op_name`` as a reader wants it: its primitive(s) under the user's
    scopes, the outer ``jit(f)`` and the transforms dropped, a gradient's part marked.

    Example:
        >>> short_op_name("jit(step)/jit(main)/transpose(jvp(predict))/dot_general")
        'predict/dot_general (backward)'
        >>> short_op_name("jit(f)/(transpose(jvp())/reduce_sum:transpose(jvp())/dot_general)")
        'reduce_sum, dot_general (backward)'
    """
    rest = name
    while True:
        head = _top_level(rest, "/")
        if len(head) > 1 and re.fullmatch(r"p?jit\([^()]*\)", head[0]):
            rest = "/".join(head[1:])
        else:
            break
    if rest.startswith("(") and rest.endswith(")"):
        parts = _top_level(rest[1:-1], ":")
    else:
        parts = [rest]
    labels: list[str] = []
    backward: list[bool] = []
    for part in parts:
        segments = _top_level(part, "/")
        scopes = [
            w
            for seg in segments[:-1]
            for w in _WORD.findall(seg)
            if w not in _TRANSFORM_WORDS
        ]
        label = "/".join([*scopes, segments[-1]])
        if label not in labels:
            labels.append(label)
        backward.append("transpose(" in part)
    text = ", ".join(labels[:3]) + (f" +{len(labels) - 3}" if len(labels) > 3 else "")
    if all(backward):
        text += " (backward)"
    elif any(backward):
        text += " (forward and backward)"
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------ instructions


@dataclass(slots=True)  # not frozen: built once per line, frozen init costs 15%
class Instruction:
    """One instruction line: ``  ROOT %name = shape opcode(operands), attributes``.

    ``tail`` is the text after the shape, from the opcode on. ``computation`` is the
    computation the line is printed in (``""`` outside any).
    """

    index: int  # 0-based line of the module text
    computation: str
    name: str
    shape: str  # as printed, layouts included
    opcode: str
    tail: str

    @property
    def metadata(self) -> str:
        """The text from ``metadata={`` on, ``""`` when the op has none."""
        at = self.tail.find("metadata={")
        return self.tail[at:] if at >= 0 else ""

    def _operands_end(self) -> int:
        """Index in ``tail`` just past the operand list, 0 without one."""
        start = len(self.opcode)
        if not self.tail.startswith("(", start):
            return 0
        return balanced(self.tail, start, "(", ")")

    @property
    def operands(self) -> list[str]:
        """The operands' names (their printed types and ``%`` dropped)."""
        end = self._operands_end()
        if not end:
            return []
        text = _COMMENT.sub("", self.tail[len(self.opcode) + 1 : end - 1])
        return [
            o.strip().split(" ")[-1].lstrip("%")
            for o in split_top_level(text)
            if o.strip()
        ]

    @property
    def attrs(self) -> str:
        """The attribute text after the operand list (``, channel_id=1, ...``)."""
        end = self._operands_end()
        return self.tail[end:] if end else ""

    def attr(self, key: str) -> str | None:
        """The value of attribute ``key`` (see ``attr_value``)."""
        return attr_value(self.attrs, key)


def split_shape(rest: str) -> tuple[str, str, str]:
    """``"f32[8,4]{1,0} dot(...)"`` → (``"f32[8,4]{1,0}"``, ``" "``, ``"dot(...)"``)."""
    if rest.startswith("("):
        end = balanced(rest, 0, "(", ")")
        tail = rest[end:].lstrip()
        return rest[:end], rest[end : len(rest) - len(tail)], tail
    return rest.partition(" ")


def instruction_parts(line: str) -> tuple[str, ...] | None:
    """An instruction line cut into the pieces it prints, for drawing it:
    indent, ``"ROOT "``, ``"%name"``, ``" = "``, shape, gap, opcode, ``"(...)..."``.
    None for other lines (and for instructions whose opcode takes no operand list).
    """
    match = _INSTRUCTION.match(line)
    if match is None:
        return None
    indent, root, percent, name, eq, rest = match.groups()
    shape, gap, tail = split_shape(rest)
    opcode = _OPCODE.match(tail)
    if opcode is None or not gap:
        return None
    at = opcode.end() - 1
    return (indent, root or "", percent + name, eq, shape, gap, tail[:at], tail[at:])


def parse_instruction(
    line: str, index: int = 0, computation: str = ""
) -> Instruction | None:
    """The ``Instruction`` of one line, or None for lines that are not instructions."""
    match = _INSTRUCTION.match(line)
    if match is None:
        return None
    name, rest = match.group(4, 6)
    shape, _, tail = split_shape(rest)
    opcode = _OPCODE.match(tail)
    return Instruction(
        index,
        computation,
        name,
        shape,
        opcode.group(1) if opcode else tail.split(" ", 1)[0],
        tail,
    )


def instructions(
    lines: Iterable[str], keep: Callable[[str], bool] | None = None
) -> Iterator[Instruction]:
    """Every instruction of a module's lines, with its computation and line index.

    Only lines for which ``keep(line)`` holds are parsed (all by default).
    """
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
        if keep is not None and not keep(line):
            continue
        instruction = parse_instruction(line, index, computation)
        if instruction is not None:
            yield instruction


def attr_value(attrs: str, key: str) -> str | None:
    """The value of ``key=...`` in an attribute list, balanced braces kept.

    ``{...}`` values are read to their closing brace; ``mesh[...] {...}`` (the form
    newer XLA prints for iota replica groups) to the brace after the mesh; any other
    value to the next ``", "``.
    """
    idx = attrs.find(f"{key}=")
    while idx > 0 and attrs[idx - 1] not in ", ":
        idx = attrs.find(f"{key}=", idx + 1)
    if idx < 0:
        return None
    start = idx + len(key) + 1
    if start < len(attrs) and attrs[start] == "{":
        return attrs[start : balanced(attrs, start, "{", "}")]
    if attrs.startswith("mesh[", start):
        close = balanced(attrs, start + 4, "[", "]")
        brace = attrs.find("{", close)
        if brace >= 0:
            return attrs[start : balanced(attrs, brace, "{", "}")]
        return attrs[start:close]
    end = attrs.find(", ", start)
    return attrs[start : end if end >= 0 else len(attrs)]


# ------------------------------------------------------------------ shapes and module

_LAYOUT = re.compile(r"\{[^{}]*\}")
_ARRAY_SHAPE = re.compile(r"\b([a-z]\w*)\[([\d,\s]*)\]")
_DTYPE_BYTES = {
    **dict.fromkeys(("pred", "s2", "u2", "s4", "u4", "s8", "u8"), 1),
    **dict.fromkeys(("s16", "u16", "f16", "bf16"), 2),
    **dict.fromkeys(("s32", "u32", "f32"), 4),
    **dict.fromkeys(("s64", "u64", "f64", "c64"), 8),
    "c128": 16,
    "token": 0,
    "tuple": 0,
}


def short_shape(shape: str) -> str:
    """An HLO shape without layouts: ``f32[8,4]{1,0}`` → ``f32[8,4]``."""
    previous = None
    while previous != shape:
        previous, shape = shape, _LAYOUT.sub("", shape)
    return shape


def shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape string (tuples summed): ``"f32[16,16]{1,0}"`` → 1024."""
    total = 0
    for dtype, dims in _ARRAY_SHAPE.findall(shape):
        size = _DTYPE_BYTES.get(dtype)
        if size is None:
            size = 1 if dtype.startswith("f8") or dtype.startswith("f4") else 4
        n = math.prod(int(d) for d in dims.replace(" ", "").split(",") if d)
        total += n * size
    return total


def module_devices(text: str) -> int:
    """Devices an HLO module runs on: ``num_partitions`` x ``replica_count``."""
    header = text[: text.find("\n")] if "\n" in text else text
    parts = re.search(r"num_partitions=(\d+)", header)
    replicas = re.search(r"replica_count=(\d+)", header)
    return (int(parts.group(1)) if parts else 1) * (
        int(replicas.group(1)) if replicas else 1
    )


_CALLEE = re.compile(
    r"\b(body|condition|to_apply|calls|true_computation|false_computation)=%?([\w.\-]+)"
)
_BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_CALL_KEYS = ("body=", "calls=", "to_apply=", "branch_computations=", "_computation=")


def fused_computation(instruction: Instruction) -> str | None:
    """The computation a fusion instruction calls (its ``calls=`` attribute)."""
    for key, callee in _CALLEE.findall(instruction.tail):
        if key == "calls":
            return callee
    return None


def callees(instruction: Instruction) -> list[tuple[str, int | None]]:
    """The computations ``instruction`` calls, each with how often per execution
    of it: a while body or condition its known trip count (None if unknown), every
    other callee (call, conditional branch, fusion, reducer) once."""
    tail = instruction.tail
    if not any(key in tail for key in _CALL_KEYS):
        return []
    trip_match = _TRIP.search(tail)
    trip = int(trip_match.group(1)) if trip_match else None
    out: list[tuple[str, int | None]] = []
    for key, callee in _CALLEE.findall(tail):
        out.append((callee, trip if key in ("body", "condition") else 1))
    branches = _BRANCHES.search(tail)
    if branches:
        out.extend((c.strip().lstrip("%"), 1) for c in branches.group(1).split(","))
    return out


def computation_runs(instrs: Iterable[Instruction]) -> dict[str, int | None]:
    """How many times each called computation runs per execution of the module:
    its callers' count times the call's (None where a loop's length is unknown)."""
    edges: dict[str, list[tuple[str, int | None]]] = {}
    for instruction in instrs:
        calls = callees(instruction)
        if calls:
            edges.setdefault(instruction.computation, []).extend(calls)
    called = {c for targets in edges.values() for c, _ in targets}
    runs: dict[str, int | None] = {}
    stack: list[tuple[str, int | None]] = [(r, 1) for r in edges if r not in called]
    seen = 0
    while stack and seen < 100_000:
        seen += 1
        computation, count = stack.pop()
        if computation in runs:
            continue
        runs[computation] = count
        for callee, factor in edges.get(computation, []):
            if callee not in runs:
                sub = None if count is None or factor is None else count * factor
                stack.append((callee, sub))
    return runs


# ------------------------------------------------------------------ device groups

_IOTA = re.compile(r"^\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")


def _ints(text: str) -> list[int]:
    return [int(d) for d in text.split(",")]


def _iota(match: re.Match[str]) -> np.ndarray:
    """The device ids of an iota list ``[dims]<=[reshape]T(perm)``, shaped ``dims``."""
    dims, reshape = _ints(match.group(1)), _ints(match.group(2))
    ids = np.arange(math.prod(reshape)).reshape(reshape)
    if match.group(3):
        ids = ids.transpose(_ints(match.group(3)))
    return ids.reshape(dims)


def parse_replica_groups(text: str) -> tuple[tuple[int, ...], ...] | None:
    """Replica groups from any of XLA's three spellings, or None if not decoded.

    ``{{0,1},{2,3}}``; iota ``[2,2]<=[4]`` / ``[2,4]<=[4,2]T(1,0)``; and
    ``mesh['axis_0'=4,'axis_1'=2] {'axis_0'}`` (groups vary the listed axes).
    ``{}`` (every device in one group) is ``()``.
    """
    text = text.strip()
    try:
        if text.startswith("{"):
            inner = re.findall(r"\{([\d,\s]*)\}", text[1:-1])
            if not inner and text == "{}":
                return ()
            return tuple(
                tuple(int(i) for i in g.replace(" ", "").split(",") if i) for g in inner
            )
        iota = _IOTA.match(text)
        if iota is not None:
            ids = _iota(iota)
            return tuple(
                tuple(int(i) for i in row) for row in ids.reshape(len(ids), -1)
            )
        if text.startswith("mesh["):
            return _mesh_groups(text)
    except (ValueError, IndexError):
        return None
    return None


def _mesh_groups(text: str) -> tuple[tuple[int, ...], ...] | None:
    axes = re.findall(r"'([^']+)'=(\d+)", text[: text.index("]") + 1])
    names = [a for a, _ in axes]
    sizes = [int(s) for _, s in axes]
    rest = text[text.index("]") + 1 :]
    wanted = re.findall(r"'([^']+)'", rest[rest.find("{") :])
    if any(w not in names for w in wanted) or ":" in rest:
        return None
    ids = np.arange(math.prod(sizes)).reshape(sizes)
    keep = [i for i, n in enumerate(names) if n not in wanted]
    vary = [names.index(w) for w in wanted]
    size = math.prod(sizes[i] for i in vary)
    rows = ids.transpose(keep + vary).reshape(-1, size)
    return tuple(tuple(int(i) for i in row) for row in rows)


def parse_pairs(text: str) -> tuple[tuple[int, ...], ...] | None:
    """``source_target_pairs={{0,1},{1,0}}`` as ``((0, 1), (1, 0))``."""
    try:
        return tuple(
            tuple(int(i) for i in p.split(","))
            for p in re.findall(r"\{(\d+,\d+)\}", text)
        )
    except ValueError:
        return None


# ------------------------------------------------------------------ sharding={...}


@dataclass(frozen=True, slots=True, eq=False)
class HloSharding:
    """A ``sharding={...}`` attribute.

    ``kind`` is ``"replicated"``, ``"manual"`` (inside shard_map), ``"maximal"`` (all
    on ``device``), ``"tuple"`` (one sharding per tuple element, not decoded) or
    ``"tiled"``: ``tiles`` holds the logical device id of each tile, and its first
    ``data_dims`` dimensions split the array (the others replicate it).
    """

    kind: str
    device: int | None = None
    tiles: np.ndarray | None = None
    data_dims: int = 0


def parse_sharding(text: str) -> HloSharding | None:
    """``{devices=[4,1,2]<=[8] last_tile_dim_replicate}`` and the other spellings
    as an ``HloSharding``; None for what is not decoded."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    if body.startswith("{"):
        return HloSharding("tuple")
    if body in ("replicated", "manual"):
        return HloSharding(body)
    maximal = re.match(r"maximal device=(\d+)", body)
    if maximal:
        return HloSharding("maximal", device=int(maximal.group(1)))
    if not body.startswith("devices="):
        return None
    rest = body[len("devices=") :]
    iota = _IOTA.match(rest)
    try:
        if iota is not None:
            tiles, tail = _iota(iota), rest[iota.end() :]
        else:
            explicit = re.match(r"^\[([\d,]+)\]([\d,]+)", rest)
            if explicit is None:
                return None
            tiles = np.array(_ints(explicit.group(2))).reshape(_ints(explicit.group(1)))
            tail = rest[explicit.end() :]
    except ValueError:
        return None
    data_dims = tiles.ndim
    if "last_tile_dim_replicate" in tail:
        data_dims -= 1
    subgroups = re.search(r"last_tile_dims=\{([^}]*)\}", tail)
    if subgroups:
        data_dims -= len([s for s in subgroups.group(1).split(",") if s.strip()])
    return HloSharding("tiled", tiles=tiles, data_dims=data_dims)
