"""The records of tracer-leak checking: one ``Leak`` per leaked tracer, and the
per-function ``LeakSummary`` of a report. Plain frozen data that holds no tracer."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from jaxscope._display import Renderable, printable
from jaxscope._format import plural
from jaxscope._records import SourceLoc


@dataclass(frozen=True, slots=True, kw_only=True)
class Leak:
    """One leaked tracer.

    Attributes:
        aval: its abstract value, short form (``"f32[3]"``).
        transformation: the transformation that created it (``"jit"``, ``"grad"``,
            ``"vmap"``, ``"scan"``, ``"while"``, ``"cond"``, ``"pmap"``,
            ``"shard_map"``, ``"custom_jvp"``, ``"jvp"``, ``"vjp"``, ...).
        created_at: the user's line that produced it; for a leaked argument, the
            line that called the transformation.
        found_in: what holds it (``"global list `cache`[0]"``,
            ``"attribute `self.state` of a `Model` object (global `m`)"``, ...), or
            ``""`` when the leak was seen only when the tracer was used.
        function: the function being traced (``"f at file.py:3"``), where known.
        argument: True when the leaked tracer is an argument of the traced function.
        used_at: where a leaked tracer was used outside its transformation (the
            ``UnexpectedTracerError`` case), else None.
    """

    aval: str
    transformation: str
    created_at: SourceLoc | None
    found_in: str
    function: str = ""
    argument: bool = False
    used_at: SourceLoc | None = None

    def describe(self, *, short: bool = False) -> str:
        """One line: what leaked, from where, created where, held where (control
        characters and line breaks of user strings spelled out). ``short=True``
        shows files as every view and message does (``short_path``); the default
        keeps full paths (the data, and a tooltip over the short form)."""
        loc = _short_loc if short else _full_loc
        what = "argument" if self.argument else "tracer"
        text = f"{self.aval} {what} from {self.transformation}"
        if self.created_at is not None:
            verb = "traced at" if self.argument else "created at"
            text += f", {verb} {loc(self.created_at)}"
            if self.created_at.function and not self.argument:
                text += f" ({self.created_at.function})"
        if self.found_in:
            text += f", stored in {self.found_in}"
        if self.used_at is not None:
            text += f", used at {loc(self.used_at)} outside its transformation"
        return printable(text).replace("\n", "\\n").replace("\t", "\\t")

    def __str__(self) -> str:
        return self.describe()


def _full_loc(loc: SourceLoc) -> str:
    return f"{loc.file}:{loc.line}"


def _short_loc(loc: SourceLoc) -> str:
    # jaxscope._source imports JAX: a report stays plain data until it is shown
    from jaxscope._source import short_loc

    return short_loc(loc)


def count_text(n: int) -> str:
    """``"no tracer leaked"``, ``"1 leaked tracer"``, ``"2 leaked tracers"``."""
    return plural(n, "leaked tracer") if n else "no tracer leaked"


def headline(leaks: Sequence[Leak], *, short: bool = False) -> str:
    """One line: how many leaked, and the first one (``short``: as ``describe``)."""
    if not leaks:
        return count_text(0)
    more = f" (and {len(leaks) - 1} more)" if len(leaks) > 1 else ""
    return f"{count_text(len(leaks))}: {leaks[0].describe(short=short)}{more}"


def _function_name(leak: Leak) -> str:
    """``"f"`` of ``"f at file.py:3"``; the creating line's function, else ``"?"``."""
    name = leak.function.rsplit(" at ", 1)[0] if leak.function else ""
    if not name and leak.created_at is not None:
        name = leak.created_at.function or ""
    return name or "?"


@dataclass(frozen=True, slots=True, kw_only=True)
class LeakSummaryRow:
    """Per traced function: how many tracers leaked, from which transformations, first
    created where, and the distinct places that hold them."""

    function: str
    created_at: SourceLoc | None
    leaks: int
    transformations: list[tuple[str, int]]
    found_in: list[str]


class LeakSummary(Renderable):
    """``report.summary()``: one row per traced function, most leaks first.

    ``headline`` is the one-line account (``"2 leaked tracers: f32[] tracer from jit,
    created at ... (and 1 more)"``) that starts ``TracerLeakError``'s message;
    ``shown_headline`` is the same with files shortened as views show them.
    """

    __slots__ = ("headline", "rows", "shown_headline")

    def __init__(
        self, rows: list[LeakSummaryRow], headline: str = "", shown_headline: str = ""
    ) -> None:
        self.rows = rows
        self.headline = headline or count_text(sum(r.leaks for r in rows))
        self.shown_headline = shown_headline or self.headline

    @classmethod
    def of(cls, leaks: Sequence[Leak]) -> LeakSummary:
        """The summary of ``leaks`` (in the order they were found)."""
        groups: dict[str, list[Leak]] = {}
        for leak in leaks:
            groups.setdefault(_function_name(leak), []).append(leak)
        rows = [
            LeakSummaryRow(
                function=fn,
                created_at=group[0].created_at,
                leaks=len(group),
                transformations=Counter(g.transformation for g in group).most_common(),
                found_in=list(dict.fromkeys(g.found_in for g in group if g.found_in)),
            )
            for fn, group in groups.items()
        ]
        rows.sort(key=lambda r: -r.leaks)
        return cls(rows, headline(leaks), headline(leaks, short=True))

    @property
    def total_leaks(self) -> int:
        return sum(r.leaks for r in self.rows)

    def row(self, function: str) -> LeakSummaryRow | None:
        """The row of the function named ``function`` (qualified or short name)."""
        for r in self.rows:
            if function in (r.function, r.function.rsplit(".", 1)[-1]):
                return r
        return None

    def __repr__(self) -> str:
        return (
            f"<LeakSummary: {plural(len(self.rows), 'function')}, "
            f"{plural(self.total_leaks, 'leak')}>"
        )
