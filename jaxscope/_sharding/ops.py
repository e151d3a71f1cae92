"""Each op's sharding after XLA's sharding propagation, read from HLO text.

Also where an HLO op came from, as the sharding views name it: the innermost frame
of its stack (``stack_frame_id`` into the ``StackFrames`` tables, or the older
inline ``source_file=`` / ``source_line=``).
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxscope._hlo.parse import (
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
    frames = parse_stack_frames(text)
    out = []
    for instr in instructions(text.splitlines(), lambda line: "sharding={" in line):
        raw = instr.attr("sharding")
        if raw is None:
            continue
        metadata = instr.metadata
        out.append(
            OpSharding(
                name=instr.name,
                opcode=instr.opcode,
                sharding=raw,
                source=source_of(metadata, frames),
                shape=instr.shape,
                spec=spec_of_hlo_sharding(raw, mesh),
                op_name=op_name(metadata),
            )
        )
    return out
