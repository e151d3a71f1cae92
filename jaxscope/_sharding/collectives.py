"""Every collective XLA inserted into a partitioned program, read from its HLO text.

For each: the bytes one device hands to it, its replica groups and the mesh axes they
span, how often it runs per call (loops counted), and the user's source line.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from jaxscope._format import format_bytes, plural
from jaxscope._hlo.ops import LocResolver, module_resolver
from jaxscope._hlo.parse import (
    Instruction,
    computation_runs,
    instructions,
    module_devices,
    op_name,
    parse_pairs,
    parse_replica_groups,
    shape_bytes,
)
from jaxscope._records import SourceLoc
from jaxscope._sharding.mesh import axes_of_groups_cached, axes_of_pairs

COLLECTIVE_KINDS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)
_OPCODE_KIND = {k: k for k in COLLECTIVE_KINDS}
_OPCODE_KIND.update(
    {
        "all-reduce-start": "all-reduce",
        "all-gather-start": "all-gather",
        "collective-permute-start": "collective-permute",
        "ragged-all-to-all": "all-to-all",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectiveReason:
    """Why one collective is there.

    Attributes:
        text: the reason in words, with the line, the operands' shardings, the mesh
            axes and the bytes (``"`x @ w` at model.py:42 contracts over `model`,
            which splits both operands (...): an all-reduce over `model` adds the
            partial results, 2 MiB per device per step"``).
        asked: what the user called to ask for it (``"psum"``,
            ``"with_sharding_constraint"``), "" when the partitioner inserted it.
        op: the opcode of the op it serves (``"dot"``, ``"reduce"``), "" if unknown.
        operands: that op's operands as sharded types (``"f32[64@data,32@model]"``).
        result: that op's result as a sharded type.
        axes: the mesh axes the collective runs over.
        dims: the served op's dimensions the collective is about (a dot's
            contracting dimensions, a reduce's reduced ones, a gathered dimension).
        suggestion: a change that removes or shrinks it, where one is known.
        lines: the user lines of the ops XLA combined into this one collective
            (more than one when XLA merged several).
    """

    text: str
    asked: str = ""
    op: str = ""
    operands: tuple[str, ...] = ()
    result: str = ""
    axes: tuple[str, ...] = ()
    dims: tuple[int, ...] = ()
    suggestion: str = ""
    lines: tuple[SourceLoc, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Collective:
    """One collective XLA inserted into the partitioned program.

    ``bytes`` is what one device hands to it: the larger of its per-device input and
    output buffers. ``replica_groups`` are logical device ids (positions in the
    program's device assignment), or (source, target) pairs for collective-permute;
    None where XLA's text could not be decoded (``groups_text`` keeps the raw text).
    ``axes`` are the mesh axes the groups span, where they match the program's mesh.
    A collective inside a loop body is listed once; ``runs`` is how many times it
    runs per call of the program (the product of the enclosing loops' trip counts as
    XLA knows them, 1 outside loops, None inside a loop of unknown length).
    """

    name: str
    kind: str
    bytes: int
    replica_groups: tuple[tuple[int, ...], ...] | None
    source: SourceLoc | None
    shape: str = ""
    groups_text: str = ""
    axes: tuple[str, ...] | None = None
    op_name: str = ""
    computation: str = ""
    runs: int | None = 1
    frames: tuple[SourceLoc, ...] = field(default=(), compare=False)
    """The call stack, innermost first, libraries' frames included (``source`` is
    the innermost one in the user's own code)."""
    reason: CollectiveReason | None = field(default=None, compare=False)
    """Why it is there (``js.shardings`` fills it in; None when parsed alone)."""

    @property
    def total_bytes(self) -> int:
        """``bytes`` times ``runs`` (one run where the loop length is unknown)."""
        return self.bytes * (self.runs if self.runs is not None else 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class LineSummary:
    """All collectives attributed to one source line."""

    source: SourceLoc | None
    counts: dict[str, int]
    bytes: int

    @property
    def text(self) -> str:
        """``"In [3]:42: 2 all-gathers, 1 all-reduce, 48 MiB"``."""
        where = f"line {self.source}" if self.source is not None else "unknown line"
        parts = [plural(n, kind) for kind, n in self.counts.items()]
        return f"{where}: {', '.join(parts)}, {format_bytes(self.bytes)}"


def line_summary(collectives: Sequence[Collective]) -> list[LineSummary]:
    """One ``LineSummary`` per source line (unknown lines together), heaviest first."""
    groups: dict[tuple[str, int] | None, list[Collective]] = {}
    locs: dict[tuple[str, int] | None, SourceLoc | None] = {}
    for c in collectives:
        key = c.source.key if c.source is not None else None
        groups.setdefault(key, []).append(c)
        locs.setdefault(key, c.source)
    rows = []
    for key, items in groups.items():
        counts: dict[str, int] = {}
        for kind in COLLECTIVE_KINDS:
            n = sum(1 for c in items if c.kind == kind)
            if n:
                counts[kind] = n
        total = sum(c.total_bytes for c in items)
        rows.append(LineSummary(source=locs[key], counts=counts, bytes=total))
    rows.sort(key=lambda r: (-r.bytes, str(r.source)))
    return rows


_groups_cached = functools.lru_cache(maxsize=1024)(parse_replica_groups)


def _payload_bytes(instr: Instruction, shapes: dict[tuple[str, str], str]) -> int:
    """The larger of one device's input and output buffers of a collective."""
    operand_bytes = sum(
        shape_bytes(shapes.get((instr.computation, o), "")) for o in instr.operands
    )
    result_bytes = shape_bytes(instr.shape)
    if instr.opcode.endswith("-start") and result_bytes > operand_bytes:
        # async starts return (operands, results, ...) tuples: the result alone
        result_bytes -= operand_bytes
    return max(operand_bytes, result_bytes)


def _groups(
    instr: Instruction, kind: str, n_devices: int, mesh: dict[str, int] | None
) -> tuple[str, tuple[tuple[int, ...], ...] | None, tuple[str, ...] | None]:
    """A collective's groups as printed, decoded, and the mesh axes they span."""
    if kind == "collective-permute":
        text = instr.attr("source_target_pairs") or ""
        pairs = parse_pairs(text)
        return text, pairs, axes_of_pairs(pairs, mesh)
    text = instr.attr("replica_groups") or ""
    groups = _groups_cached(text) if text else None
    if groups == () and n_devices > 1:
        groups = (tuple(range(n_devices)),)  # {}: every device in one group
    mesh_items = tuple(mesh.items()) if mesh else None
    return text, groups, axes_of_groups_cached(groups, mesh_items)


def parse_collectives(
    text: str,
    resolver: LocResolver | None = None,
    mesh: dict[str, int] | None = None,
) -> list[Collective]:
    """Every collective in an (optimized, partitioned) HLO module's text."""
    lines = text.splitlines()
    if resolver is None:
        resolver = module_resolver(lines)
    instrs = list(instructions(lines))
    shapes = {(i.computation, i.name): i.shape for i in instrs}
    runs = computation_runs(instrs)
    n_devices = module_devices(text)
    out = []
    for instr in instrs:
        kind = _OPCODE_KIND.get(instr.opcode)
        if kind is None:
            continue
        groups_text, groups, axes = _groups(instr, kind, n_devices, mesh)
        metadata = instr.metadata
        source, frames = resolver.located_metadata(metadata)
        out.append(
            Collective(
                name=instr.name,
                kind=kind,
                bytes=_payload_bytes(instr, shapes),
                replica_groups=groups,
                source=source,
                shape=instr.shape,
                groups_text=groups_text,
                axes=axes,
                op_name=op_name(metadata),
                computation=instr.computation,
                runs=runs.get(instr.computation, 1),
                frames=frames,
            )
        )
    return out
