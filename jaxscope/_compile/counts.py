# pyright: strict
"""Program size by user line: jaxpr equations, closed-over constants, HLO ops.

Equations are counted as JAX's own ``eqn_count_pprof`` dump counts them: every
equation at every nesting level, each nested jaxpr once however many equations
use it (a loop body once, not once per iteration), under the innermost user frame
of its stack (the enclosing equation's line where JAX recorded none).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from jaxscope._jaxpr.builder import EqnBuilder
from jaxscope._records import OpInfo, SourceLoc
from jaxscope._source import is_library_file
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import recompiles as _crec
from jaxscope.compat import source as _csource

Key = tuple[str, int]

# Primitives whose nested jaxpr is a body JAX keeps as one copy: a loop runs it
# many times, remat and custom derivatives trace it once for several uses.
BODY_KINDS = {
    "scan": "scan body",
    "while": "while body",
    "remat": "remat body",
    "remat2": "remat body",
    "checkpoint": "remat body",
    "custom_vjp_call": "custom_vjp body",
    "custom_vjp_call_jaxpr": "custom_vjp body",
    "custom_jvp_call": "custom_jvp body",
    "shard_map": "shard_map body",
}
_CALLS = frozenset({"jit", "closed_call", "core_call"})


@dataclass
class LineEqns:
    """One line's equations while walking."""

    source: SourceLoc
    eqns: int = 0
    cumulative: int = 0
    body_eqns: int = 0
    bodies: set[str] = field(default_factory=lambda: set[str]())
    primitives: Counter[str] = field(default_factory=lambda: Counter[str]())
    constant_bytes: int = 0
    frames: tuple[SourceLoc, ...] = ()


@dataclass
class EqnCounts:
    """Equations and constants by line, and each line's equation sequences."""

    lines: dict[Key, LineEqns]
    total: int
    outside_eqns: int
    outside_constant_bytes: int
    constant_bytes: int
    # (line, region) -> the primitives the line emitted there, in program order
    sequences: dict[tuple[Key, int], list[str]]
    functions: list[tuple[str, int, SourceLoc | None]]
    constant_names: dict[Key, list[tuple[str, int]]]
    """Each line's embedded constants as ``("float32[256, 256]", bytes)``."""


def _nbytes(value: Any) -> int:
    try:
        return int(getattr(value, "nbytes", 0) or 0)
    except Exception:
        return 0


class _Walker:
    def __init__(self, builder: EqnBuilder) -> None:
        self.b = builder
        self.lines: dict[Key, LineEqns] = {}
        self.total = 0
        self.outside = 0
        self.outside_constants = 0
        self.constants = 0
        self.sequences: dict[tuple[Key, int], list[str]] = {}
        self.visited: set[int] = set()
        self.regions = 0
        self.own: dict[int, tuple[Key, ...]] = {}  # id(frames) -> own-code keys
        self.functions: list[tuple[str, int, SourceLoc | None]] = []
        # id(constvar) -> (bytes, "f32[256,256]")
        self.const_bytes: dict[int, tuple[int, str]] = {}
        self.const_names: dict[Key, list[tuple[str, int]]] = {}

    def _own_keys(self, frames: tuple[SourceLoc, ...]) -> tuple[Key, ...]:
        found = self.own.get(id(frames))
        if found is None:
            keys = [loc.key for loc in frames if not is_library_file(loc.file)]
            found = self.own[id(frames)] = tuple(dict.fromkeys(keys))
        return found

    def walk(
        self,
        jaxpr: Any,
        consts: list[Any],
        enclosing: SourceLoc | None,
        body: str,
        outer: tuple[Key, ...] = (),
    ) -> int:
        region = self.regions
        self.regions += 1
        for var, value in zip(jaxpr.constvars, consts, strict=False):
            size = _nbytes(value)
            if size:
                shape = getattr(value, "shape", ())
                what = f"{getattr(value, 'dtype', '')}{list(shape)}"
                self.const_bytes[id(var)] = (size, what)
        count = 0
        b = self.b
        for eqn in jaxpr.eqns:
            count += 1
            source, frames = b.sources.of(eqn, enclosing)
            prim = b.primitive(eqn)
            size = 0
            read: list[tuple[str, int]] = []
            for var in eqn.invars:
                found = self.const_bytes.pop(id(var), None)
                if found is not None:
                    size += found[0]
                    read.append((found[1], found[0]))
                elif _cj.is_literal(var):
                    literal = _cj.literal_value(var)
                    if getattr(literal, "ndim", 0):
                        size += _nbytes(literal)
            self.constants += size
            stack = outer
            if source is None:
                self.outside += 1
                self.outside_constants += size
            else:
                key = source.key
                line = self.lines.get(key)
                if line is None:
                    line = self.lines[key] = LineEqns(source=source, frames=frames)
                line.eqns += 1
                line.primitives[prim] += 1
                line.constant_bytes += size
                if read:
                    self.const_names.setdefault(key, []).extend(read)
                if body:
                    line.body_eqns += 1
                    line.bodies.add(body)
                seq = self.sequences.get((key, region))
                if seq is None:
                    seq = self.sequences[(key, region)] = []
                seq.append(prim)
                stack = tuple(dict.fromkeys((key, *self._own_keys(frames), *outer)))
                for own in stack:
                    other = self.lines.get(own)
                    if other is None:
                        loc = next((f for f in frames if f.key == own), source)
                        other = self.lines[own] = LineEqns(source=loc, frames=frames)
                    other.cumulative += 1
            for _label, sub in b.subjaxprs(eqn):
                opened, sub_consts = _cj.open_jaxpr(sub)
                if id(opened) in self.visited:
                    continue
                self.visited.add(id(opened))
                inner = self.walk(
                    opened, sub_consts, source, BODY_KINDS.get(prim, body), stack
                )
                count += inner
                if prim in _CALLS and not _is_jax_function(sub):
                    name = str(eqn.params.get("name", "") or "")
                    self.functions.append((name, inner, source))
        return count


def _is_jax_function(jaxpr: Any) -> bool:
    """Whether a nested jit's function is JAX's own (``jnp.where``'s ``_where``)."""
    where = _crec.jaxpr_source(jaxpr if hasattr(jaxpr, "jaxpr") else _Closed(jaxpr))
    file = where.rsplit(" at ", 1)[-1].rsplit(":", 1)[0] if " at " in where else ""
    return bool(file) and _csource.is_jax_file(file)


class _Closed:
    """An open jaxpr seen as ``jaxpr_source`` reads a closed one."""

    def __init__(self, jaxpr: Any) -> None:
        self.jaxpr = jaxpr


def count_eqns(closed_jaxpr: Any) -> EqnCounts:
    """Equations and embedded constants of a traced program, by user line; dead
    code is dropped first, as JAX drops it before lowering."""
    builder = EqnBuilder()
    jaxpr, consts = _cj.lowered_jaxpr(closed_jaxpr)
    builder.sources.cut.learn(
        _csource.frames_of(_csource.eqn_traceback(eqn)) for eqn in jaxpr.eqns
    )
    walker = _Walker(builder)
    walker.visited.add(id(jaxpr))
    walker.total = walker.walk(jaxpr, consts, None, "")
    # constants no equation reads (returned as they are) belong to no line
    unused = sum(size for size, _ in walker.const_bytes.values())
    return EqnCounts(
        lines=walker.lines,
        total=walker.total,
        outside_eqns=walker.outside,
        outside_constant_bytes=walker.outside_constants + unused,
        constant_bytes=walker.constants + unused,
        sequences=walker.sequences,
        functions=walker.functions,
        constant_names=walker.const_names,
    )


def ops_by_line(
    ops: list[OpInfo],
) -> tuple[Counter[Key], int, dict[Key, SourceLoc], dict[Key, Counter[str]]]:
    """``(ops per line, ops with no line, a SourceLoc per line, opcodes per line)``."""
    counts: Counter[Key] = Counter()
    locs: dict[Key, SourceLoc] = {}
    opcodes: dict[Key, Counter[str]] = {}
    outside = 0
    for op in ops:
        if op.source is None:
            outside += 1
            continue
        key = op.source.key
        counts[key] += 1
        locs.setdefault(key, op.source)
        found = opcodes.get(key)
        if found is None:
            found = opcodes[key] = Counter()
        found[op.opcode] += 1
    return counts, outside, locs, opcodes
