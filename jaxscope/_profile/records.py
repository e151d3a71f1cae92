"""The rows of ``ProfileView`` and ``MemoryView``: plain, frozen data.

Times are seconds per run of the profiled call (the mean over the profiled runs and,
for a sharded program, over the devices); flops and bytes are per run too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxscope._records import SourceLoc
from jaxscope._source import short_path

#: op kinds: ``compute`` (fusions, dots, ...), ``collective`` (all-reduce, ...),
#: ``copy``, ``transfer`` (host transfers, send/recv, infeed/outfeed, callbacks),
#: ``control`` (the self time of while / conditional / call)
KINDS = ("compute", "collective", "copy", "transfer", "control")


@dataclass(frozen=True, slots=True, kw_only=True)
class OpTime:
    """One optimized-HLO op that ran, with its measured time.

    ``lines`` says where its time went: ``((SourceLoc or None, seconds), ...)``;
    a fusion's time is split over its members' lines in proportion to their
    estimated cost (``jaxscope._profile.costs``).
    """

    name: str
    opcode: str
    kind: str
    source: SourceLoc | None
    time: float
    count: float
    flops: float
    bytes_accessed: float
    members: tuple[str, ...] = ()
    lines: tuple[tuple[SourceLoc | None, float], ...] = ()

    @property
    def per_execution(self) -> float:
        """Seconds per execution (a loop body op runs ``count`` times a run)."""
        return self.time / self.count if self.count else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class LineTime:
    """One source line: the time of every op (or share of a fusion) it produced.

    ``count`` is how often its ops ran per run (the iterations of a loop body, 1
    outside loops); ``kinds`` splits ``time`` by op kind; ``ops`` names the HLO ops
    (fusion members included) and ``fusions`` the fusions they ran in.
    """

    file: str
    line: int
    function: str | None
    code: str
    time: float
    share: float
    count: float
    ops: tuple[str, ...]
    fusions: tuple[str, ...]
    flops: float
    bytes_accessed: float
    kinds: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.file, self.line)

    @property
    def n_ops(self) -> int:
        return len(self.ops)

    @property
    def per_iteration(self) -> float:
        """Seconds per execution of the line's ops (per loop iteration in a body)."""
        return self.time / self.count if self.count else 0.0

    def __str__(self) -> str:
        return f"{short_path(self.file)}:{self.line}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Hotspot:
    """A row of ``ProfileView.top()``: a source line's compute, or one collective,
    copy or transfer op (those are their own rows)."""

    kind: str
    time: float
    share: float
    source: SourceLoc | None
    code: str
    ops: tuple[str, ...]

    @property
    def label(self) -> str:
        where = str(self.source) if self.source is not None else "(no source line)"
        if self.kind == "line":
            return where
        return f"{self.kind} {', '.join(self.ops)} at {where}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionTime:
    """A node of the user's call tree: a function and the time of every op traced
    inside it (``time``, callees included) or on its own lines (``self_time``)."""

    function: str
    file: str
    time: float
    self_time: float
    share: float
    children: tuple[FunctionTime, ...] = ()

    def walk(self, depth: int = 0) -> list[tuple[int, FunctionTime]]:
        """``(depth, node)`` of this node and every node below it, depth first."""
        node: FunctionTime = self
        out: list[tuple[int, FunctionTime]] = [(depth, node)]
        for child in self.children:
            out.extend(child.walk(depth + 1))
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Buffer:
    """One buffer of a compiled program at the memory peak.

    ``kind`` is what the buffer holds, never which allocation it shares:
    ``argument``, ``donated`` (an argument whose buffer the outputs reuse),
    ``optimizer_state`` (an argument named as one: ``opt_state``, an
    ``nnx.Optimizer``'s state; ``donated`` says whether it is donated),
    ``output`` (a value the program returns), ``residual`` (a forward value kept
    for the backward pass), ``temporary`` or ``constant``. ``name`` is XLA's value
    (``fusion.3``, or ``tuple.1{0}`` for a tuple element), ``op`` the instruction
    defining it; ``argument`` names the argument of the argument kinds. ``live``
    is its ``(first, last)`` position in the program's schedule.

    ``bytes`` is the buffer's own size. ``peak_bytes`` is what it adds to the
    peak: the same, except for an argument already dead or an output not yet
    written at the peak (``live_at_peak`` False), whose allocation XLA holds for
    the whole run and lends to temporaries meanwhile; it counts what they leave.
    The ``peak_bytes`` of all buffers add up to ``MemoryView.peak_bytes``.
    """

    name: str
    op: str
    opcode: str
    shape: str
    bytes: int
    kind: str
    source: SourceLoc | None
    argument: str | None = None
    live: tuple[int, int] = (0, 0)
    allocation: int = -1
    peak_bytes: int = 0
    live_at_peak: bool = True
    donated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LineMemory:
    """One source line's buffers at the peak: ``bytes`` adds their ``peak_bytes``
    (so lines and arguments add up to the peak), ``kinds`` splits it by kind."""

    file: str
    line: int
    function: str | None
    code: str
    bytes: int
    share: float
    buffers: tuple[str, ...]
    kinds: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.file, self.line)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryFinding:
    """Something that costs memory silently, and its fix.

    ``kind``: ``unused_checkpoint_name`` (a ``checkpoint_name`` no policy refers
    to), ``policy_name_not_produced`` (a policy names a value the program never
    names), ``checkpoint_saves_everything``, ``stacked_residuals`` (a scan's
    residuals dominate the peak), ``not_donated`` (an argument an output of the
    same shape and dtype could reuse), ``donation_unusable`` (a donated argument
    no output can reuse). ``source`` is the line it is about; ``bytes`` what is at
    stake (0 where unknown).
    """

    kind: str
    message: str
    fix: str
    source: SourceLoc | None = None
    bytes: int = 0
