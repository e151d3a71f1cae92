# pyright: strict
"""Two programs' facts compared line by line: ``compare(a, b) -> ProgramDiff``.

Lines are paired by their code (an LCS over each program's lines in order, so a line
that only moved, or the same code in a renamed copy of the function, pairs up), then
each pair's equations are aligned (an LCS over their signatures); an equation
removed and one added in the same gap with the same primitive are one equation
changed. Optimized-HLO ops are compared per line as multisets (``"opcode shape"``),
collectives by kind. Numbers are compared per line and in total; ``tolerances``
(relative, ``{"flops": 0.02}``) make small numeric drifts count as equal.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jaxscope._diff.align import align
from jaxscope._diff.facts import EqnSig, LineFacts, ProgramFacts
from jaxscope._display import Renderable, printable
from jaxscope._format import format_bytes, plural
from jaxscope._profile.text import format_count, format_seconds

#: The numbers a diff compares, in the order summaries list them.
NUMBERS = (
    "equations",
    "flops",
    "bytes_accessed",
    "hlo_ops",
    "temp_bytes",
    "peak_bytes",
    "collectives",
    "collective_bytes",
    "trace_seconds",
    "compile_seconds",
)
#: Measured durations vary between two runs of one program: they are shown, and count
#: as a change only under a tolerance the caller gives (``compile_seconds=0.5``).
TIMINGS = frozenset({"trace_seconds", "compile_seconds"})
_BYTES = frozenset({"bytes_accessed", "temp_bytes", "peak_bytes", "collective_bytes"})
_LABELS = {
    "equations": "equations",
    "flops": "flops",
    "bytes_accessed": "bytes accessed",
    "hlo_ops": "HLO ops",
    "temp_bytes": "temp memory",
    "peak_bytes": "peak memory",
    "collectives": "collectives",
    "collective_bytes": "collective bytes",
    "trace_seconds": "trace time",
    "compile_seconds": "XLA compile time",
}
# A line's number and the total whose tolerance it takes when it has none of its own.
_ALIASES = {"bytes": "bytes_accessed"}
_TYPE = re.compile(r"^([A-Za-z0-9_]+)\[(.*)\]( \(weak: Python scalar\))?$")


def format_number(name: str, value: float) -> str:
    """``1.5 MiB`` for byte counts, ``2.15G`` for flops, ``12`` for counts."""
    if name in _BYTES:
        return format_bytes(int(value))
    if name in TIMINGS:
        return format_seconds(value)
    return format_count(value)


def percent(before: float, after: float) -> str:
    """``+38%`` / ``-12%`` (``new`` from zero)."""
    if before == 0:
        return "new" if after else "0%"
    change = (after - before) / before * 100
    return f"{change:+.0f}%" if abs(change) >= 1 else f"{change:+.1f}%"


@dataclass(frozen=True, slots=True, kw_only=True)
class EqnChange:
    """An equation ``added``, ``removed`` or ``changed`` (``before`` → ``after``);
    ``details`` say what changed (``"result dtype: f32 → bf16"``)."""

    kind: str
    before: EqnSig | None = None
    after: EqnSig | None = None
    details: tuple[str, ...] = ()

    @property
    def primitive(self) -> str:
        sig = self.after if self.after is not None else self.before
        return sig.primitive if sig is not None else ""

    def __str__(self) -> str:
        if self.kind == "added" and self.after is not None:
            return f"+ {self.after.text()}"
        if self.kind == "removed" and self.before is not None:
            return f"- {self.before.text()}"
        return f"~ {self.primitive}: {'; '.join(self.details)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LineDiff:
    """One source line in both programs (``before`` / ``after``; None: only in one).

    ``changes``: its equations added, removed or changed; ``ops_added`` /
    ``ops_removed``: optimized-HLO ops (``"opcode shape"`` → count);
    ``collectives_added`` / ``_removed`` by kind; ``numbers``: ``name -> (before,
    after)`` per line (``equations``, ``flops``, ``bytes``, ``hlo_ops``,
    ``fusions``, ``collective_bytes``, ``peak_bytes``; None where unknown).
    """

    before: LineFacts | None
    after: LineFacts | None
    changes: tuple[EqnChange, ...] = ()
    ops_added: dict[str, int] = field(default_factory=dict[str, int])
    ops_removed: dict[str, int] = field(default_factory=dict[str, int])
    collectives_added: dict[str, int] = field(default_factory=dict[str, int])
    collectives_removed: dict[str, int] = field(default_factory=dict[str, int])
    numbers: dict[str, tuple[float | None, float | None]] = field(
        default_factory=dict[str, tuple[float | None, float | None]]
    )
    changed: bool = False

    @property
    def where(self) -> str:
        """``"file:line"`` in the newer program (the older one for a removed line)."""
        line = self.after if self.after is not None else self.before
        return line.label if line is not None else ""

    @property
    def code(self) -> str:
        line = self.after if self.after is not None else self.before
        return line.code if line is not None else ""

    @property
    def code_before(self) -> str:
        """The older program's code where it differs from ``code`` (``""``: same)."""
        if self.before is None or self.after is None:
            return ""
        before = self.before.code
        return before if before and before != self.after.code else ""

    @property
    def status(self) -> str:
        """``"added"``, ``"removed"``, ``"changed"`` or ``"same"``."""
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "changed" if self.changed else "same"

    def count(self, kind: str) -> int:
        """How many equations were ``added``, ``removed`` or ``changed`` here."""
        return sum(1 for c in self.changes if c.kind == kind)

    def summary(self) -> str:
        """One sentence of what the diff measured on this line."""
        return line_sentence(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class InputChange:
    """An input whose type differs: ``name``, ``before`` → ``after`` (``""``: absent)."""

    name: str
    before: str
    after: str


class ProgramDiff(Renderable):
    """What changed between two programs, by the user's source line.

    Attributes:
        before_name, after_name: the two programs' function names.
        kind: what was compared (``"JaxprView"``, ``"HloView"``, ``"program"``...).
        levels: what both programs were read at (``"jaxpr"``, ``"hlo"``, ``"memory"``).
        causes: why the programs differ (``Cause`` records, worded as the
            recompile watcher words them: the arguments, static values and config
            of the two calls), where known.
        inputs: ``InputChange`` of each input whose type differs.
        lines: ``LineDiff`` per source line of either program, the newer one's
            order (removed lines where they stood); ``changed_lines`` those that
            differ.
        totals: ``name -> (before, after)`` for the program (``equations``,
            ``flops``, ``bytes_accessed``, ``hlo_ops``, ``temp_bytes``,
            ``peak_bytes``, ``collectives``, ``collective_bytes``).
        empty: nothing differs.
    """

    __slots__ = (
        "after_name",
        "before_name",
        "causes",
        "inputs",
        "kind",
        "levels",
        "lines",
        "tolerances",
        "totals",
    )

    wrap_text = False

    def __init__(
        self,
        *,
        before_name: str,
        after_name: str,
        kind: str,
        levels: tuple[str, ...],
        causes: list[Any],
        inputs: list[InputChange],
        lines: list[LineDiff],
        totals: dict[str, tuple[float | None, float | None]],
        tolerances: Mapping[str, float] | None = None,
    ) -> None:
        self.before_name = before_name
        self.after_name = after_name
        self.kind = kind
        self.levels = levels
        self.causes = causes
        self.inputs = inputs
        self.lines = lines
        self.totals = totals
        self.tolerances = dict(tolerances or {})

    @property
    def changed_lines(self) -> list[LineDiff]:
        return [line for line in self.lines if line.status != "same"]

    @property
    def changed_totals(self) -> dict[str, tuple[float | None, float | None]]:
        return {
            name: pair
            for name, pair in self.totals.items()
            if (name not in TIMINGS or name in self.tolerances)
            and _differs(pair, self.tolerances.get(name, 0.0))
        }

    @property
    def empty(self) -> bool:
        return not (
            self.causes or self.inputs or self.changed_lines or self.changed_totals
        )

    def line(self, where: str | int) -> LineDiff | None:
        """The line diff at ``where``: ``"model.py:42"`` (a suffix of the shown
        ``file:line``) or a line number."""
        for line in self.lines:
            for side in (line.after, line.before):
                if side is None or (side.loc is None and not side.where):
                    continue
                if isinstance(where, int):
                    if side.where.rpartition(":")[2] == str(where):
                        return line
                elif side.where == where or side.where.endswith(where):
                    return line
        return None

    def summary(self, limit: int = 8) -> list[str]:
        """What a person reads first: the causes, each changed line in one
        sentence (at most ``limit``), then the totals that changed."""
        return summary_lines(self, limit)

    def __repr__(self) -> str:
        if self.empty:
            what = "no differences"
        else:
            what = plural(len(self.changed_lines), "changed line")
        names = (
            self.before_name
            if self.before_name == self.after_name
            else (f"{self.before_name} → {self.after_name}")
        )
        return printable(f"<ProgramDiff of {names}: {what}>")


def _differs(pair: tuple[float | None, float | None], tolerance: float) -> bool:
    a, b = pair
    if a is None or b is None:
        return False  # unknown on one side: nothing measured to compare
    if a == b:
        return False
    scale = max(abs(a), abs(b))
    return abs(a - b) > tolerance * scale


# ------------------------------------------------------------------ comparing


def compare(
    a: ProgramFacts,
    b: ProgramFacts,
    *,
    causes: list[Any] | None = None,
    tolerances: Mapping[str, float] | None = None,
) -> ProgramDiff:
    """``b`` against ``a``: every line paired, every difference found."""
    tolerances = dict(tolerances or {})
    pairs = pair_lines(a.lines, b.lines)
    lines: list[LineDiff] = []
    interned: dict[EqnSig, int] = {}
    ai = bj = 0
    for i, j in [*pairs, (len(a.lines), len(b.lines))]:
        while ai < i:
            lines.append(_line_diff(a.lines[ai], None, interned, tolerances))
            ai += 1
        while bj < j:
            lines.append(_line_diff(None, b.lines[bj], interned, tolerances))
            bj += 1
        if i < len(a.lines):
            lines.append(_line_diff(a.lines[i], b.lines[j], interned, tolerances))
            ai, bj = i + 1, j + 1
    levels = tuple(level for level in a.levels if level in b.levels)
    totals: dict[str, tuple[float | None, float | None]] = {}
    for name in NUMBERS:
        if name in a.totals or name in b.totals:
            totals[name] = (a.totals.get(name), b.totals.get(name))
    return ProgramDiff(
        before_name=a.name,
        after_name=b.name,
        kind=a.kind if a.kind == b.kind else "program",
        levels=levels,
        causes=list(causes) if causes is not None else [],
        inputs=_input_changes(a.inputs, b.inputs) if causes is None else [],
        lines=lines,
        totals=totals,
        tolerances=tolerances,
    )


def pair_lines(
    a: tuple[LineFacts, ...], b: tuple[LineFacts, ...]
) -> list[tuple[int, int]]:
    """Lines paired by their code (an LCS over each program's lines in order);
    in each gap left between pairs, lines with the same equations (the code
    was only renamed), then, where the gap has as many lines on each side, lines
    at the same place whose code reads as an edit of the other's."""
    pairs = align([x.token for x in a], [y.token for y in b])
    out: list[tuple[int, int]] = []
    prev_i = prev_j = 0
    for i, j in [*pairs, (len(a), len(b))]:
        gap_a, gap_b = range(prev_i, i), range(prev_j, j)
        if gap_a and gap_b:
            same = align(
                [a[k].eqns or a[k].token for k in gap_a],
                [b[k].eqns or b[k].token for k in gap_b],
            )
            if not same and len(gap_a) == len(gap_b):
                same = [
                    (n, n)
                    for n, (k, m) in enumerate(zip(gap_a, gap_b, strict=True))
                    if _edited(a[k].code, b[m].code)
                ]
            out += [(prev_i + p, prev_j + q) for p, q in same]
        if i < len(a):
            out.append((i, j))
        prev_i, prev_j = i + 1, j + 1
    return out


def _edited(before: str, after: str) -> bool:
    """Whether ``after`` reads as ``before`` edited (most of its text kept)."""
    if not before or not after:
        return False
    return difflib.SequenceMatcher(None, before, after).ratio() >= 0.6


def _input_changes(
    a: tuple[tuple[str, str], ...], b: tuple[tuple[str, str], ...]
) -> list[InputChange]:
    before, after = dict(a), dict(b)
    out = [
        InputChange(name=name, before=before.get(name, ""), after=t)
        for name, t in after.items()
        if before.get(name) != t
    ]
    out += [
        InputChange(name=name, before=t, after="")
        for name, t in before.items()
        if name not in after
    ]
    return out


def _intern(sigs: tuple[EqnSig, ...], interned: dict[EqnSig, int]) -> list[int]:
    out: list[int] = []
    for sig in sigs:
        found = interned.get(sig)
        if found is None:
            found = interned[sig] = len(interned)
        out.append(found)
    return out


def _line_diff(
    a: LineFacts | None,
    b: LineFacts | None,
    interned: dict[EqnSig, int],
    tolerances: Mapping[str, float],
) -> LineDiff:
    if a is not None and b is not None and _same_line(a, b):
        return LineDiff(
            before=a, after=b, numbers={"equations": (len(a.eqns), len(b.eqns))}
        )
    eqns_a = a.eqns if a is not None else ()
    eqns_b = b.eqns if b is not None else ()
    changes = _eqn_changes(eqns_a, eqns_b, interned)
    ops_a = Counter(a.ops) if a is not None and a.ops else Counter[str]()
    ops_b = Counter(b.ops) if b is not None and b.ops else Counter[str]()
    col_a = (
        Counter(a.collectives) if a is not None and a.collectives else Counter[str]()
    )
    col_b = (
        Counter(b.collectives) if b is not None and b.collectives else Counter[str]()
    )
    numbers: dict[str, tuple[float | None, float | None]] = {}

    def number(name: str, get: str) -> None:
        va = _num(a, get)
        vb = _num(b, get)
        if va or vb:
            numbers[name] = (va, vb)

    numbers["equations"] = (float(len(eqns_a)), float(len(eqns_b)))
    if ops_a or ops_b:
        numbers["hlo_ops"] = (float(sum(ops_a.values())), float(sum(ops_b.values())))
        number("fusions", "fusions")
    number("flops", "flops")
    number("bytes", "bytes")
    number("collective_bytes", "collective_bytes")
    number("peak_bytes", "peak_bytes")
    ops_added = dict(ops_b - ops_a)
    ops_removed = dict(ops_a - ops_b)
    col_added = dict(col_b - col_a)
    col_removed = dict(col_a - col_b)
    numeric = any(
        _differs(
            pair, tolerances.get(name, tolerances.get(_ALIASES.get(name, ""), 0.0))
        )
        for name, pair in numbers.items()
        if name != "equations"
    )
    changed = bool(
        changes or ops_added or ops_removed or col_added or col_removed or numeric
    ) or (a is None) != (b is None)
    return LineDiff(
        before=a,
        after=b,
        changes=tuple(changes),
        ops_added=ops_added,
        ops_removed=ops_removed,
        collectives_added=col_added,
        collectives_removed=col_removed,
        numbers=numbers,
        changed=changed,
    )


def _same_line(a: LineFacts, b: LineFacts) -> bool:
    """Whether two lines hold the same program, numbers included (the common case)."""
    return (
        a.eqns == b.eqns
        and a.ops == b.ops
        and a.collectives == b.collectives
        and a.flops == b.flops
        and a.bytes == b.bytes
        and a.collective_bytes == b.collective_bytes
        and a.peak_bytes == b.peak_bytes
        and a.fusions == b.fusions
    )


def _num(line: LineFacts | None, name: str) -> float | None:
    if line is None:
        return 0.0
    value = getattr(line, name)
    return None if value is None else float(value)


def _eqn_changes(
    a: tuple[EqnSig, ...], b: tuple[EqnSig, ...], interned: dict[EqnSig, int]
) -> list[EqnChange]:
    if a == b:
        return []
    pairs = align(_intern(a, interned), _intern(b, interned))
    changes: list[EqnChange] = []
    prev_i, prev_j = 0, 0
    for i, j in [*pairs, (len(a), len(b))]:
        changes += _gap(a[prev_i:i], b[prev_j:j])
        prev_i, prev_j = i + 1, j + 1
    return changes


def _gap(removed: tuple[EqnSig, ...], added: tuple[EqnSig, ...]) -> list[EqnChange]:
    """One gap of the alignment: same-primitive equations paired in order as
    changed, the rest added or removed."""
    out: list[EqnChange] = []
    j = 0
    used: set[int] = set()
    for old in removed:
        match = next(
            (
                k
                for k in range(j, len(added))
                if k not in used and added[k].primitive == old.primitive
            ),
            None,
        )
        if match is None:
            out.append(EqnChange(kind="removed", before=old))
            continue
        for k in range(j, match):
            if k not in used:
                out.append(EqnChange(kind="added", after=added[k]))
                used.add(k)
        used.add(match)
        j = match + 1
        out.append(
            EqnChange(
                kind="changed",
                before=old,
                after=added[match],
                details=_details(old, added[match]),
            )
        )
    out += [
        EqnChange(kind="added", after=added[k])
        for k in range(len(added))
        if k not in used
    ]
    return out


_SPLIT: dict[str, tuple[str, str]] = {}


def _split_type(text: str) -> tuple[str, str]:
    """``"f32[3,4]"`` → ``("f32", "3,4")``."""
    found = _SPLIT.get(text)
    if found is None:
        match = _TYPE.match(text)
        found = (text, "") if match is None else (match.group(1), match.group(2))
        if len(_SPLIT) < 100_000:
            _SPLIT[text] = found
    return found


def _type_details(what: str, a: tuple[str, ...], b: tuple[str, ...]) -> list[str]:
    if len(a) != len(b):
        return [f"{what}s: {', '.join(a)} → {', '.join(b)}"]
    out: list[str] = []
    for n, (x, y) in enumerate(zip(a, b, strict=True)):
        if x == y:
            continue
        label = what if len(a) == 1 else f"{what} {n}"
        (dx, sx), (dy, sy) = _split_type(x), _split_type(y)
        if dx != dy and sx == sy and sy:
            out.append(f"{label} dtype: {dx} → {dy}")
        elif dx == dy and sx != sy:
            out.append(f"{label} shape: [{sx}] → [{sy}]")
        else:
            out.append(f"{label}: {x} → {y}")
    return out


def _details(a: EqnSig, b: EqnSig) -> tuple[str, ...]:
    out = _type_details("result", a.outputs, b.outputs)
    out += _type_details("operand", a.inputs, b.inputs)
    pa, pb = dict(a.params), dict(b.params)
    for key in dict.fromkeys((*pa, *pb)):
        if pa.get(key) != pb.get(key):
            out.append(f"{key}: {pa.get(key, '(none)')} → {pb.get(key, '(none)')}")
    if a.within != b.within:
        out.append(
            f"inside: {' > '.join(a.within) or 'top level'} → "
            f"{' > '.join(b.within) or 'top level'}"
        )
    return tuple(out)


# ------------------------------------------------------------------ sentences


def _primitives(changes: list[EqnChange]) -> str:
    names = Counter(c.primitive for c in changes)
    shown = [f"{n} x {p}" if n > 1 else p for p, n in names.most_common(3)]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f", {more} more" if more > 0 else "")


def _changed_phrase(change: EqnChange) -> str:
    a, b = change.before, change.after
    if a is None or b is None:
        return ""
    if len(a.outputs) == len(b.outputs):
        for x, y in zip(a.outputs, b.outputs, strict=True):
            (dx, sx), (dy, sy) = _split_type(x), _split_type(y)
            if dx != dy:
                return f"{b.primitive} now {dy} instead of {dx}"
            if sx != sy:
                return f"{b.primitive} now [{sy}] instead of [{sx}]"
    return f"{b.primitive} {change.details[0]}" if change.details else b.primitive


def line_sentence(line: LineDiff) -> str:
    """``"line model.py:42: dot_general now f32 instead of bf16 (+38% flops)"``."""
    parts: list[str] = []
    # a line only one program has equations at (other levels list only the
    # lines with ops or collectives, so there it says nothing of the code)
    if line.status == "added" and line.after is not None and line.after.eqns:
        parts.append("new line")
    elif line.status == "removed" and line.before is not None and line.before.eqns:
        parts.append("line removed")
    if line.code_before:
        parts.append(f"code was `{line.code_before}`")
    changed = [c for c in line.changes if c.kind == "changed"]
    if changed:
        phrase = _changed_phrase(changed[0])
        more = len(changed) - 1
        parts.append(phrase + (f" (and {more} more changed)" if more else ""))
    added = [c for c in line.changes if c.kind == "added"]
    removed = [c for c in line.changes if c.kind == "removed"]
    if added and line.status != "added":
        parts.append(f"+{plural(len(added), 'equation')} ({_primitives(added)})")
    if removed and line.status != "removed":
        parts.append(f"-{plural(len(removed), 'equation')} ({_primitives(removed)})")
    if line.status in ("added", "removed"):
        n = len(added) or len(removed)
        if n:
            parts.append(f"{plural(n, 'equation')} ({_primitives(added or removed)})")
    for kind, n in sorted(line.collectives_added.items()):
        parts.append(f"+{n} {kind}")
    for kind, n in sorted(line.collectives_removed.items()):
        parts.append(f"-{n} {kind}")
    fusions = line.numbers.get("fusions")
    if fusions is not None and None not in fusions and fusions[0] != fusions[1]:
        before, after = int(fusions[0] or 0), int(fusions[1] or 0)
        if before and after:  # counted only: whether one split is not measured
            parts.append(f"fusions {before} → {after}")
    copies = line.ops_added.get("copy", 0) + sum(
        n for op, n in line.ops_added.items() if op.startswith("copy ")
    )
    if copies:
        parts.append(f"+{plural(copies, 'copy', 'copies')}")
    if not parts and (line.ops_added or line.ops_removed):
        ops = sum(line.ops_added.values()) - sum(line.ops_removed.values())
        parts.append(f"HLO ops changed ({ops:+d})")
    numbers = _number_notes(line)
    text = "; ".join(p for p in parts if p) or "numbers changed"
    if numbers:
        text += f" ({numbers})"
    return f"line {line.where}: {text}"


def _number_notes(line: LineDiff) -> str:
    notes: list[str] = []
    for name, label in (
        ("flops", "flops"),
        ("bytes", "bytes"),
        ("collective_bytes", "moved"),
        ("peak_bytes", "at peak"),
    ):
        pair = line.numbers.get(name)
        if pair is None or pair[0] is None or pair[1] is None:
            continue
        if abs(pair[1] - pair[0]) <= 0.005 * max(abs(pair[0]), abs(pair[1])):
            continue  # estimates a rounding apart say nothing
        if name in ("collective_bytes", "peak_bytes"):
            delta = pair[1] - pair[0]
            sign = "+" if delta >= 0 else "-"
            notes.append(f"{sign}{format_bytes(int(abs(delta)))} {label}")
        else:
            notes.append(f"{percent(pair[0], pair[1])} {label}")
    return ", ".join(notes)


def total_sentence(name: str, pair: tuple[float | None, float | None]) -> str:
    """``"flops 1.2M → 2.4M (+100%)"``."""
    a, b = pair
    if a is None or b is None:
        return ""
    return (
        f"{_LABELS.get(name, name)} {format_number(name, a)} → "
        f"{format_number(name, b)} ({percent(a, b)})"
    )


def summary_lines(d: ProgramDiff, limit: int = 8) -> list[str]:
    """The causes, one sentence per changed line (at most ``limit``), the totals."""
    if d.empty:
        return ["no differences"]
    out = [f"cause: {c}" for c in d.causes if c.kind != "first_call"]
    out += [
        f"input {i.name}: {i.before or 'absent'} → {i.after or 'absent'}"
        for i in d.inputs
    ]
    changed = d.changed_lines
    out += [line.summary() for line in changed[:limit]]
    if len(changed) > limit:
        out.append(f"… and {plural(len(changed) - limit, 'more changed line')}")
    totals = [total_sentence(k, v) for k, v in d.changed_totals.items()]
    totals = [t for t in totals if t]
    if totals:
        out.append("in total: " + "; ".join(totals))
    return out
