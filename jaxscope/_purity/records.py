"""The records of purity checks: one ``PurityFinding`` per stale value or trace-time
side effect, and the per-function ``PuritySummary`` of a log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jaxscope._display import Renderable
from jaxscope._format import plural
from jaxscope._records import SourceLoc

STALE = "stale_constant"
SIDE_EFFECT = "trace_time_side_effect"


@dataclass(frozen=True, slots=True, kw_only=True)
class PurityFinding:
    """A value baked in at trace time that changed since, or a trace-time side effect.

    ``kind`` is ``"stale_constant"`` or ``"trace_time_side_effect"``; ``name`` the
    variable or call; ``captured``/``current`` short readable values (``""`` where
    they do not apply).
    """

    kind: str
    function: str
    name: str
    source: SourceLoc | None
    captured: str
    current: str
    hint: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PuritySummaryRow:
    """Per function: trace-time side effects, stale values, and the names involved."""

    function: str
    side_effects: int
    stale_values: int
    names: list[str]

    @property
    def findings(self) -> int:
        return self.side_effects + self.stale_values


class PuritySummary(Renderable):
    """``log.summary()``: one row per function, most findings first."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[PuritySummaryRow]) -> None:
        self.rows = rows

    @classmethod
    def of(cls, findings: Sequence[PurityFinding]) -> PuritySummary:
        """The summary of ``findings``."""
        groups: dict[str, list[PurityFinding]] = {}
        for f in findings:
            groups.setdefault(f.function, []).append(f)
        rows = [
            PuritySummaryRow(
                function=fn,
                side_effects=sum(1 for f in group if f.kind == SIDE_EFFECT),
                stale_values=sum(1 for f in group if f.kind == STALE),
                names=list(dict.fromkeys(f.name for f in group)),
            )
            for fn, group in groups.items()
        ]
        rows.sort(key=lambda r: (-r.findings, r.function))
        return cls(rows)

    @property
    def total_findings(self) -> int:
        return sum(r.findings for r in self.rows)

    def row(self, function: str) -> PuritySummaryRow | None:
        """The row of the function named ``function`` (qualified or short name)."""
        for r in self.rows:
            if function in (r.function, r.function.rsplit(".", 1)[-1]):
                return r
        return None

    def __repr__(self) -> str:
        return (
            f"<PuritySummary: {len(self.rows)} functions, "
            f"{plural(self.total_findings, 'finding')}>"
        )
