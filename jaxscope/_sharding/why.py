# pyright: strict
"""Why each collective is in a partitioned program.

A collective carries the ``op_name`` and stack of the op it was inserted for; that op,
in the module XLA handed to its partitioner, has its operands' shardings. From them:
which dimension the op sums over or needs whole, which mesh axis splits it, and
whether the user asked for the collective (``psum``, ``with_sharding_constraint``,
``reshard``) or the partitioner inserted it.
"""

from __future__ import annotations

import dataclasses
import linecache
import re
from collections.abc import Sequence

from jaxscope._format import a_an, format_bytes
from jaxscope._hlo.parse import short_shape, split_top_level
from jaxscope._records import SourceLoc
from jaxscope._sharding.collectives import Collective, CollectiveReason
from jaxscope._sharding.mesh import Spec, parse_spec, sharded_type
from jaxscope._sharding.ops import OpSharding

# Primitives whose collective the user wrote (inside shard_map / pmap).
_ASKED = {
    "psum": "psum",
    "pmean": "pmean",
    "pmax": "pmax",
    "pmin": "pmin",
    "all_gather": "all_gather",
    "psum_scatter": "psum_scatter",
    "reduce_scatter": "psum_scatter",
    "ppermute": "ppermute",
    "all_to_all": "all_to_all",
    "sharding_constraint": "with_sharding_constraint",
    "reshard": "jax.sharding.reshard",
}
_PRIMITIVE = re.compile(r"([A-Za-z_]\w*)\)*$")
_DIMS = re.compile(r"(\w+)=\{([\d,]*)\}")
_ARRAY = re.compile(r"^(\w+)\[([\d,]*)\]")


def _primitives(op_name: str) -> list[str]:
    """The primitive of each op XLA merged into ``op_name`` (one when not merged)."""
    body = op_name.split("/", 1)[1] if "/" in op_name else op_name
    if body.startswith("(") and body.endswith(")"):
        parts = body[1:-1].split(":")
    else:
        parts = [body]
    out: list[str] = []
    for part in parts:
        found = _PRIMITIVE.search(part.split("/")[-1])
        out.append(found.group(1) if found else part)
    return out


def _parts(op_name: str) -> list[str]:
    """``op_name`` of each op XLA merged (``jit(f)/(a:b)`` -> ``jit(f)/a``, ...)."""
    head, _, body = op_name.partition("/")
    if body.startswith("(") and body.endswith(")"):
        return [f"{head}/{p}" for p in body[1:-1].split(":")]
    return [op_name]


def _shape(text: str) -> tuple[str, tuple[int, ...]] | None:
    found = _ARRAY.match(short_shape(text))
    if found is None:
        return None
    return found.group(1), tuple(int(d) for d in found.group(2).split(",") if d)


def _typed(op: OpSharding | None) -> tuple[str, Spec | None]:
    """``op``'s result as ``f32[64@data,32]`` and its spec."""
    if op is None:
        return "?", None
    shaped = _shape(op.shape)
    if shaped is None:
        return short_shape(op.shape), None
    dtype, dims = shaped
    spec = parse_spec(op.spec, len(dims))
    if spec is None:
        return f"{dtype}[{','.join(map(str, dims))}]", None
    return sharded_type(dtype, dims, spec), spec


def _dim_lists(text: str) -> dict[str, tuple[int, ...]]:
    return {
        key: tuple(int(d) for d in value.split(",") if d)
        for key, value in _DIMS.findall(text)
    }


def _axes(axes: Sequence[str]) -> str:
    return " and ".join(f"`{a}`" for a in axes)


def _expression(file: str, line: int) -> str:
    """The code at ``file:line``, stripped (shortened past 60 characters)."""
    text = linecache.getline(file, line).strip()
    return text if len(text) <= 60 else text[:59] + "…"


def _where(loc: SourceLoc | None, raw_files: dict[str, str]) -> str:
    if loc is None:
        return "an op without a source line"
    code = _expression(raw_files.get(loc.file, loc.file), loc.line)
    return f"`{code}` at {loc}" if code else f"the op at {loc}"


class _Index:
    """The ops of the module XLA partitioned, by name and by (op_name, line)."""

    def __init__(
        self,
        ops: Sequence[OpSharding],
        mesh: dict[str, int],
        raw_files: dict[str, str],
    ) -> None:
        self.mesh = mesh
        self.raw_files = raw_files
        self.by_name = {op.name: op for op in ops}
        self.by_key: dict[tuple[str, tuple[str, int] | None], list[OpSharding]] = {}
        self.by_op_name: dict[str, list[OpSharding]] = {}
        for op in ops:
            key = (op.op_name, op.source.key if op.source is not None else None)
            self.by_key.setdefault(key, []).append(op)
            self.by_op_name.setdefault(op.op_name, []).append(op)

    def served(self, op_name: str, source: SourceLoc | None) -> list[OpSharding]:
        found = self.by_key.get((op_name, source.key if source else None))
        return found if found else self.by_op_name.get(op_name, [])


def _split_dims(spec: Spec | None, dims: Sequence[int], axes: Sequence[str]) -> bool:
    """Whether one of ``dims`` of ``spec`` is split over one of ``axes``."""
    if spec is None:
        return False
    return any(d < len(spec) and set(spec[d]) & set(axes) for d in dims)


def _dot(c: Collective, op: OpSharding, index: _Index) -> CollectiveReason | None:
    """An all-reduce / reduce-scatter for a dot whose contracting dims are split."""
    dims = _dim_lists(op.dims)
    if len(op.operands) < 2:
        return None
    lhs, rhs = (index.by_name.get(n) for n in op.operands[:2])
    (lt, ls), (rt, rs) = _typed(lhs), _typed(rhs)
    axes = c.axes or ()
    lc, rc = dims.get("lhs_contracting_dims", ()), dims.get("rhs_contracting_dims", ())
    split_l, split_r = _split_dims(ls, lc, axes), _split_dims(rs, rc, axes)
    if not (split_l or split_r):
        return None
    which = (
        "both operands"
        if split_l and split_r
        else ("its left operand" if split_l else "its right operand")
    )
    result, _ = _typed(op)
    verb = (
        "an all-reduce over {a} adds the partial results"
        if c.kind == "all-reduce"
        else "a reduce-scatter over {a} adds the partial results and splits the sum"
    )
    return CollectiveReason(
        text=(
            f"{_where(op.source, index.raw_files)} contracts over {_axes(axes)}, which splits {which} "
            f"({lt} and {rt}): each device multiplies its slices, and "
            + verb.format(a=_axes(axes))
        ),
        op=op.opcode,
        operands=(lt, rt),
        result=result,
        axes=tuple(axes),
        dims=lc,
    )


def _reduce(c: Collective, op: OpSharding, index: _Index) -> CollectiveReason | None:
    """An all-reduce for a reduction over a split dimension."""
    dims = _dim_lists(op.dims).get("dimensions", ())
    source = index.by_name.get(op.operands[0]) if op.operands else None
    typed, spec = _typed(source)
    axes = c.axes or ()
    if not _split_dims(spec, dims, axes):
        return None
    result, _ = _typed(op)
    which = ", ".join(str(d) for d in dims)
    return CollectiveReason(
        text=(
            f"{_where(op.source, index.raw_files)} reduces dimension{'s' if len(dims) > 1 else ''} "
            f"{which} of {typed}, split over {_axes(axes)}: each device reduces its "
            f"slice, and an all-reduce over {_axes(axes)} combines the results"
        ),
        op=op.opcode,
        operands=(typed,),
        result=result,
        axes=tuple(axes),
        dims=dims,
    )


def _local(
    dims: tuple[int, ...], spec: Spec, mesh: dict[str, int], drop: Sequence[str]
) -> tuple[int, ...]:
    """The per-device shape of an array of global ``dims`` laid out as ``spec``,
    the axes ``drop`` gathered."""
    out: list[int] = []
    for d, axes in zip(dims, spec, strict=False):
        n = 1
        for a in axes:
            if a not in drop:
                n *= mesh.get(a, 1)
        out.append(d // n if n else d)
    return tuple(out)


def _gather(c: Collective, op: OpSharding, index: _Index) -> CollectiveReason | None:
    """An all-gather that gives an op the whole of a dimension split over an axis:
    the operand whose slices, gathered over the axis, have the collective's shape."""
    axes = c.axes or ()
    gathered = _shape(c.shape)
    for name in op.operands:
        operand = index.by_name.get(name)
        typed, spec = _typed(operand)
        shaped = _shape(operand.shape) if operand is not None else None
        if spec is None or shaped is None:
            continue
        dims = tuple(i for i, a in enumerate(spec) if set(a) & set(axes))
        if not dims:
            continue
        if (
            gathered is not None
            and _local(shaped[1], spec, index.mesh, axes) != (gathered[1])
        ):
            continue
        result, _ = _typed(op)
        return CollectiveReason(
            text=(
                f"{_where(op.source, index.raw_files)} ({op.opcode}) needs {typed} whole along "
                f"dimension {', '.join(map(str, dims))}, which is split over "
                f"{_axes(axes)}: an all-gather over {_axes(axes)} collects the "
                "slices on every device"
            ),
            op=op.opcode,
            operands=(typed,),
            result=result,
            axes=tuple(axes),
            dims=dims,
        )
    return None


def _reshard(c: Collective, op: OpSharding, index: _Index) -> CollectiveReason | None:
    """Data moved between two layouts: an operand laid out unlike the op's result."""
    result, target = _typed(op)
    if target is None:
        return None
    moved: list[str] = []
    for name in op.operands:
        operand = index.by_name.get(name)
        typed, spec = _typed(operand)
        if spec is not None and len(spec) == len(target) and spec != target:
            moved.append(typed)
    if not moved:
        return None
    return CollectiveReason(
        text=(
            f"{_where(op.source, index.raw_files)} ({op.opcode}) works on {result}, and "
            f"{' and '.join(moved)} {'is' if len(moved) == 1 else 'are'} laid out "
            f"differently: {a_an(c.kind)} over {_axes(c.axes or ())} moves the data "
            "to the result's layout (resharding)"
        ),
        op=op.opcode,
        operands=tuple(moved),
        result=result,
        axes=tuple(c.axes or ()),
        suggestion=(
            "create the operands with the same sharding (device_put / "
            "with_sharding_constraint where they are made) so no data moves"
        ),
    )


_BUILDERS = {
    ("all-reduce", "dot"): _dot,
    ("reduce-scatter", "dot"): _dot,
    ("all-reduce", "reduce"): _reduce,
    ("reduce-scatter", "reduce"): _reduce,
    ("all-gather", None): _gather,
    ("all-to-all", None): _reshard,
    ("collective-permute", None): _reshard,
}


def _one(c: Collective, op_name: str, index: _Index) -> CollectiveReason | None:
    """The reason of one (not merged) op's collective."""
    primitive = _primitives(op_name)[0]
    asked = next(
        (
            v
            for k, v in _ASKED.items()
            if primitive == k or primitive.startswith(k + "_")
        ),
        "",
    )
    if asked:
        return CollectiveReason(
            text=(
                f"{_where(c.source, index.raw_files)} asks for it ({asked}): {a_an(c.kind)} over "
                f"{_axes(c.axes or ())}"
                if c.axes
                else f"{_where(c.source, index.raw_files)} asks for it ({asked})"
            ),
            asked=asked,
            axes=tuple(c.axes or ()),
        )
    for op in index.served(op_name, c.source):
        build = _BUILDERS.get((c.kind, op.opcode)) or _BUILDERS.get((c.kind, None))
        if build is None:
            continue
        reason = build(c, op, index)
        if reason is not None:
            return reason
    return None


def _bytes(c: Collective) -> str:
    per = format_bytes(c.bytes)
    if c.runs is None:
        return f"{per} per device per loop iteration"
    if c.runs == 1:
        return f"{per} per device per step"
    return f"{per} per device, {c.runs} times per step ({format_bytes(c.total_bytes)})"


def collective_reasons(
    collectives: Sequence[Collective],
    ops: Sequence[OpSharding],
    mesh: dict[str, int] | None,
    raw_files: dict[str, str] | None = None,
) -> list[CollectiveReason]:
    """Why each of ``collectives`` is there, read from ``ops`` (the module XLA
    handed to its partitioner) on the program's ``mesh``; ``raw_files`` maps a shown
    file (``In [3]``) to the name its source is cached under."""
    index = _Index(ops, mesh or {}, raw_files or {})
    return [_reason(c, index) for c in collectives]


_COMBINED = ("all-reduce", "reduce-scatter")


def _arrays(shape: str) -> int:
    """How many arrays an HLO shape holds (a tuple's elements, else 1)."""
    shape = shape.strip()
    if not shape.startswith("("):
        return 1
    return len([p for p in split_top_level(shape[1:-1]) if p.strip()])


def _reason(c: Collective, index: _Index) -> CollectiveReason:
    parts = list(dict.fromkeys(_parts(c.op_name)))
    # An all-to-all returns its pieces as a tuple; the combiners merge the others.
    arrays = _arrays(c.shape) if c.kind in _COMBINED else 1
    merged = max(len(_parts(c.op_name)), arrays)
    if merged == 1:
        single = _one(c, c.op_name, index)
        if single is None:
            return _unexplained(c, index)
        return dataclasses.replace(
            single,
            text=f"{single.text}: {_bytes(c)}",
            lines=(c.source,) if c.source is not None else (),
        )
    # XLA merged the collectives of several ops into one (its combiner passes):
    # each op with a merged op_name whose shardings call for this collective.
    found: list[CollectiveReason] = []
    lines: list[SourceLoc] = []
    for part in parts:
        for op in index.by_op_name.get(part, []):
            build = _BUILDERS.get((c.kind, op.opcode)) or _BUILDERS.get((c.kind, None))
            reason = build(c, op, index) if build is not None else None
            if reason is None:
                continue
            found.append(reason)
            if op.source is not None and op.source not in lines:
                lines.append(op.source)
    what = " of the backward pass" if all("transpose(" in p for p in parts) else ""
    over = f" over {_axes(c.axes)}" if c.axes else ""
    head = f"XLA combined {merged} {c.kind}s{what}{over} into one"
    where = f" (lines {', '.join(str(loc) for loc in lines)})" if lines else ""
    first = f"; for example {found[0].text}" if found else ""
    return CollectiveReason(
        text=f"{head}{where}{first}: {_bytes(c)}",
        axes=tuple(c.axes or ()),
        op=found[0].op if found else "",
        operands=found[0].operands if found else (),
        result=found[0].result if found else "",
        lines=tuple(lines) or ((c.source,) if c.source is not None else ()),
    )


def _unexplained(c: Collective, index: _Index) -> CollectiveReason:
    over = f" over {_axes(c.axes)}" if c.axes else ""
    return CollectiveReason(
        text=(
            f"the partitioner inserted {a_an(c.kind)}{over} for {_where(c.source, index.raw_files)}: "
            f"{_bytes(c)}"
        ),
        axes=tuple(c.axes or ()),
        lines=(c.source,) if c.source is not None else (),
    )
