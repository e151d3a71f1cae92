"""The buffers live at the memory peak as ``Buffer`` records, and their bytes per
source line: XLA's allocations and values named in the user's terms."""

from __future__ import annotations

import re
from collections.abc import Callable

from jaxscope._hlo.parse import short_shape
from jaxscope._profile.buffers import Allocation, BufferDump, Value
from jaxscope._profile.hlo_facts import ModuleFacts
from jaxscope._profile.peak import Held, Peak, owner
from jaxscope._profile.records import Buffer, LineMemory
from jaxscope._records import SourceLoc

#: what a buffer live at the peak is, by what it holds (never by the allocation
#: it shares): the inputs, the values the program returns, forward values kept
#: for the backward pass, and the rest
KINDS = (
    "argument",
    "donated",
    "optimizer_state",
    "output",
    "residual",
    "temporary",
    "constant",
)
ARGUMENT_KINDS = ("argument", "donated", "optimizer_state")
# an argument whose name says it is an optimizer's state: Optax's ``opt_state``
# (``opt_state[0].mu['w']``), ``nnx.Optimizer``'s ``optimizer.opt_state...``
_OPTIMIZER = re.compile(
    r"^(opt|optim|optimizer|opt_state|optimizer_state|optstate)\b|[.\[']opt_state\b"
)


def is_optimizer_state(name: str) -> bool:
    """Whether an argument's name (its parameter, then pytree path) says it is
    optimizer state."""
    return _OPTIMIZER.search(name) is not None


class BufferNamer:
    """Turns the ``Held`` buffers of a ``Peak`` into ``Buffer`` records."""

    def __init__(
        self, module: ModuleFacts, dump: BufferDump, input_names: tuple[str, ...] = ()
    ) -> None:
        self.module = module
        self.dump = dump
        self.input_names = input_names
        self.end = max((last for _, last in dump.ranges.values()), default=0)

    def buffers(self, peak: Peak) -> list[Buffer]:
        """Every buffer live at the peak, largest first."""
        out = [self.buffer(held) for held in peak.at_peak]
        out.sort(key=lambda b: (-b.bytes, b.name))
        return out

    def kind(self, allocation: Allocation, value: Value | None) -> str:
        """What ``value`` is: its own kind, whatever allocation it sits in."""
        facts = self.module.ops.get(value.instruction) if value is not None else None
        opcode = facts.op.opcode if facts is not None else ""
        if allocation.kind == "parameter" and (
            value is None
            or opcode == "parameter"
            or value == owner(allocation, self.dump)
        ):
            if is_optimizer_state(self._argument(allocation)):
                return "optimizer_state"
            return "donated" if allocation.live_out else "argument"
        if allocation.kind == "constant" or opcode == "constant":
            return "constant"
        if allocation.live_out and value is not None:
            live = self.dump.ranges.get(value.name)
            if (
                live is None
                or live[1] >= self.end
                or value == owner(allocation, self.dump)
            ):
                return "output"
        if allocation.kind == "output" and value is None:
            return "output"
        if value is not None and self.module.is_residual(value.instruction):
            return "residual"
        return "temporary"

    def buffer(self, held: Held) -> Buffer:
        allocation, value = held.allocation, held.value
        kind = self.kind(allocation, value)
        instruction = value.instruction if value is not None else ""
        facts = self.module.ops.get(instruction)
        return Buffer(
            name=value.name.removesuffix("{}")
            if value
            else f"allocation {allocation.index}",
            op=instruction,
            opcode=facts.op.opcode if facts is not None else "",
            shape=short_shape(value.shape) if value is not None else "",
            bytes=held.bytes,
            kind=kind,
            source=facts.line if facts is not None else None,
            argument=self._argument(allocation) if kind in ARGUMENT_KINDS else None,
            live=self.dump.ranges.get(value.name, (0, 0)) if value else (0, 0),
            allocation=allocation.index,
            peak_bytes=held.counted,
            live_at_peak=held.live,
            donated=allocation.kind == "parameter" and allocation.live_out,
        )

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
            kinds[b.kind] = kinds.get(b.kind, 0) + b.peak_bytes
        total = sum(b.peak_bytes for b in mine)
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
