"""``js.memory(f)(*args)``: the memory peak of a compiled call, per buffer and line.

Nothing is run: the call is compiled with XLA's buffer-assignment dump on
(``buffers.py``) and the peak found over the schedule (``peak.py``). The peak agrees
with ``Compiled.memory_analysis()`` (arguments + outputs + temporaries - aliased);
it is lower only where XLA's temporary arena has gaps at its own peak.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from jaxscope._display import Renderable
from jaxscope._exceptions import InvalidCallError
from jaxscope._hlo.parse import short_shape
from jaxscope._hlo.view import HloView
from jaxscope._profile.buffers import Allocation, BufferDump, Value, compile_with_dump
from jaxscope._profile.compiling import lower, optimized_view, stage_call
from jaxscope._profile.hlo_facts import ModuleFacts
from jaxscope._profile.peak import Peak, find_peak
from jaxscope._profile.records import Buffer, LineMemory
from jaxscope._profile.source import SourceBlock, source_blocks
from jaxscope._records import SourceLoc
from jaxscope._staging import staged

_KIND_OF_ALLOCATION = {"parameter": "argument", "output": "output", "temp": "temporary"}


class MemoryView(Renderable):
    """Where the bytes of a compiled call are at its memory peak.

    Attributes:
        peak_bytes: bytes live at the peak (arguments, outputs, and the
            temporaries live at that point of the schedule).
        peak_position, peak_op: the schedule position of the peak and the
            instruction running there; ``peak_source`` its line.
        buffers: every ``Buffer`` live at the peak, largest first.
        lines: ``LineMemory`` per source line (buffers its ops define), largest
            first; ``by_line`` keys them by ``(file, line)``.
        argument_bytes, output_bytes, alias_bytes: as XLA assigned them
            (``alias_bytes``: outputs written into donated arguments).
        temp_bytes: XLA's temporary allocations, whole; ``temp_live_bytes`` the
            temporaries live at the peak.
        timeline: bytes live at each position of the schedule.
        analysis: ``Compiled.memory_analysis()`` as ``HloView.memory`` gives it.
        hlo: the optimized ``HloView``.
    """

    __slots__ = (
        "_dump",
        "_peak",
        "function_name",
        "hlo",
        "input_names",
        "module",
        "show_top",
    )

    def __init__(
        self,
        *,
        hlo: HloView,
        module: ModuleFacts,
        dump: BufferDump,
        function_name: str = "",
        input_names: tuple[str, ...] = (),
    ) -> None:
        self.hlo = hlo
        self.input_names = input_names
        self.module = module
        self._dump = dump
        self._peak: Peak = find_peak(dump)
        self.function_name = function_name
        self.show_top = 15

    @property
    def peak_bytes(self) -> int:
        return self._peak.bytes

    @property
    def peak_position(self) -> int:
        return self._peak.position

    @property
    def peak_op(self) -> str:
        schedule = self._dump.schedule
        position = self._peak.position
        return schedule[position] if 0 <= position < len(schedule) else ""

    @property
    def peak_source(self) -> SourceLoc | None:
        facts = self.module.ops.get(self.peak_op)
        return facts.line if facts is not None else None

    @property
    def estimated(self) -> bool:
        """True when XLA gave no live ranges (temporaries are counted whole)."""
        return self._peak.estimated

    def _sizes(self, *kinds: str, live_out: bool | None = None) -> int:
        return sum(
            a.size
            for a in self._dump.allocations
            if a.kind in kinds and (live_out is None or a.live_out == live_out)
        )

    @property
    def argument_bytes(self) -> int:
        return self._sizes("parameter")

    @property
    def output_bytes(self) -> int:
        return self._sizes("output") + self.alias_bytes

    @property
    def alias_bytes(self) -> int:
        return self._sizes("parameter", live_out=True)

    @property
    def temp_bytes(self) -> int:
        return self._sizes("temp")

    @property
    def temp_live_bytes(self) -> int:
        return self._peak.temp

    @property
    def timeline(self) -> tuple[int, ...]:
        return self._peak.live

    @property
    def analysis(self) -> dict[str, int | None] | None:
        return self.hlo.memory

    @property
    def buffers(self) -> list[Buffer]:
        out = [self._buffer(a, v, size) for a, v, size in self._peak.at_peak]
        out.sort(key=lambda b: (-b.bytes, b.name))
        return out

    def largest(self, n: int = 10) -> list[Buffer]:
        """The ``n`` largest buffers live at the peak."""
        return self.buffers[:n]

    @property
    def arguments(self) -> list[Buffer]:
        return [b for b in self.buffers if b.kind in ("argument", "donated")]

    @property
    def lines(self) -> list[LineMemory]:
        table: dict[tuple[str, int], list[Buffer]] = {}
        for buffer in self.buffers:
            if buffer.source is not None and buffer.kind not in ("argument", "donated"):
                table.setdefault(buffer.source.key, []).append(buffer)
        peak = self.peak_bytes
        out: list[LineMemory] = []
        for (file, line), buffers in table.items():
            kinds: dict[str, int] = {}
            for b in buffers:
                kinds[b.kind] = kinds.get(b.kind, 0) + b.bytes
            total = sum(b.bytes for b in buffers)
            out.append(
                LineMemory(
                    file=file,
                    line=line,
                    function=buffers[0].source.function if buffers[0].source else None,
                    code=self.code(file, line),
                    bytes=total,
                    share=total / peak if peak else 0.0,
                    buffers=tuple(b.name for b in buffers),
                    kinds=kinds,
                )
            )
        out.sort(key=lambda m: (-m.bytes, m.file, m.line))
        return out

    @property
    def by_line(self) -> dict[tuple[str, int], LineMemory]:
        return {m.key: m for m in self.lines}

    def code(self, file: str, line: int) -> str:
        """The source text of ``file:line`` (stripped), or ``""``."""
        return self.hlo.source_line(file, line)

    def source_blocks(self) -> list[SourceBlock]:
        """The source shown by the displays: every line with bytes at the peak."""
        return source_blocks(m.key for m in self.lines)

    def _buffer(self, allocation: Allocation, value: Value | None, size: int) -> Buffer:
        kind = _KIND_OF_ALLOCATION.get(allocation.kind, allocation.kind)
        if allocation.kind == "parameter" and allocation.live_out:
            kind = "donated"
        value = self._described_by(allocation, value)
        name = value.name if value is not None else f"allocation {allocation.index}"
        instruction = value.instruction if value is not None else ""
        facts = self.module.ops.get(instruction)
        argument = None
        if allocation.kind == "parameter":
            argument = _argument_name(allocation, self.module, self.input_names)
        return Buffer(
            name=name.removesuffix("{}"),
            op=instruction,
            opcode=facts.op.opcode if facts is not None else "",
            shape=short_shape(value.shape) if value is not None else "",
            bytes=size,
            kind=kind,
            source=facts.line if facts is not None else None,
            argument=argument,
            live=self._dump.ranges.get(value.name, (0, 0)) if value else (0, 0),
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
        ranges = self._dump.ranges
        return max(placed, key=lambda v: ranges.get(v.name, (-1, -1))[1])

    def _line_of(self, value: Value | None) -> SourceLoc | None:
        facts = self.module.ops.get(value.instruction) if value is not None else None
        return facts.line if facts is not None else None

    def __repr__(self) -> str:
        name = f" of {self.function_name}" if self.function_name else ""
        return f"<MemoryView{name}: peak {self.peak_bytes} bytes, {len(self.buffers)} buffers>"


def _argument_name(
    allocation: Allocation, module: ModuleFacts, input_names: tuple[str, ...]
) -> str:
    """The user's name of a parameter allocation's argument (``params['w']``)."""
    number = allocation.parameter
    if number is not None and len(input_names) == module.n_parameters > number:
        return input_names[number]
    for value in allocation.values:
        facts = module.ops.get(value.instruction)
        if facts is not None and facts.op.opcode == "parameter" and facts.op.op_name:
            return facts.op.op_name
    return f"argument {allocation.parameter}"


def memory_of_lowered(
    lowered: Any, function_name: str = "", input_names: tuple[str, ...] = ()
) -> MemoryView:
    """The ``MemoryView`` of an already lowered call (compiles it, never runs it).

    ``input_names`` names the program's inputs in order (``Staged.input_names``).
    """
    compiled, dump = compile_with_dump(lowered)
    view = optimized_view(lowered, compiled, function_name)
    return MemoryView(
        hlo=view,
        module=ModuleFacts(view),
        dump=dump,
        function_name=function_name,
        input_names=input_names,
    )


def memory_call(
    fun: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    api_name: str = "js.memory",
) -> MemoryView:
    """Trace, lower and compile ``fun(*args, **kwargs)``; its ``MemoryView``."""
    call = stage_call(
        fun,
        args,
        kwargs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        api_name=api_name,
    )
    return memory_of_lowered(call.lowered, call.function_name, call.input_names)


def memory(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., MemoryView]:
    """Where a compiled call's memory goes at its peak, per buffer and source line.

    ``js.memory(f)(*args)`` compiles ``f`` for ``args`` (never runs it) with XLA's
    buffer-assignment dump and finds the point of the schedule where the most
    bytes are live: arguments, outputs (donated arguments told apart) and the
    temporaries live there, each with the op that defines it and its line.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> def f(a):
        ...     return (a @ a).sum()
        >>> view = js.memory(f)(jnp.ones((64, 64)))
        >>> view.peak_bytes >= 64 * 64 * 4
        True
    """
    return staged(
        fun,
        "js.memory",
        lambda f, args, kwargs: memory_call(
            f,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        ),
    )


def largest_buffers_at_peak(target: Any, n: int = 10) -> list[Buffer]:
    """The ``n`` largest buffers live at the memory peak of a compiled program.

    For error explainers (an out-of-memory report): ``target`` is a ``MemoryView``,
    a ``jax.stages.Lowered`` or a ``jax.stages.Traced`` (``jax.jit(f).trace(*args)``).
    Each ``Buffer`` names its bytes, kind (argument / donated / output /
    temporary), the op defining it and its source line. Nothing is executed.
    """
    if isinstance(target, MemoryView):
        return target.largest(n)
    if isinstance(target, jax.stages.Traced):
        target = lower(target)
    if not isinstance(target, jax.stages.Lowered):
        raise InvalidCallError(
            "largest_buffers_at_peak needs a MemoryView, jax.stages.Lowered or "
            f"jax.stages.Traced, got {type(target).__name__}; pass "
            "jax.jit(f).lower(*args)"
        )
    return memory_of_lowered(target).largest(n)
