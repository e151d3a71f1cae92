# pyright: strict
"""The hint of a sharding error (``ShardingTypeError``, a spec that does not divide a
dimension, an axis the mesh lacks, ``shard_map`` specs that disagree with the input):
the operands' shardings, and a fix written in the user's names that runs when pasted.
"""

from __future__ import annotations

import ast
import difflib
import re

from jaxscope._explain.facts import Explanation, Facts
from jaxscope._explain.messages import first_line
from jaxscope._explain.sharded import ShardedOperand, ShardingFacts
from jaxscope._explain.site import Site
from jaxscope._sharding.mesh import Spec

CONTRACTING = re.compile(r"Contracting dimensions are sharded")
INCOMPATIBLE = re.compile(
    r"got incompatible shardings|All operands should have the same sharding"
)
NOT_DIVISIBLE = re.compile(
    r"array axis (?P<dim>\d+) is partitioned (?P<n>\d+) times, but does not evenly "
    r"divide the dimension size (?P<size>\d+)"
    r"|maps array axis (?P<dim2>\d+) \(of size (?P<size2>\d+)\) to mesh axis "
    r"'(?P<axis2>[^']+)' \(of size (?P<n2>\d+)\)"
)
UNKNOWN_AXIS = re.compile(
    r"Resource axis: (?P<name>\S+) of .* is not found in mesh: \((?P<axes>[^)]*)\)"
    r"|must refer to an axis marked as manual \(frozenset\(\{(?P<axes2>[^}]*)\}\)\), "
    r"but:\s+\w+ refers to '(?P<name2>[^']+)'"
)
DUPLICATE = re.compile(r"has duplicate entries for `(?P<name>[^`]+)`")
IN_SPECS = re.compile(
    r"in_specs passed to shard_map: (?P<given>P\(.*?\)) does not match the specs of "
    r"the input: (?P<actual>P\(.*?\)) for arg"
)
NO_MESH = re.compile(r"Using PartitionSpec when you are not under a mesh context")
SHARDING_MESSAGES = (
    CONTRACTING,
    INCOMPATIBLE,
    NOT_DIVISIBLE,
    UNKNOWN_AXIS,
    DUPLICATE,
    IN_SPECS,
    NO_MESH,
)
# JAX's repr of a sharding in a message: its spec says all the reader needs (jax
# 0.9 writes the spec as PartitionSpec(...), 0.10 as P(...)).
_NAMED = re.compile(
    r"NamedSharding\(mesh=(?:Abstract)?Mesh\((?:[^()]|\([^()]*\))*\), "
    r"spec=(?:P|PartitionSpec)(?P<spec>\((?:[^()]|\([^()]*\))*\))[^()]*\)"
)
# shard_map's message gives the mesh, which the (unsharded) operands may not.
_MESH_GIVEN = re.compile(
    r"The mesh given has shape \((?P<sizes>[^)]*)\) with corresponding axis names "
    r"\((?P<names>[^)]*)\)"
)
SHARDING_ERRORS = ("ShardingTypeError", "DuplicateSpecError")
_MATMULS = ("matmul", "dot", "einsum", "tensordot", "inner")


_COLLECTIVES = frozenset(
    {
        "psum",
        "pmean",
        "pmax",
        "pmin",
        "all_gather",
        "psum_scatter",
        "ppermute",
        "all_to_all",
        "axis_index",
        "axis_size",
    }
)


def collective_axis(site: Site) -> str:
    """The axis name a failing ``jax.lax.psum(x, "batch")``-like call names ("" when
    the site is no such call or the name is not written as a constant)."""
    node = site.node
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name not in _COLLECTIVES:
        return ""
    given = next((k.value for k in node.keywords if k.arg == "axis_name"), None)
    if given is None:
        index = 0 if name in ("axis_index", "axis_size") else 1
        given = node.args[index] if len(node.args) > index else None
    if isinstance(given, ast.Constant) and isinstance(given.value, str):
        return given.value
    return ""


def is_unknown_collective_axis(exc: BaseException, site: Site) -> bool:
    """JAX's bare ``AssertionError`` for a collective inside ``shard_map`` over an
    axis name the mesh lacks."""
    return (
        isinstance(exc, AssertionError)
        and not str(exc).strip()
        and bool(collective_axis(site))
    )


def is_sharding_message(text: str) -> bool:
    """Whether JAX's message ``text`` is about shardings rather than shapes."""
    return any(p.search(text) for p in SHARDING_MESSAGES)


def _axes_text(axes: tuple[str, ...]) -> str:
    return " and ".join(f"`{a}`" for a in axes)


def _layout_lines(sharding: ShardingFacts) -> tuple[str, ...]:
    """Per sharded operand, its type and the tile each device holds."""
    out: list[str] = []
    n = 1
    for _, size in sharding.mesh:
        n *= size
    for o in sharding.operands:
        if not any(o.spec):
            continue
        local = sharding.local_shape(o)
        tile = f"{o.dtype}[{','.join(str(d) for d in local)}]"
        split = ", ".join(
            f"dimension {i} over {' and '.join(axes)}"
            for i, axes in enumerate(o.spec)
            if axes
        )
        out.append(f"{o.expr} on the {n} devices: a {tile} tile each ({split})")
    return tuple(out)


def sharding_explanation(facts: Facts) -> Explanation:
    """JAX's first line with the operands' sharded types, and the fix."""
    first = _NAMED.sub(r"P\g<spec>", first_line(facts.text))
    axis = collective_axis(facts.site)
    if not first and axis:
        first = f"unknown mesh axis '{axis}' in a collective"
    site = facts.site
    expr = site.text(site.node)
    described = ", ".join(f"{o.expr}: {o.aval}" for o in facts.operands if o.aval)
    message = first
    if expr:
        message = f"{first} — in `{expr}`" + (f" with {described}" if described else "")
    hint = _hint(facts)
    return Explanation(message, hint, _layout_lines(facts.sharding))


def _hint(facts: Facts) -> str:
    text = facts.text
    axis = collective_axis(facts.site)
    if axis and not text.strip():
        known = [a for a, _ in facts.sharding.mesh]
        if known:
            return _unknown_axis(axis, known).replace(
                "name one of those in the spec",
                "a collective inside shard_map can only name those",
            )
        return (
            f"'{axis}' is not an axis of the mesh this shard_map runs over: name one "
            "of the mesh's axes"
        )
    if CONTRACTING.search(text):
        return _contracting(facts)
    if INCOMPATIBLE.search(text):
        return _incompatible(facts)
    found = NOT_DIVISIBLE.search(text)
    if found:
        return _not_divisible(facts, found)
    found = UNKNOWN_AXIS.search(text)
    if found:
        name = found.group("name") or found.group("name2") or ""
        axes = found.group("axes") if found.group("name") else found.group("axes2")
        known = [a.strip().strip("'\"") for a in (axes or "").split(",") if a.strip()]
        return _unknown_axis(name, sorted(known) if found.group("name2") else known)
    found = DUPLICATE.search(text)
    if found:
        name = found.group("name")
        return (
            f"A mesh axis can split one dimension only, and `{name}` is given twice: "
            f"keep it on one dimension (None on the other), or split one dimension "
            f"over two axes with a tuple, as in P(('{name}', 'other'), None)"
        )
    found = IN_SPECS.search(text)
    if found:
        return _in_specs(facts, found.group("given"), found.group("actual"))
    if NO_MESH.search(text):
        return (
            "A bare PartitionSpec needs a mesh to refer to: write "
            "`NamedSharding(mesh, P(...))`, or run the code under "
            "`with jax.set_mesh(mesh):` (jax.set_mesh(mesh) once in a notebook)"
        )
    return ""


def _contracted(a: ShardedOperand, b: ShardedOperand) -> tuple[int, int]:
    """The dimensions ``a @ b`` sums over (NumPy's matmul rule)."""
    return len(a.shape) - 1, (len(b.shape) - 2 if len(b.shape) >= 2 else 0)


def _without(spec: Spec, dim: int) -> Spec:
    return tuple(() if i == dim else axes for i, axes in enumerate(spec))


def _product_spec(a: ShardedOperand, b: ShardedOperand) -> Spec:
    """The layout of ``a @ b`` that keeps every non-summed dimension as it was: the
    rows of ``a``, the columns of ``b`` (an axis used twice is kept once)."""
    kept: list[tuple[str, ...]] = list(a.spec[:-1])
    if len(b.shape) >= 2:
        kept.append(b.spec[-1])
    used: set[str] = set()
    out: list[tuple[str, ...]] = []
    for axes in kept:
        fresh = tuple(x for x in axes if x not in used)
        used.update(fresh)
        out.append(fresh)
    return tuple(out)


def _with_out_sharding(facts: Facts, spec: Spec) -> str:
    """The failing product with ``out_sharding=`` given, "" when the code is not a
    matmul written as ``a @ b`` or a ``jnp.matmul``-like call."""
    site, sharding = facts.site, facts.sharding
    node = site.node
    out = f"out_sharding={sharding.sharding_of(spec)}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return f"{sharding.jnp}.matmul({site.text(node.left)}, {site.text(node.right)}, {out})"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _MATMULS
        and not any(k.arg == "out_sharding" for k in node.keywords)
    ):
        call = " ".join(site.text(node).split())
        return f"{call[:-1].rstrip().rstrip(',')}, {out})"
    return ""


def _reshard(sharding: ShardingFacts, expr: str, spec: Spec) -> str:
    return f"{sharding.jax}.sharding.reshard({expr}, {sharding.sharding_of(spec)})"


def _contracting(facts: Facts) -> str:
    sharding = facts.sharding
    sharded = list(sharding.operands)
    if len(sharded) < 2:
        return (
            "The dimension the product sums over is sharded, so each device holds a "
            "partial sum and JAX needs the result's sharding: pass out_sharding= to "
            "the product (jnp.matmul, jnp.einsum, jnp.dot), or reshard the operands "
            "so the summed dimension is not split"
        )
    a, b = sharded[0], sharded[1]
    da, db = _contracted(a, b)
    axes = tuple(dict.fromkeys(a.spec[da] + b.spec[db]))
    out_spec = _product_spec(a, b)
    fixed = _with_out_sharding(facts, out_spec)
    words = (
        f"{a.expr} ({a.typed}) and {b.expr} ({b.typed}) both split the dimension "
        f"the product sums over across {_axes_text(axes)}, so each device holds a "
        "partial sum and JAX will not guess how to shard the result"
    )
    site = facts.site
    gathered = ""
    node = site.node
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        left = site.text(node.left)
        right = site.text(node.right)
        if a.spec[da]:
            left = _reshard(sharding, left, _without(a.spec, da))
        if b.spec[db]:
            right = _reshard(sharding, right, _without(b.spec, db))
        gathered = f"`{left} @ {right}`"
    result = sharding.spec_text(out_spec)
    if fixed:
        fix = (
            f"give it: `{fixed}` (the result laid out as {result}; XLA sums the "
            f"partial results with an all-reduce over {_axes_text(axes)})"
        )
    else:
        fix = f"pass out_sharding={sharding.sharding_of(out_spec)} to the product"
    if gathered:
        fix += f", or gather the summed dimension first: {gathered}"
    return (
        f"{words}. {fix[:1].upper()}{fix[1:]}; or build the mesh with Auto axes "
        "(jax.make_mesh(..., axis_types=(jax.sharding.AxisType.Auto,) * n)) and "
        "XLA chooses"
    )


def _target(spec: Spec, rank: int) -> Spec:
    """``spec`` for an operand of ``rank`` broadcast against it (trailing dims)."""
    if rank <= len(spec):
        return spec[len(spec) - rank :]
    return ((),) * (rank - len(spec)) + spec


def _incompatible(facts: Facts) -> str:
    sharding = facts.sharding
    ops = [o for o in sharding.operands if o.shape]
    if len(ops) < 2:
        return (
            "The operands are laid out differently over the mesh: reshard one to the "
            "other's sharding (jax.sharding.reshard(x, sharding)) before combining them"
        )
    first = ops[0]
    code = facts.site.text(facts.site.node)
    moved: list[str] = []
    for o in ops[1:]:
        want = _target(first.spec, len(o.shape))
        if o.spec == want:
            continue
        moved.append(o.expr)
        cut = code.rfind(o.expr)
        if code and cut >= 0:
            code = (
                code[:cut]
                + _reshard(sharding, o.expr, want)
                + code[cut + len(o.expr) :]
            )
    described = " and ".join(f"{o.expr} is {o.typed}" for o in ops)
    what = ", ".join(moved) or ops[1].expr
    fix = (
        f"`{' '.join(code.split())}` moves {what} to {first.expr}'s layout (XLA "
        "inserts the data movement)"
        if code and moved
        else f"reshard {what} to {first.expr}'s layout with jax.sharding.reshard"
    )
    return (
        f"{described}: the op needs the same layout on each, and each device holds "
        f"different slices of them. {fix[:1].upper()}{fix[1:]}; or create {what} "
        f"with {first.expr}'s sharding where it is made"
    )


def _not_divisible(facts: Facts, found: re.Match[str]) -> str:
    dim = int(found.group("dim") or found.group("dim2") or 0)
    size = int(found.group("size") or found.group("size2") or 0)
    n = int(found.group("n") or found.group("n2") or 1)
    axis = found.group("axis2") or ""
    up = -(-size // n) * n
    sharding = facts.sharding
    over = f"`{axis}` ({n} devices)" if axis else f"{n} devices"
    owner = next(
        (o for o in sharding.operands if len(o.shape) > dim and o.shape[dim] == size),
        None,
    )
    name = owner.expr if owner is not None else "the array"
    mesh = sharding.mesh
    given = _MESH_GIVEN.search(facts.text)
    if not mesh and given:
        names = [n.strip().strip("'\"") for n in given.group("names").split(",")]
        sizes = [int(n) for n in given.group("sizes").split(",") if n.strip()]
        mesh = tuple(zip(names, sizes, strict=False))
    divides = [a for a, s in mesh if s > 1 and size % s == 0 and a != axis]
    pad = ""
    if owner is not None:
        widths = ", ".join(
            f"(0, {up - size})" if i == dim else "(0, 0)"
            for i in range(len(owner.shape))
        )
        comma = "," if len(owner.shape) == 1 else ""
        pad = f": `{sharding.jnp}.pad({owner.expr}, ({widths}{comma}))`"
    other = f"; mesh axes that divide {size}: {', '.join(divides)}" if divides else ""
    return (
        f"Dimension {dim} of {name} has size {size}, which {over} cannot split "
        f"evenly: pad it to {up}{pad} (and mask the padding), or leave that "
        f"dimension unsharded (None in its place in the spec){other}"
    )


def _unknown_axis(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    guess = f"; did you mean '{close[0]}'?" if close else ""
    axes = ", ".join(f"'{a}'" for a in known)
    return (
        f"'{name}' is not an axis of the mesh, whose axes are {axes}: name one of "
        f"those in the spec, or build the mesh with a '{name}' axis{guess}"
    )


def _in_specs(facts: Facts, given: str, actual: str) -> str:
    sharding = facts.sharding
    arg = sharding.operands[0].expr if sharding.operands else "the argument"
    return (
        f"{arg} is laid out as {actual}, and shard_map was told {given}: pass "
        f"in_specs={actual} (or leave in_specs out: shard_map reads it off the "
        f"arguments), or reshard {arg} first with "
        f"jax.sharding.reshard({arg}, NamedSharding(mesh, {given}))"
    )
