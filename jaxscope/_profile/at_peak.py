"""The buffers live at the memory peak as ``Buffer`` records, and their bytes per
source line: XLA's allocations and values named in the user's terms."""

from __future__ import annotations

from collections.abc import Callable

from jaxscope._hlo.parse import short_shape
from jaxscope._profile.buffers import Allocation, BufferDump, Value
from jaxscope._profile.hlo_facts import ModuleFacts
from jaxscope._profile.peak import Peak
from jaxscope._profile.records import Buffer, LineMemory
from jaxscope._records import SourceLoc

_KIND_OF_ALLOCATION = {"parameter": "argument", "output": "output", "temp": "temporary"}
ARGUMENT_KINDS = ("argument", "donated")


class BufferNamer:
    """Turns ``(allocation, value, bytes)`` of a ``Peak`` into ``Buffer`` records."""

    def __init__(
        self, module: ModuleFacts, dump: BufferDump, input_names: tuple[str, ...] = ()
    ) -> None:
        self.module = module
        self.dump = dump
        self.input_names = input_names

    def buffers(self, peak: Peak) -> list[Buffer]:
        """Every buffer live at the peak, largest first."""
        out = [self.buffer(a, v, size) for a, v, size in peak.at_peak]
        out.sort(key=lambda b: (-b.bytes, b.name))
        return out

    def buffer(self, allocation: Allocation, value: Value | None, size: int) -> Buffer:
        kind = _KIND_OF_ALLOCATION.get(allocation.kind, allocation.kind)
        if allocation.kind == "parameter" and allocation.live_out:
            kind = "donated"
        value = self._described_by(allocation, value)
        instruction = value.instruction if value is not None else ""
        facts = self.module.ops.get(instruction)
        return Buffer(
            name=value.name.removesuffix("{}")
            if value
            else f"allocation {allocation.index}",
            op=instruction,
            opcode=facts.op.opcode if facts is not None else "",
            shape=short_shape(value.shape) if value is not None else "",
            bytes=size,
            kind=kind,
            source=facts.line if facts is not None else None,
            argument=self._argument(allocation)
            if allocation.kind == "parameter"
            else None,
            live=self.dump.ranges.get(value.name, (0, 0)) if value else (0, 0),
            allocation=allocation.index,
        )

    def _described_by(
        self, allocation: Allocation, value: Value | None
    ) -> Value | None:
        """An output allocation whose occupant at the peak has no source line (a
        loop-carried value) is described by the value it ends up holding."""
        if allocation.kind != "output" or self._line_of(value) is not None:
            return value
        placed = [v for v in allocation.values if self._line_of(v) is not None]
        if not placed:
            return value
        ranges = self.dump.ranges
        return max(placed, key=lambda v: ranges.get(v.name, (-1, -1))[1])

    def _line_of(self, value: Value | None) -> SourceLoc | None:
        facts = self.module.ops.get(value.instruction) if value is not None else None
        return facts.line if facts is not None else None

    def _argument(self, allocation: Allocation) -> str:
        """The user's name of a parameter allocation's argument (``params['w']``)."""
        number, names = allocation.parameter, self.input_names
        if number is not None and len(names) == self.module.n_parameters > number:
            return names[number]
        for value in allocation.values:
            facts = self.module.ops.get(value.instruction)
            if (
                facts is not None
                and facts.op.opcode == "parameter"
                and facts.op.op_name
            ):
                return facts.op.op_name
        return f"argument {allocation.parameter}"


def line_memory(
    buffers: list[Buffer], peak_bytes: int, code_of: Callable[[str, int], str]
) -> list[LineMemory]:
    """The bytes at the peak of each source line's buffers (arguments aside),
    largest first."""
    table: dict[tuple[str, int], list[Buffer]] = {}
    for buffer in buffers:
        if buffer.source is not None and buffer.kind not in ARGUMENT_KINDS:
            table.setdefault(buffer.source.key, []).append(buffer)
    out: list[LineMemory] = []
    for (file, line), mine in table.items():
        kinds: dict[str, int] = {}
        for b in mine:
            kinds[b.kind] = kinds.get(b.kind, 0) + b.bytes
        total = sum(b.bytes for b in mine)
        first = mine[0].source
        out.append(
            LineMemory(
                file=file,
                line=line,
                function=first.function if first is not None else None,
                code=code_of(file, line),
                bytes=total,
                share=total / peak_bytes if peak_bytes else 0.0,
                buffers=tuple(b.name for b in mine),
                kinds=kinds,
            )
        )
    out.sort(key=lambda m: (-m.bytes, m.file, m.line))
    return out
