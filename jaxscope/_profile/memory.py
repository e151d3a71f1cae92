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

from jaxscope._checks import check_count, takes_the_function_alone
from jaxscope._display import Renderable, printable
from jaxscope._exceptions import InvalidCallError
from jaxscope._format import format_bytes, plural
from jaxscope._hlo.view import HloView
from jaxscope._profile.at_peak import (
    ARGUMENT_KINDS,
    KINDS,
    BufferNamer,
    line_memory,
)
from jaxscope._profile.buffers import BufferDump, compile_with_dump
from jaxscope._profile.compiling import lower, optimized_view, stage_call
from jaxscope._profile.donation import donation_findings
from jaxscope._profile.hlo_facts import ModuleFacts
from jaxscope._profile.peak import find_peak
from jaxscope._profile.records import Buffer, MemoryFinding
from jaxscope._profile.source import SourceBlock, source_blocks
from jaxscope._records import SourceLoc
from jaxscope._source import loc_of_function, short_path
from jaxscope._staging import staged
from jaxscope.compat import libraries as _clib


class MemoryView(Renderable):
    """Where the bytes of a compiled call are at its memory peak.

    Attributes:
        peak_bytes: bytes live at the peak (arguments, outputs, and the
            temporaries live at that point of the schedule).
        peak_position, peak_op: the schedule position of the peak and the
            instruction running there; ``peak_source`` its line.
        buffers: every ``Buffer`` at the peak, largest first: each with its own
            size (``bytes``) and kind; their ``peak_bytes`` add up to ``peak_bytes``.
        kinds: bytes at the peak per buffer kind (``argument``, ``donated``,
            ``optimizer_state``, ``output``, ``residual``, ``temporary``,
            ``constant``), largest kinds first; they add up to ``peak_bytes``.
        lines: ``LineMemory`` per source line (buffers its ops define), largest
            first; ``by_line`` keys them by ``(file, line)``.
        argument_bytes, output_bytes, alias_bytes: as XLA assigned them
            (``alias_bytes``: outputs written into donated arguments).
        temp_bytes: XLA's temporary allocations, whole; ``temp_live_bytes`` the
            temporaries live at the peak.
        timeline: bytes live at each position of the schedule.
        estimated: True when XLA gave no live ranges (temporaries counted whole).
        hlo: the optimized ``HloView``; ``analysis`` its ``memory_analysis()``.
        findings: ``MemoryFinding`` s about donation: an argument returned updated
            but not donated, a donated argument no output can reuse.
    """

    def __init__(
        self,
        *,
        hlo: HloView,
        module: ModuleFacts,
        dump: BufferDump,
        function_name: str = "",
        input_names: tuple[str, ...] = (),
        findings: Sequence[MemoryFinding] = (),
    ) -> None:
        self.hlo, self.module, self.function_name = hlo, module, function_name
        self.findings = list(findings)
        peak = find_peak(dump)
        self.peak_bytes, self.peak_position = peak.bytes, peak.position
        self.temp_live_bytes, self.timeline = peak.temp, peak.live
        self.estimated = peak.estimated
        schedule = dump.schedule
        self.peak_op = schedule[peak.position] if peak.position < len(schedule) else ""
        facts = module.ops.get(self.peak_op)
        self.peak_source: SourceLoc | None = facts.line if facts is not None else None
        sizes = dict.fromkeys(("parameter", "output", "temp", "donated"), 0)
        for a in dump.allocations:
            if a.kind in sizes:
                sizes[a.kind] += a.size
            if a.kind == "parameter" and a.live_out:
                sizes["donated"] += a.size
        self.argument_bytes, self.temp_bytes = sizes["parameter"], sizes["temp"]
        self.alias_bytes = sizes["donated"]
        self.output_bytes = sizes["output"] + self.alias_bytes
        self.buffers = BufferNamer(module, dump, input_names).buffers(peak)
        self.lines = line_memory(self.buffers, self.peak_bytes, self.code)
        self.by_line = {m.key: m for m in self.lines}
        kinds: dict[str, int] = dict.fromkeys(KINDS, 0)
        for b in self.buffers:
            kinds[b.kind] = kinds.get(b.kind, 0) + b.peak_bytes
        self.kinds = {k: v for k, v in kinds.items() if v}
        self.show_top = 15

    @property
    def analysis(self) -> dict[str, int | None] | None:
        return self.hlo.memory

    @property
    def arguments(self) -> list[Buffer]:
        return [b for b in self.buffers if b.kind in ARGUMENT_KINDS]

    def largest(self, n: int = 10) -> list[Buffer]:
        """The ``n`` largest buffers live at the peak."""
        check_count(
            n, "n", low=0, where="MemoryView.largest", example="view.largest(5)"
        )
        return self.buffers[:n]

    def buffers_at(self, file: str, line: int) -> list[Buffer]:
        """The buffers at the peak that ``file:line`` defines (arguments aside)."""
        return [
            b
            for b in self.buffers
            if b.source is not None
            and b.source.key == (file, line)
            and b.kind not in ARGUMENT_KINDS
        ]

    def code(self, file: str, line: int) -> str:
        """The source text of ``file:line`` (stripped), or ``""``."""
        return self.hlo.source_line(file, line)

    def source_blocks(self) -> list[SourceBlock]:
        """The source shown by the displays: every line with bytes at the peak."""
        return source_blocks((m.key for m in self.lines), self.hlo.raw_file)

    def __repr__(self) -> str:
        name = f" of {printable(self.function_name)}" if self.function_name else ""
        return (
            f"<MemoryView{name}: peak {self.peak_bytes} bytes, "
            f"{plural(len(self.buffers), 'buffer')}>"
        )


def memory_of_lowered(
    lowered: Any,
    function_name: str = "",
    input_names: tuple[str, ...] = (),
    findings: Sequence[MemoryFinding] = (),
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
        findings=findings,
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
    findings: list[MemoryFinding] = []
    if not (_clib.is_nnx_jit(fun) or _clib.is_equinox_filter_jit(fun)):
        # the fixes are jax.jit's donate_argnames; nnx.jit / eqx.filter_jit donate
        # their own way
        try:
            findings = donation_findings(
                call.lowered,
                call.input_names,
                source=loc_of_function(fun),
                function=call.function_name or "the function",
            )
        except Exception:  # a finding is extra: its failure never stops the view
            findings = []
    return memory_of_lowered(
        call.lowered, call.function_name, call.input_names, findings
    )


@takes_the_function_alone
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


#: a line holding this share of the peak in saved residuals is worth a checkpoint
RESIDUAL_SHARE = 0.25


def out_of_memory_facts(
    view: MemoryView, limit: int = 3
) -> tuple[list[str], list[str]]:
    """For an out-of-memory report: ``(facts, fixes)`` from the compiled model of
    the call. Facts: the peak by kind and its largest lines. Fixes, those that
    apply: checkpoint the lines whose saved residuals hold a large share of the
    peak, the donation findings, then a smaller batch and sharding."""
    peak = view.peak_bytes
    kinds = sorted(view.kinds.items(), key=lambda kv: -kv[1])
    facts = [
        f"memory peak {format_bytes(peak)} (compiled, never run): "
        + ", ".join(f"{k} {format_bytes(n)}" for k, n in kinds)
    ]
    if view.lines:
        facts.append(
            "peak by line: "
            + ", ".join(
                f"{short_path(m.file)}:{m.line} {format_bytes(m.bytes)}"
                for m in view.lines[:limit]
            )
        )
    fixes: list[str] = []
    saved: dict[tuple[str, int], int] = {}
    for b in view.buffers:
        if b.kind == "residual" and b.source is not None:
            saved[b.source.key] = saved.get(b.source.key, 0) + b.peak_bytes
    for (file, line), held in sorted(saved.items(), key=lambda kv: -kv[1])[:limit]:
        if peak and held >= RESIDUAL_SHARE * peak:
            fixes.append(
                f"{short_path(file)}:{line} keeps {format_bytes(held)} for the "
                "backward pass: wrap its layer in jax.checkpoint (nnx.remat, "
                "eqx.filter_checkpoint) to recompute it instead"
            )
    fixes += [f.fix[0].upper() + f.fix[1:] for f in view.findings if f.bytes]
    largest = view.largest(1)
    if largest and largest[0].kind in ARGUMENT_KINDS:
        fixes.append(
            f"the largest buffer is the argument {largest[0].argument} "
            f"({format_bytes(largest[0].bytes)}): shard it over devices "
            "(jax.device_put with a NamedSharding) or pass a smaller batch"
        )
    return facts, fixes
