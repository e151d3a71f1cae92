"""``HloView``: the StableHLO / HLO / optimized HLO of one call, each op source-mapped."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from jaxscope._checks import check_count, check_flag
from jaxscope._display import Renderable, printable
from jaxscope._hlo.loops import Loop, flops_with_trip_counts, xla_counts_bodies_once
from jaxscope._hlo.model import HloCapture
from jaxscope._hlo.ops import source_text
from jaxscope._records import OpInfo


@dataclass(frozen=True, slots=True, kw_only=True)
class HloDisplay:
    """How an ``HloView`` displays (``str``, terminal, HTML); ``.text`` never changes.

    Attributes:
        show_cost: include the cost/memory table (``%hlo --cost``).
        expand_fused: print each fused computation in full under its fusion op
            (``%hlo --all``); by default a one-line summary stands for it.
    """

    show_cost: bool = False
    expand_fused: bool = False

    def __post_init__(self) -> None:
        for name in ("show_cost", "expand_fused"):
            check_flag(
                getattr(self, name),
                name,
                where="HloDisplay",
                example=f"HloDisplay({name}=True)",
            )


class HloView(Renderable):
    """The compiler IR of one call at one stage, each op mapped to the user's line.

    Attributes:
        stage: ``"stablehlo"``, ``"hlo"`` or ``"optimized"``.
        text: exactly what JAX prints for the stage (``Lowered.as_text()``,
            ``Lowered.as_text(dialect="hlo")`` or ``Compiled.as_text()``).
        ops: every op (``OpInfo``), ops inside fused computations included.
        by_line: ``{(file, line): [OpInfo, ...]}``.
        cost: cost analysis (``flops``, ``transcendentals``, ``bytes_accessed`` and
            the backend's raw keys), or None where the backend gives none.
        loops, flops_estimate: the program's loops, and the flops with each loop
            body counted per iteration where the trip count is static (XLA counts
            a body once).
        memory: ``argument_bytes``, ``output_bytes``, ``temp_bytes``,
            ``alias_bytes``, ``generated_code_bytes`` (None where unknown), or None.
        options: how displays look, a frozen ``HloDisplay``; ``with_options``
            gives a view that displays differently.
        show_cost, expand_fused: the fields of ``options``; assigning one
            (``view.show_cost = True``) replaces ``options``.
        lowered, compiled: JAX's own stage objects, for anything not shown here.

    The op table, cost and memory are computed on first access.
    """

    __slots__ = ("_capture", "function_name", "options")

    def __init__(
        self,
        hlo_capture: HloCapture,
        *,
        function_name: str = "",
        options: HloDisplay | None = None,
    ) -> None:
        self._capture = hlo_capture
        self.function_name = function_name
        self.options = options if options is not None else HloDisplay()

    def with_options(
        self, *, show_cost: bool | None = None, expand_fused: bool | None = None
    ) -> HloView:
        """This view displaying with the given options changed (None: unchanged); the
        compiled program is shared and this view is unchanged."""
        given = (("show_cost", show_cost), ("expand_fused", expand_fused))
        for name, flag in given:
            check_flag(
                flag,
                name,
                where="HloView.with_options",
                example=f"view.with_options({name}=True)",
                none_ok=True,
            )
        changes = {name: value for name, value in given if value is not None}
        return HloView(
            self._capture,
            function_name=self.function_name,
            options=dataclasses.replace(self.options, **changes),
        )

    @property
    def show_cost(self) -> bool:
        return self.options.show_cost

    @show_cost.setter
    def show_cost(self, value: bool) -> None:
        self.options = dataclasses.replace(self.options, show_cost=value)

    @property
    def expand_fused(self) -> bool:
        return self.options.expand_fused

    @expand_fused.setter
    def expand_fused(self, value: bool) -> None:
        self.options = dataclasses.replace(self.options, expand_fused=value)

    @property
    def stage(self) -> str:
        return self._capture.stage

    @property
    def text(self) -> str:
        return self._capture.text

    @property
    def ops(self) -> list[OpInfo]:
        return self._capture.ops

    @property
    def op_lines(self) -> list[int]:
        """``op_lines[i]``: the 0-based line of ``text`` where ``ops[i]`` is printed (-1: none)."""
        return self._capture.parsed.lines

    @property
    def by_line(self) -> dict[tuple[str, int], list[OpInfo]]:
        return self._capture.by_line

    @property
    def cost(self) -> dict[str, float] | None:
        return self._capture.cost

    @property
    def memory(self) -> dict[str, int | None] | None:
        return self._capture.memory

    @property
    def loops(self) -> list[Loop]:
        """The program's outermost loops (``scan``, ``while``), which XLA's ``cost``
        counts once each ([] where this XLA counts their iterations)."""
        return (self._capture.loops or []) if xla_counts_bodies_once() else []

    @property
    def flops_estimate(self) -> float | None:
        """``cost["flops"]`` with every loop body counted as many times as it runs,
        where that is known statically (a scan's length); None without such a loop."""
        flops = (self.cost or {}).get("flops")
        if flops is None or not any(loop.extra_flops for loop in self.loops):
            return None
        return flops_with_trip_counts(flops, self.loops)

    @property
    def lowered(self) -> Any:
        """The ``jax.stages.Lowered`` of the call (``.compiler_ir()``, ``.as_text(...)``)."""
        return self._capture.lowered

    @property
    def compiled(self) -> Any:
        """The ``jax.stages.Compiled`` of the call (compiled on first use for
        ``stablehlo`` / ``hlo``); never executed by jaxscope."""
        return self._capture.compiled()

    def source_line(self, file: str, line: int) -> str:
        """The user's source text at ``(file, line)`` (notebook cells included), or ``""``."""
        check_count(
            line,
            "line",
            low=1,
            where="HloView.source_line",
            example="view.source_line('train.py', 12)",
        )
        return source_text(self.raw_file(file), line)

    def raw_file(self, file: str) -> str:
        """The name the program's code was compiled under for a shown file
        (``In [3]``: the cell's own, which cells run without history do not share)."""
        return self._capture.parsed.raw_files.get(file, file)

    def __repr__(self) -> str:
        name = f" of {self.function_name}" if self.function_name else ""
        lines = len(self.text.splitlines())
        return printable(f"<HloView{name}: stage={self.stage!r}, {lines} lines>")


__all__ = ["HloDisplay", "HloView"]
