"""Each op's sharding after XLA's sharding propagation, read from HLO text.

Where an op came from is what every other view says: the innermost frame of its
stack in the user's own code (``_hlo.ops.LocResolver``), the library frames kept as
detail (``frames``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxscope._hlo.ops import module_resolver
from jaxscope._hlo.parse import (
    Instruction,
    inline_frame,
    instructions,
    iter_lines,
    op_name,
    read_frame_tables,
    stack_frame_id,
)
from jaxscope._records import SourceLoc
from jaxscope._sharding.mesh import spec_of_hlo_sharding
from jaxscope._source import display_filename

# Ops that move or name data without computing: folded into a count in the views
# (``all=True`` / ``--all`` lists them), as XLA's copies made half of an MLP's rows.
BOOKKEEPING_OPCODES = frozenset(
    {
        "copy",
        "copy-start",
        "copy-done",
        "bitcast",
        "tuple",
        "get-tuple-element",
        "parameter",
        "constant",
        "opt-barrier",
        "after-all",
        "partition-id",
        "replica-id",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpSharding:
    """The sharding XLA chose for one op (after propagation, before partitioning).

    ``sharding`` is XLA's own text (``{devices=[4,1,2]<=[8] last_tile_dim_replicate}``);
    ``spec`` is the same in mesh-axis terms (``"P('data', None)"``) where it maps onto
    the program's mesh, else None. ``shape`` is the global shape.
    """

    name: str
    opcode: str
    sharding: str
    source: SourceLoc | None
    shape: str = ""
    spec: str | None = None
    op_name: str = ""
    frames: tuple[SourceLoc, ...] = field(default=(), compare=False)
    """The op's call stack, innermost first, libraries' frames included
    (``source`` is the innermost one in the user's own code)."""
    operands: tuple[str, ...] = field(default=(), compare=False)
    """The names of the op's operands (other ops of the same module)."""
    dims: str = field(default="", compare=False)
    """The op's dimension attributes as XLA prints them (a dot's
    ``lhs_contracting_dims={1}, rhs_contracting_dims={0}``, a reduce's
    ``dimensions={0}``); "" for other ops."""


def parse_stack_frames(text: str) -> dict[int, SourceLoc]:
    """``stack_frame_id`` -> the innermost ``SourceLoc`` of that frame (jax >= 0.9).

    The tables precede the computations, so only the head of ``text`` is read; a
    frame's own location is its innermost one.
    """
    table = read_frame_tables(iter_lines(text))
    shown: dict[str, str] = {}
    frames: dict[int, SourceLoc] = {}
    for key in table.stack_frames:
        frame = table.frame(key)
        if frame is None or frame.line <= 0:
            continue
        file = shown.get(frame.file)
        if file is None:
            file = shown[frame.file] = display_filename(frame.file)
        frames[key] = SourceLoc(
            file=file,
            line=frame.line,
            column=frame.column if frame.column >= 0 else None,
            function=frame.function,
        )
    return frames


def source_of(metadata: str, frames: dict[int, SourceLoc]) -> SourceLoc | None:
    """The ``SourceLoc`` of an op's metadata (compact or old inline form)."""
    frame_id = stack_frame_id(metadata)
    if frame_id is not None:
        return frames.get(frame_id)
    frame = inline_frame(metadata)
    if frame is not None:
        return SourceLoc(file=display_filename(frame.file), line=frame.line)
    return None


def parse_op_shardings(
    text: str, mesh: dict[str, int] | None = None
) -> list[OpSharding]:
    """Every instruction carrying a ``sharding=`` attribute, with its spec and source."""
    return [op for op in parse_module_ops(text, mesh) if op.sharding]


def parse_module_ops(
    text: str,
    mesh: dict[str, int] | None = None,
    raw_files: dict[str, str] | None = None,
) -> list[OpSharding]:
    """Every instruction of the module, ``sharding`` "" where it carries none;
    ``raw_files`` (if given) learns each shown file's name as JAX recorded it."""
    lines = text.splitlines()
    resolver = module_resolver(lines)
    if raw_files is not None:
        resolver.raw_files = raw_files
    out = []
    for instr in instructions(lines):
        raw = instr.attr("sharding") if "sharding={" in instr.tail else None
        metadata = instr.metadata
        source, frames = resolver.located_metadata(metadata)
        out.append(
            OpSharding(
                name=instr.name,
                opcode=instr.opcode,
                sharding=raw or "",
                source=source,
                shape=instr.shape,
                spec=spec_of_hlo_sharding(raw, mesh) if raw else None,
                op_name=op_name(metadata),
                frames=frames,
                operands=tuple(instr.operands),
                dims=_dims(instr),
            )
        )
    return out


_DIM_ATTRS = ("lhs_contracting_dims", "rhs_contracting_dims", "dimensions")


def _dims(instr: Instruction) -> str:
    if instr.opcode not in ("dot", "reduce", "all-gather", "transpose", "concatenate"):
        return ""
    found = ((key, instr.attr(key)) for key in _DIM_ATTRS)
    return ", ".join(f"{key}={value}" for key, value in found if value is not None)
