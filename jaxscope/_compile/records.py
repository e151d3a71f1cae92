# pyright: strict
"""The records of a compile profile: plain, frozen data keyed by ``SourceLoc``.

``LineCompileCost`` is one user line's share of a cold compile, ``CompileStages``
the measured seconds of each stage, ``CompileDiagnosis`` a named problem with a fix to
paste. ``CompileProfile`` holds them all and is what ``js.compile_profile``
returns; two profiles can be compared line by line through ``by_line``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxscope._display import Renderable, printable
from jaxscope._records import SourceLoc

TRACE_SAMPLE_SECONDS = 0.0005
"""How often the tracing thread's Python stack is sampled (seconds)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileStages:
    """Seconds of each stage of one cold compile, each timed on its own.

    ``trace`` runs the Python function into a jaxpr, ``lower`` makes StableHLO,
    ``compile`` is XLA's compile (``Lowered.compile``); none read a cache.
    """

    trace: float
    lower: float
    compile: float

    @property
    def total(self) -> float:
        """``trace + lower + compile``."""
        return self.trace + self.lower + self.compile


@dataclass(frozen=True, slots=True, kw_only=True)
class LineCompileCost:
    """What one line of the user's code costs the compile.

    ``eqns`` counts jaxpr equations whose innermost user frame is this line, at every
    nesting level (a loop, remat or custom-derivative body once, however often it
    runs); ``body_eqns`` of them sit in such a body (``bodies`` names the kinds).
    ``*_cumulative`` count everything traced while the line was on the user's call
    stack (a call line gets its callee's). ``stablehlo_ops`` / ``hlo_ops``: ops of
    the lowered and of the optimized program (fusion members included).
    ``constant_bytes``: arrays the line closes over, embedded in the program.
    ``trace_seconds``: Python time tracing the line (sampled, see
    ``CompileProfile.trace_sampling``). ``compile_seconds_estimate``: XLA's compile
    time apportioned by the line's share of optimized-HLO ops; an estimate.
    """

    source: SourceLoc | None
    code: str = ""
    eqns: int = 0
    eqns_cumulative: int = 0
    body_eqns: int = 0
    bodies: tuple[str, ...] = ()
    primitives: tuple[tuple[str, int], ...] = ()
    stablehlo_ops: int = 0
    hlo_ops: int = 0
    hlo_opcodes: tuple[tuple[str, int], ...] = ()
    """The optimized-HLO opcodes of the line, most first (``("fusion", 3)``)."""
    constant_bytes: int = 0
    trace_seconds: float = 0.0
    trace_seconds_cumulative: float = 0.0
    compile_seconds_estimate: float = 0.0
    frames: tuple[SourceLoc, ...] = field(default=(), compare=False)
    """One call stack that reached the line, innermost first, libraries' frames
    included (the detail behind ``source``)."""

    @property
    def key(self) -> tuple[str, int] | None:
        """``(file, line)``, or None for the costs no user line has."""
        return self.source.key if self.source is not None else None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileDiagnosis:
    """A named cause of a slow compile, where it is and a fix to paste.

    ``kind``: ``"unrolled_loop"``, ``"baked_constant"``, ``"recreated_function"``,
    ``"eager_op_storm"`` or ``"quadratic_trace"``. ``saves``: equations (or
    compiles) the fix removes, where it can be counted.
    """

    kind: str
    source: SourceLoc | None
    message: str
    fix: str
    count: int = 0
    saves: int = 0

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source is not None else ""
        return f"{where}{self.message}; fix: {self.fix}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionCompileCost:
    """A jitted function seen in the program (the top one and nested jits):
    equations its body has, where it is called from."""

    name: str
    eqns: int
    called_at: SourceLoc | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompileTotals:
    """Whole-program counts; each equals the sum over ``lines`` and ``outside``."""

    eqns: int
    stablehlo_ops: int
    hlo_ops: int
    constant_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CompileProfile(Renderable):
    """A cold compile of one call, by user line.

    ``lines`` are sorted by equations (most first); ``outside`` gathers what no user
    line produced (XLA's own ops, JAX's set-up); totals are their sums. Nothing here
    holds an array or a function.
    """

    function: str
    stages: CompileStages
    lines: tuple[LineCompileCost, ...]
    outside: LineCompileCost
    totals: CompileTotals
    diagnoses: tuple[CompileDiagnosis, ...] = ()
    functions: tuple[FunctionCompileCost, ...] = ()
    trace_samples: int = 0
    compiles_so_far: int | None = None
    """Programs the user's ``jax.jit`` function had compiled before this profile
    (its cache's size; None where the function is not a ``jax.jit`` wrapper)."""
    trace_sampling: str = (
        f"sampled every {TRACE_SAMPLE_SECONDS * 1e3:g} ms (a timer signal); each "
        "sample is weighted so the lines add up to the measured trace"
    )
    show_top: int = 10

    @property
    def by_line(self) -> dict[tuple[str, int], LineCompileCost]:
        """``{(file, line): LineCompileCost}`` for every line with a cost."""
        return {line.source.key: line for line in self.lines if line.source}

    def line(self, where: str | int) -> LineCompileCost | None:
        """The line ``"file.py:12"`` (or line number 12 of any file), or None."""
        for cost in self.lines:
            if cost.source is None:
                continue
            if isinstance(where, int) and cost.source.line == where:
                return cost
            if isinstance(where, str) and (
                str(cost.source) == where
                or f"{cost.source.file}:{cost.source.line}" == where
                or str(cost.source).endswith(where)
            ):
                return cost
        return None

    def top(self, n: int = 10, by: str = "eqns") -> list[LineCompileCost]:
        """The ``n`` lines with the most ``by`` (a ``LineCompileCost`` field)."""
        return sorted(self.lines, key=lambda c: -float(getattr(c, by)))[:n]

    def __repr__(self) -> str:
        return (
            f"<CompileProfile {printable(self.function)}: {self.totals.eqns} eqns, "
            f"{self.totals.hlo_ops} HLO ops, {self.stages.total:.3f} s>"
        )
