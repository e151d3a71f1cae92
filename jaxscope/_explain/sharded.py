# pyright: strict
"""The shardings behind a sharding error: each operand's spec over the mesh, read from
the live frame, and how the user's code names the mesh, ``PartitionSpec`` and
``NamedSharding`` (so a suggested fix pastes into their code as it is)."""

from __future__ import annotations

import ast
import contextlib
import math
import types
from dataclasses import dataclass
from typing import Any

import jax

from jaxscope._explain.evaluate import MISSING, safe_eval
from jaxscope._explain.site import Site
from jaxscope._format import short_dtype
from jaxscope._sharding.mesh import Spec, sharded_type
from jaxscope.compat.sharding import is_tracer


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardedOperand:
    """One operand of the failing expression and its layout over the mesh.

    Attributes:
        expr: the operand as written.
        dtype: its short dtype (``f32``).
        shape: its global shape.
        spec: per dimension, the mesh axes that shard it.
    """

    expr: str
    dtype: str
    shape: tuple[int, ...]
    spec: Spec

    @property
    def typed(self) -> str:
        """``f32[64@data,32@model]``, as ``jax.typeof`` prints a sharded type."""
        return sharded_type(self.dtype, self.shape, self.spec)


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardingFacts:
    """What a sharding error's hint needs from the live program.

    Attributes:
        operands: the failing expression's operands that are arrays.
        mesh: the mesh's axes and sizes, in order (empty when none was found).
        p: how the user's code writes ``PartitionSpec`` (``P``).
        sharding: how a spec becomes a sharding there: ``"NamedSharding(mesh, {})"``,
            or ``"{}"`` under a mesh context (a bare spec is enough).
        jnp: the user's name for ``jax.numpy``.
        jax: the user's name for ``jax``.
    """

    operands: tuple[ShardedOperand, ...] = ()
    mesh: tuple[tuple[str, int], ...] = ()
    p: str = "jax.sharding.PartitionSpec"
    sharding: str = "{}"
    jnp: str = "jax.numpy"
    jax: str = "jax"

    def axis_size(self, name: str) -> int:
        return dict(self.mesh).get(name, 0)

    def local_shape(self, operand: ShardedOperand) -> tuple[int, ...]:
        """The shape of the tile each device holds."""
        sizes = dict(self.mesh)
        return tuple(
            d // max(1, math.prod(sizes.get(a, 1) for a in axes))
            for d, axes in zip(operand.shape, operand.spec, strict=True)
        )

    def spec_text(self, spec: Spec) -> str:
        """``P('data', None)`` in the user's name for ``PartitionSpec``."""
        parts: list[str] = []
        for axes in spec:
            if not axes:
                parts.append("None")
            elif len(axes) == 1:
                parts.append(repr(axes[0]))
            else:
                parts.append("(" + ", ".join(repr(a) for a in axes) + ")")
        return f"{self.p}({', '.join(parts)})"

    def sharding_of(self, spec: Spec) -> str:
        """The code of a sharding with ``spec``, as the user's code can write it."""
        return self.sharding.format(self.spec_text(spec))


NO_SHARDING_FACTS = ShardingFacts()


def _spec_of(sharding: Any, rank: int) -> Spec | None:
    spec = getattr(sharding, "spec", None)
    if spec is None:
        return None
    out: list[tuple[str, ...]] = []
    for part in tuple(spec)[:rank]:
        if part is None:
            out.append(())
        elif isinstance(part, str):
            out.append((part,))
        elif isinstance(part, (tuple, list)):
            out.append(tuple(str(p) for p in part))  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        else:  # UNCONSTRAINED and other markers: not a layout we can describe
            return None
    out.extend([()] * (rank - len(out)))
    return tuple(out)


def layout_of(value: Any) -> tuple[Spec, tuple[tuple[str, int], ...], Any] | None:
    """``value``'s spec and mesh (a traced value's from its type under explicit axes,
    a concrete array's from its ``NamedSharding``); None when it has neither."""
    shape = getattr(value, "shape", None)
    if not isinstance(shape, tuple) or not hasattr(value, "dtype"):
        return None
    rank = len(shape)  # pyright: ignore[reportUnknownArgumentType]
    candidates: list[Any] = []
    with contextlib.suppress(Exception):
        candidates.append(jax.typeof(value).sharding)  # pyright: ignore[reportUnknownMemberType]
    if isinstance(value, jax.Array) and not is_tracer(value):
        with contextlib.suppress(Exception):
            candidates.append(value.sharding)
    for sharding in candidates:
        spec = _spec_of(sharding, rank)
        mesh = getattr(sharding, "mesh", None)
        if spec is None or mesh is None or not any(spec):
            continue
        try:
            axes = tuple(
                (str(n), int(s))
                for n, s in dict(mesh.shape).items()  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            )
        except Exception:
            continue
        return spec, axes, mesh
    return None


def _mesh_axes(value: Any) -> tuple[tuple[str, int], ...]:
    """The axes of the mesh a traced value's type names (inside ``shard_map``, its
    manual axes), () when none."""
    try:
        mesh = jax.typeof(value).sharding.mesh  # pyright: ignore[reportUnknownMemberType]
        return tuple((str(n), int(s)) for n, s in dict(mesh.shape).items())  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    except Exception:
        return ()


def describe(value: Any) -> str:
    """``f32[64@data,32@model]`` for an array sharded over a mesh, "" otherwise."""
    layout = layout_of(value)
    if layout is None:
        return ""
    return sharded_type(short_dtype(value.dtype), tuple(value.shape), layout[0])


def _name_of(obj: Any, frame: types.FrameType, default: str) -> str:
    """A name ``frame`` binds to ``obj`` (its globals, then its locals)."""
    for scope in (frame.f_globals, frame.f_locals):
        for name, value in scope.items():
            if value is obj and not name.startswith("_"):
                return name
    return default


def _same_mesh(candidate: Any, mesh: Any) -> bool:
    """Whether the ``Mesh`` ``candidate`` is ``mesh`` (or, for a traced value's
    abstract mesh, its abstract form: same axes, sizes and axis types)."""
    try:
        return bool(candidate == mesh or candidate.abstract_mesh == mesh)
    except Exception:
        return False


def _mesh_name(mesh: Any, frame: types.FrameType) -> str:
    for scope in (frame.f_locals, frame.f_globals):
        for name, value in scope.items():
            if name.startswith("_") or not isinstance(value, jax.sharding.Mesh):
                continue
            if _same_mesh(value, mesh):
                return name
    return ""


def _in_mesh_context(mesh: tuple[tuple[str, int], ...]) -> bool:
    try:
        current = jax.sharding.get_abstract_mesh()
        return tuple((str(n), int(s)) for n, s in current.shape.items()) == mesh
    except Exception:
        return False


def sharding_facts(
    frame: types.FrameType, site: Site, nodes: list[ast.expr]
) -> ShardingFacts:
    """The layouts of the operands ``nodes`` of ``site``, evaluated in ``frame``
    (nothing when they cannot be read)."""
    try:
        return _sharding_facts(frame, site, nodes)
    except Exception:
        return NO_SHARDING_FACTS


def _sharding_facts(
    frame: types.FrameType, site: Site, nodes: list[ast.expr]
) -> ShardingFacts:
    operands: list[ShardedOperand] = []
    mesh: tuple[tuple[str, int], ...] = ()
    mesh_obj: Any = None
    for node in nodes:
        value = safe_eval(node, frame)
        if value is MISSING:
            continue
        layout = layout_of(value)
        if layout is None:
            mesh = mesh or _mesh_axes(value)
            if isinstance(getattr(value, "shape", None), tuple) and hasattr(
                value, "dtype"
            ):
                shape = tuple(int(d) for d in value.shape)
                operands.append(
                    ShardedOperand(
                        expr=site.text(node),
                        dtype=short_dtype(value.dtype),
                        shape=shape,
                        spec=((),) * len(shape),
                    )
                )
            continue
        spec, axes, found = layout
        if not mesh:
            mesh, mesh_obj = axes, found
        operands.append(
            ShardedOperand(
                expr=site.text(node),
                dtype=short_dtype(value.dtype),
                shape=tuple(int(d) for d in value.shape),
                spec=spec,
            )
        )
    p = _name_of(jax.sharding.PartitionSpec, frame, "jax.sharding.PartitionSpec")
    jax_name = _name_of(jax, frame, "jax")
    jnp = _name_of(jax.numpy, frame, f"{jax_name}.numpy")
    if _in_mesh_context(mesh):
        sharding = "{}"
    else:
        named = _name_of(
            jax.sharding.NamedSharding, frame, f"{jax_name}.sharding.NamedSharding"
        )
        sharded = next((o for o in operands if any(o.spec)), None)
        fallback = (
            f"{jax_name}.typeof({sharded.expr}).sharding.mesh" if sharded else "mesh"
        )
        mesh_name = _mesh_name(mesh_obj, frame) or fallback
        sharding = f"{named}({mesh_name}, {{}})"
    return ShardingFacts(
        operands=tuple(operands),
        mesh=mesh,
        p=p,
        sharding=sharding,
        jnp=jnp,
        jax=jax_name,
    )
