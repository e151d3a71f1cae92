"""The records of recompile watching: causes, events, the per-function summary.

Plain frozen data (no live function or array) and the one-line texts that renderers,
the pytest plugin and the CLI share.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jaxscope._display import Renderable, printable
from jaxscope._format import plural
from jaxscope._records import SourceLoc

CAUSE_KINDS = (
    "first_call",
    "new_function",
    "redefined_function",
    "shape",
    "dtype",
    "weak_type",
    "static_arg",
    "tree_structure",
    "sharding",
    "config",
    "donation",
    "device",
    "other",
)


# A function as the records tell functions apart: (qualified name, "file:line").
FunctionKey = tuple[str, str]


def function_key(function: str, defined_at: SourceLoc | None) -> FunctionKey:
    """The key of the function named ``function`` defined at ``defined_at``."""
    return function, str(defined_at) if defined_at is not None else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    """Why one cache miss happened.

    ``kind`` is one of ``CAUSE_KINDS``; ``path`` names the argument in the user's
    names (``"params['w'][0]"``, ``"y (keyword)"``) or the config option; ``before`` /
    ``after`` are short readable values; ``hint`` a concrete fix.
    """

    kind: str
    path: str
    before: str
    after: str
    hint: str

    def __str__(self) -> str:
        return describe_cause(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecompileEvent:
    """One jit cache miss that traced and/or compiled a user function.

    ``seconds`` is the trace + lowering + compile time this miss cost. ``traced`` and
    ``compiled`` say which of these happened (a new device or donation recompiles
    without a retrace). ``signature`` lists ``(path, type)`` of the call's arguments.
    """

    function: str
    defined_at: SourceLoc | None
    call_site: SourceLoc | None
    causes: list[Cause]
    seconds: float
    traced: bool = True
    compiled: bool = True
    signature: tuple[tuple[str, str], ...] = ()
    thread: str = ""
    programs: tuple[Any, Any] | None = field(default=None, compare=False, repr=False)
    """Weak references to the jaxpr compiled before (None: none) and to this one,
    kept by JAX's caches; read only by ``diff()``."""

    @property
    def kinds(self) -> list[str]:
        return [c.kind for c in self.causes]

    @property
    def key(self) -> FunctionKey:
        """Which function this is: its name and where it is defined (two lambdas, or
        two ``step``s, are two functions)."""
        return function_key(self.function, self.defined_at)

    def diff(self) -> Any:
        """The program compiled before against this one (a ``ProgramDiff`` by
        source line, at the jaxpr level), computed now; the causes are this
        event's.

        Raises:
            InvalidCallError: a first compile, or a program JAX's caches no longer
                hold.
        """
        from jaxscope._diff.events import event_diff

        return event_diff(self)

    def __str__(self) -> str:
        return describe_event(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRow:
    """Per function: C++ cache misses seen, traces, compiles, seconds, top causes."""

    function: str
    defined_at: SourceLoc | None
    calls: int
    traces: int
    compiles: int
    seconds: float
    top_causes: list[tuple[str, int]]


class RecompileSummary(Renderable):
    """``log.summary()``: one row per function, worst (most compiles, then seconds) first.

    ``calls`` counts the calls that missed JAX's C++ cache (cache hits never reach
    Python, which is why watching is free).
    """

    __slots__ = ("internal_compiles", "rows")

    def __init__(self, rows: list[SummaryRow], internal_compiles: int = 0) -> None:
        self.rows = rows
        self.internal_compiles = internal_compiles

    @classmethod
    def of(
        cls,
        events: Iterable[RecompileEvent],
        calls: Mapping[FunctionKey, int],
        internal_compiles: int = 0,
    ) -> RecompileSummary:
        """The summary of ``events``; ``calls``: cache misses seen per function key."""
        groups: dict[FunctionKey, list[RecompileEvent]] = {}
        for e in events:
            groups.setdefault(e.key, []).append(e)
        rows = [
            SummaryRow(
                function=key[0],
                defined_at=evs[0].defined_at,
                calls=max(calls.get(key, 0), len(evs)),
                traces=sum(1 for e in evs if e.traced),
                compiles=sum(1 for e in evs if e.compiled),
                seconds=sum(e.seconds for e in evs),
                # per compile: shapes of x and y changing together are one shape event
                top_causes=Counter(
                    kind for e in evs for kind in dict.fromkeys(e.kinds)
                ).most_common(3),
            )
            for key, evs in groups.items()
        ]
        rows.sort(key=lambda r: (-r.compiles, -r.seconds, r.function))
        return cls(rows, internal_compiles)

    @property
    def total_compiles(self) -> int:
        return sum(r.compiles for r in self.rows)

    @property
    def total_seconds(self) -> float:
        return sum(r.seconds for r in self.rows)

    def row(self, function: str) -> SummaryRow | None:
        """The row of the function named ``function`` (qualified or short name)."""
        for r in self.rows:
            if function_matches(r.function, function):
                return r
        return None

    def __repr__(self) -> str:
        return (
            f"<RecompileSummary: {plural(len(self.rows), 'function')}, "
            f"{plural(self.total_compiles, 'compile')}, {self.total_seconds:.3f} s>"
        )


class RecompileEvents(Renderable):
    """A list of events to display (one compact line each; details expand in HTML)."""

    __slots__ = ("events", "title")

    def __init__(self, events: list[RecompileEvent], title: str = "") -> None:
        self.events = list(events)
        self.title = title

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"<RecompileEvents: {len(self.events)}>"


def function_matches(qualname: str, wanted: str) -> bool:
    """``wanted`` names ``qualname`` exactly or as its last dotted component."""
    return qualname == wanted or qualname.rsplit(".", 1)[-1] == wanted


def describe_cause(cause: Cause) -> str:
    """``"shape x: f32[3] → f32[4]"``; ``"first call"`` for a first compile.

    User strings in it have their control characters spelled out (``\\x1b``).
    """
    if cause.kind == "first_call":
        return "first call"
    head = cause.kind if not cause.path else f"{cause.kind} {cause.path}"
    if cause.before or cause.after:
        head = f"{head}: {cause.before} → {cause.after}"
    return printable(head)


def event_hints(event: RecompileEvent, first_call: bool = False) -> list[str]:
    """The hints to show for ``event``: one per kind of cause (the first cause's,
    naming the other arguments it holds for: ``"… (the same for y)"``); those of a
    first compile only with ``first_call``."""
    by_kind: dict[str, list[Cause]] = {}
    for c in event.causes:
        if c.hint and (first_call or c.kind != "first_call"):
            by_kind.setdefault(c.kind, []).append(c)
    hints = []
    for causes in by_kind.values():
        hint = causes[0].hint
        others = [c.path for c in causes[1:] if c.path and c.path != causes[0].path]
        if others:
            hint = f"{hint} (the same for {', '.join(dict.fromkeys(others))})"
        hints.append(hint)
    return hints


def describe_event(event: RecompileEvent) -> str:
    """One line: function, call site, causes, milliseconds."""
    where = f" at {event.call_site}" if event.call_site else ""
    causes = "; ".join(describe_cause(c) for c in event.causes) or "unknown cause"
    what = (
        ""
        if event.traced and event.compiled
        else " [compile only, no retrace]"
        if event.compiled
        else " [trace only]"
    )
    text = f"{event.function}{where}: {causes}{what} ({event.seconds * 1000:.1f} ms)"
    return printable(text)
