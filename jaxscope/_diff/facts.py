# pyright: strict
"""What a diff compares: a program's facts by user source line, as plain data.

``program_facts(view)`` reads a view into ``ProgramFacts``: its inputs' types, and per
source line the equations (each an ``EqnSig``: primitive, operand and result types,
params, the nested jaxprs it sits in; never a variable name, so renaming and
renumbering change nothing), the optimized-HLO ops (``"opcode shape"`` counts, matched
as a multiset, never by instruction name), collectives and estimated flops/bytes, and
the program's totals (XLA's cost and memory analysis where the view has them).

The reader is chosen by the view's type (``functools.singledispatch``); a feature
with another view registers its own: ``@program_facts.register(MyView)``. Facts hold
strings and numbers only, so they serialise (``to_json`` / ``from_json``) for IR
snapshots, and a diff never keeps the user's arrays alive.
"""

from __future__ import annotations

import functools
import linecache
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from jaxscope._exceptions import InvalidCallError
from jaxscope._format import qualname
from jaxscope._hlo.view import HloView
from jaxscope._jaxpr.params import is_noisy_param
from jaxscope._jaxpr.view import JaxprView
from jaxscope._paths import short_path
from jaxscope._profile.memory import MemoryView
from jaxscope._records import EqnInfo, OpInfo, SourceLoc, fast_init
from jaxscope._sharding.program import ProgramShardingView
from jaxscope.compat import recompiles as _crec

#: The facts' format; a snapshot written by another version is read again only if equal.
FORMAT = 1

# Ops that only pass values around: no work, and their number shifts with layouts.
_BOOKKEEPING = frozenset(
    {"parameter", "get-tuple-element", "tuple", "bitcast", "constant", "after-all"}
)
_COLLECTIVE_OPCODES = {
    "all-reduce": "all-reduce",
    "all-reduce-start": "all-reduce",
    "all-gather": "all-gather",
    "all-gather-start": "all-gather",
    "reduce-scatter": "reduce-scatter",
    "all-to-all": "all-to-all",
    "ragged-all-to-all": "all-to-all",
    "collective-permute": "collective-permute",
    "collective-permute-start": "collective-permute",
}
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+|0x[0-9a-fA-F]{6,}")
_LAYOUT = re.compile(r"\{[^{}]*\}")


class EqnSig(NamedTuple):
    """One equation without its variable names: equal signatures, equal equations.

    ``within``: the nested jaxprs it sits in, outermost first, each as
    ``"primitive/index"`` (``"scan/0"``, ``"cond/1"``); ``inputs``: operand types
    (a literal as its value, ``2.0:f32[]``); ``params``: ``(name, value)`` pairs,
    nested jaxprs as ``{N eqns}``, addresses removed.
    """

    within: tuple[str, ...]
    primitive: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    params: tuple[tuple[str, str], ...]

    def text(self) -> str:
        """``mul f32[], f32[3] -> f32[3]`` (params in brackets after the primitive)."""
        params = " ".join(f"{k}={v}" for k, v in self.params if _shown_param(k, v))
        head = f"{self.primitive}[{params}]" if params else self.primitive
        where = "".join(f"{w} > " for w in self.within)
        return f"{where}{head} {', '.join(self.inputs)} -> {', '.join(self.outputs)}"


def _shown_param(key: str, value: str) -> bool:
    return not is_noisy_param(key, value)


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class LineFacts:
    """One user source line of a program.

    ``where`` is ``"file:line"`` as views show it (``""``: no user line); ``code``
    the line's text, which pairs it with its counterpart in another program (so a
    line that only moved is the same line); ``function`` the function it is in.
    """

    where: str
    code: str = ""
    function: str = ""
    loc: SourceLoc | None = field(default=None, compare=False)
    eqns: tuple[EqnSig, ...] = ()
    ops: dict[str, int] = field(default_factory=dict[str, int])
    fusions: int = 0
    collectives: dict[str, int] = field(default_factory=dict[str, int])
    collective_bytes: int = 0
    flops: float | None = None
    bytes: float | None = None
    peak_bytes: int | None = None

    @property
    def label(self) -> str:
        """``"model.py:42"``, or ``"(no source line)"``."""
        return self.where or "(no source line)"

    @property
    def token(self) -> str:
        """What pairs this line with one of another program: its code, else where."""
        return self.code or self.where


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgramFacts:
    """A program's facts: inputs, lines in program order, totals.

    ``levels`` says what was read: ``"jaxpr"`` (equations), ``"hlo"`` (optimized
    ops, costs), ``"memory"`` (the peak). ``totals`` maps ``equations``, ``flops``,
    ``bytes_accessed``, ``hlo_ops``, ``temp_bytes``, ``peak_bytes``,
    ``collectives``, ``collective_bytes`` to numbers, for the levels read.
    """

    name: str
    kind: str
    levels: tuple[str, ...]
    inputs: tuple[tuple[str, str], ...] = ()
    lines: tuple[LineFacts, ...] = ()
    totals: dict[str, float] = field(default_factory=dict[str, float])

    def merged(self, other: ProgramFacts) -> ProgramFacts:
        """These facts with ``other``'s levels added (one program read at two levels)."""
        by_token: dict[tuple[str, str], LineFacts] = {}
        order: list[tuple[str, str]] = []
        for line in (*self.lines, *other.lines):
            key = (line.where, line.code)
            found = by_token.get(key)
            if found is None:
                by_token[key] = line
                order.append(key)
            else:
                by_token[key] = _merge_line(found, line)
        return ProgramFacts(
            name=self.name or other.name,
            kind=self.kind if self.kind == other.kind else "program",
            levels=tuple(dict.fromkeys((*self.levels, *other.levels))),
            inputs=self.inputs or other.inputs,
            lines=tuple(by_token[k] for k in order),
            totals={**other.totals, **self.totals},
        )


def _merge_line(a: LineFacts, b: LineFacts) -> LineFacts:
    return LineFacts(
        where=a.where,
        code=a.code,
        function=a.function or b.function,
        loc=a.loc or b.loc,
        eqns=a.eqns or b.eqns,
        ops=a.ops or b.ops,
        fusions=a.fusions or b.fusions,
        collectives=a.collectives or b.collectives,
        collective_bytes=a.collective_bytes or b.collective_bytes,
        flops=a.flops if a.flops is not None else b.flops,
        bytes=a.bytes if a.bytes is not None else b.bytes,
        peak_bytes=a.peak_bytes if a.peak_bytes is not None else b.peak_bytes,
    )


@functools.singledispatch
def program_facts(view: Any) -> ProgramFacts:
    """The facts of ``view``, read by the reader registered for its type."""
    raise InvalidCallError(
        f"js.diff cannot compare a {type(view).__name__}; pass two views of the "
        "same kind (JaxprView, HloView, MemoryView, ProgramShardingView, "
        "CompileProfile), two "
        "functions (js.diff(f_old, f_new)(*args)) or one function "
        "(js.diff(f)(args_a, args_b))"
    )


def can_compare(view: Any) -> bool:
    """Whether a reader is registered for ``view``'s type."""
    return program_facts.dispatch(type(view)) is not program_facts.dispatch(object)


# ------------------------------------------------------------------ jaxpr


def _clean(text: str) -> str:
    return _ADDRESS.sub("", text)


def _type_text(shape: str, dtype: str, weak: bool) -> str:
    return f"{dtype}[{shape}]" + (" (weak: Python scalar)" if weak else "")


def jaxpr_inputs(view: JaxprView) -> tuple[tuple[str, str], ...]:
    """``(name, type)`` of each input of the jaxpr, weak types marked."""
    avals: list[Any] = list(getattr(view.closed_jaxpr, "in_avals", ()))
    names = view.arg_names or ()
    out: list[tuple[str, str]] = []
    for i, aval in enumerate(avals):
        name = names[i] if i < len(names) else f"input {i}"
        out.append((name, _type_text(*_crec.aval_type(aval))))
    return tuple(out)


def line_of(loc: SourceLoc | None) -> tuple[str, str]:
    if loc is None:
        return ("", "")
    return (str(loc), loc.function or "")


def eqn_signatures(eqns: Iterable[EqnInfo]) -> list[tuple[EqnInfo, EqnSig]]:
    """Each equation with its signature, in program order."""
    by_path: dict[tuple[int, ...], EqnInfo] = {}
    within_of: dict[tuple[int, ...], tuple[str, ...]] = {(): ()}
    out: list[tuple[EqnInfo, EqnSig]] = []
    # equal parts are shared: tuples made once, hashed once
    seen: dict[Any, Any] = {}
    for eqn in eqns:
        path = eqn.path
        if len(path) == 1:
            within: tuple[str, ...] = ()
        else:
            by_path[path] = eqn
            region = path[:-1]
            found = within_of.get(region)
            if found is None:
                parent = by_path.get(path[:-2])
                outer = within_of.get(path[:-3], ()) if parent is not None else ()
                name = parent.primitive if parent is not None else "?"
                found = within_of[region] = (*outer, f"{name}/{path[-2]}")
            within = found
        if eqn.n_subjaxprs:
            by_path[path] = eqn
        items = tuple(eqn.params.items())
        params = seen.get(items)
        if params is None:
            params = seen[items] = tuple(
                (k, _clean(v) if "0x" in v else v) for k, v in items
            )
        inputs = tuple([n if ":" in n else t for n, t in eqn.inputs])
        inputs = seen.setdefault(inputs, inputs)
        outputs = tuple([t for _, t in eqn.outputs])
        outputs = seen.setdefault(outputs, outputs)
        out.append((eqn, EqnSig(within, eqn.primitive, inputs, outputs, params)))
    return out


@program_facts.register
def _(view: JaxprView) -> ProgramFacts:
    lines: dict[tuple[str, int] | None, list[EqnSig]] = {}
    locs: dict[tuple[str, int] | None, SourceLoc | None] = {}
    for eqn, sig in eqn_signatures(view.eqns):
        loc = eqn.source
        key = loc.key if loc is not None else None
        found = lines.get(key)
        if found is None:
            found = lines[key] = []
            locs[key] = loc
        found.append(sig)
    text = view.source_text
    out: list[LineFacts] = []
    shown: dict[str, str] = {}
    for key, sigs in lines.items():
        loc = locs[key]
        where, function = "", ""
        if loc is not None:
            file = shown.get(loc.file)
            if file is None:
                file = shown[loc.file] = short_path(loc.file)
            where, function = f"{file}:{loc.line}", loc.function or ""
        out.append(
            LineFacts(
                where=where,
                function=function,
                code=text.get(key, "") if key is not None else "",
                loc=loc,
                eqns=tuple(sigs),
            )
        )
    return ProgramFacts(
        name=view.function_name,
        kind="JaxprView",
        levels=("jaxpr",),
        inputs=jaxpr_inputs(view),
        lines=tuple(out),
        totals={"equations": float(len(view.eqns))},
    )


# ------------------------------------------------------------------ optimized HLO


def _op_key(op: OpInfo) -> str:
    return f"{op.opcode} {_LAYOUT.sub('', op.shape)}"


def _op_costs(view: HloView) -> dict[str, tuple[float, float]]:
    """``{op name: (flops, bytes)}`` estimated from shapes as ``js.profile`` does
    (empty where the module cannot be read)."""
    from jaxscope._profile.costs import op_cost
    from jaxscope._profile.hlo_facts import ModuleFacts

    try:
        module = ModuleFacts(view)
        out: dict[str, tuple[float, float]] = {}
        for name, facts in module.ops.items():
            if facts.op.opcode == "fusion":
                continue  # its members are counted on their own lines
            cost = op_cost(facts, module)
            out[name] = (cost.flops + cost.transcendentals, cost.bytes_accessed)
        return out
    except Exception:
        return {}


def _collective_bytes(view: HloView) -> dict[str, int]:
    """``{op name: bytes one device hands to it}`` of the collectives."""
    if view.stage == "stablehlo":
        return {}
    from jaxscope._sharding.collectives import parse_collectives

    try:
        return {c.name: c.bytes for c in parse_collectives(view.text)}
    except Exception:
        return {}


@program_facts.register
def _(view: HloView) -> ProgramFacts:
    costs = _op_costs(view) if view.stage != "stablehlo" else {}
    moved = _collective_bytes(view)
    acc: dict[tuple[str, str], dict[str, Any]] = {}
    locs: dict[tuple[str, str], SourceLoc | None] = {}
    n_ops = 0
    for op in view.ops:
        if op.opcode in _BOOKKEEPING:
            continue
        n_ops += 1
        key = line_of(op.source)
        line = acc.get(key)
        if line is None:
            line = acc[key] = {
                "ops": {},
                "fusions": 0,
                "collectives": {},
                "collective_bytes": 0,
                "flops": 0.0,
                "bytes": 0.0,
            }
            locs[key] = op.source
        ops: dict[str, int] = line["ops"]
        name = _op_key(op)
        ops[name] = ops.get(name, 0) + 1
        if op.opcode == "fusion":
            line["fusions"] += 1
        kind = _COLLECTIVE_OPCODES.get(op.opcode)
        if kind is not None:
            collectives: dict[str, int] = line["collectives"]
            collectives[kind] = collectives.get(kind, 0) + 1
            line["collective_bytes"] += moved.get(op.name, 0)
        flops, nbytes = costs.get(op.name, (0.0, 0.0))
        line["flops"] += flops
        line["bytes"] += nbytes
    lines = tuple(
        LineFacts(
            where=key[0],
            function=key[1],
            code=_hlo_code(view, locs[key]),
            loc=locs[key],
            ops=dict(sorted(values["ops"].items())),
            fusions=values["fusions"],
            collectives=values["collectives"],
            collective_bytes=values["collective_bytes"],
            flops=values["flops"] if costs else None,
            bytes=values["bytes"] if costs else None,
        )
        for key, values in acc.items()
    )
    totals: dict[str, float] = {"hlo_ops": float(n_ops)}
    cost = view.cost or {}
    for name in ("flops", "bytes_accessed"):
        if name in cost:
            totals[name] = float(cost[name])
    memory = view.memory or {}
    if memory.get("temp_bytes") is not None:
        totals["temp_bytes"] = float(memory["temp_bytes"] or 0)
    if view.stage != "stablehlo":
        totals["collectives"] = float(len(moved))
        totals["collective_bytes"] = float(sum(moved.values()))
    return ProgramFacts(
        name=view.function_name,
        kind="HloView",
        levels=("hlo",),
        lines=lines,
        totals=totals,
    )


def code_of(loc: SourceLoc | None) -> str:
    """The text of ``loc``'s line (IPython cells included), or ``""``."""
    if loc is None:
        return ""
    from jaxscope._profile.source import raw_file

    return linecache.getline(raw_file(loc.file), loc.line).strip()


def _hlo_code(view: HloView, loc: SourceLoc | None) -> str:
    if loc is None:
        return ""
    try:
        return view.source_line(loc.file, loc.line)
    except Exception:
        return ""


@program_facts.register(MemoryView)
def memory_facts(view: MemoryView) -> ProgramFacts:
    base = program_facts(view.hlo)
    lines: list[LineFacts] = []
    for line in base.lines:
        found = view.by_line.get(line.loc.key) if line.loc is not None else None
        lines.append(_with_peak(line, found.bytes if found is not None else None))
    return ProgramFacts(
        name=view.function_name,
        kind="MemoryView",
        levels=("hlo", "memory"),
        lines=tuple(lines),
        totals={**base.totals, "peak_bytes": float(view.peak_bytes)},
    )


@program_facts.register(ProgramShardingView)
def sharding_facts(view: ProgramShardingView) -> ProgramFacts:
    acc: dict[str, LineFacts] = {}
    for c in view.collectives:
        where, function = line_of(c.source)
        line = acc.get(where) or LineFacts(where=where, function=function, loc=c.source)
        counts = dict(line.collectives)
        counts[c.kind] = counts.get(c.kind, 0) + 1
        acc[where] = LineFacts(
            where=where,
            function=function,
            code=line.code or code_of(c.source),
            loc=c.source,
            collectives=counts,
            collective_bytes=line.collective_bytes + c.total_bytes,
        )
    return ProgramFacts(
        name=view.function_name,
        kind="ProgramShardingView",
        levels=("collectives",),
        inputs=tuple(view.inputs),
        lines=tuple(acc.values()),
        totals={
            "collectives": float(len(view.collectives)),
            "collective_bytes": float(view.collective_bytes),
        },
    )


def _with_peak(line: LineFacts, peak: int | None) -> LineFacts:
    return LineFacts(
        where=line.where,
        code=line.code,
        function=line.function,
        loc=line.loc,
        ops=line.ops,
        fusions=line.fusions,
        collectives=line.collectives,
        collective_bytes=line.collective_bytes,
        flops=line.flops,
        bytes=line.bytes,
        peak_bytes=peak,
    )


def view_name(view: Any) -> str:
    """A view's function name, for headers."""
    return str(getattr(view, "function_name", "") or qualname(view))


# ------------------------------------------------------------------ snapshots


def _portable(where: str) -> str:
    """``file:line`` with only the file's base name: stable across machines."""
    if not where:
        return ""
    file, _, line = where.rpartition(":")
    return f"{os.path.basename(file)}:{line}"


def to_json(facts: ProgramFacts) -> dict[str, Any]:
    """The facts as JSON-ready data, file paths cut to base names."""
    return {
        "format": FORMAT,
        "name": facts.name,
        "kind": facts.kind,
        "levels": list(facts.levels),
        "inputs": [list(pair) for pair in facts.inputs],
        "totals": {k: facts.totals[k] for k in sorted(facts.totals)},
        "lines": [_line_json(line) for line in facts.lines],
    }


def _line_json(line: LineFacts) -> dict[str, Any]:
    out: dict[str, Any] = {"line": _portable(line.where), "code": line.code}
    if line.function:
        out["function"] = line.function
    if line.eqns:
        out["eqns"] = [sig.text() for sig in line.eqns]
        out["eqn_sigs"] = [
            [
                list(s.within),
                s.primitive,
                list(s.inputs),
                list(s.outputs),
                list(map(list, s.params)),
            ]
            for s in line.eqns
        ]
    for name in ("ops", "collectives"):
        value = getattr(line, name)
        if value:
            out[name] = dict(value)
    for name in ("fusions", "collective_bytes", "flops", "bytes", "peak_bytes"):
        value = getattr(line, name)
        if value:
            out[name] = value
    return out


def from_json(data: dict[str, Any]) -> ProgramFacts:
    """The facts ``to_json`` wrote; raises ``ValueError`` for another format."""
    if data.get("format") != FORMAT:
        raise ValueError(f"snapshot format {data.get('format')!r}, expected {FORMAT}")
    lines = tuple(
        LineFacts(
            where=str(item.get("line", "")),
            code=str(item.get("code", "")),
            function=str(item.get("function", "")),
            eqns=tuple(
                EqnSig(
                    tuple(s[0]),
                    s[1],
                    tuple(s[2]),
                    tuple(s[3]),
                    tuple((str(k), str(v)) for k, v in s[4]),
                )
                for s in item.get("eqn_sigs", ())
            ),
            ops={str(k): int(v) for k, v in item.get("ops", {}).items()},
            fusions=int(item.get("fusions", 0)),
            collectives={
                str(k): int(v) for k, v in item.get("collectives", {}).items()
            },
            collective_bytes=int(item.get("collective_bytes", 0)),
            flops=item.get("flops"),
            bytes=item.get("bytes"),
            peak_bytes=item.get("peak_bytes"),
        )
        for item in data.get("lines", ())
    )
    return ProgramFacts(
        name=str(data.get("name", "")),
        kind=str(data.get("kind", "")),
        levels=tuple(data.get("levels", ())),
        inputs=tuple((str(a), str(b)) for a, b in data.get("inputs", ())),
        lines=lines,
        totals={str(k): float(v) for k, v in data.get("totals", {}).items()},
    )


def portable(facts: ProgramFacts) -> ProgramFacts:
    """The facts as a snapshot stores them (``from_json(to_json(facts))``)."""
    return from_json(to_json(facts))
