"""``sharding(x)``: how an array (or every leaf of a pytree) lies over devices.

Describes ``x`` shard by shard: device, process, index ranges, bytes, replica id,
addressability; the grid the renderers draw is computed first, as data
(``ShardingLayout``), for arrays of any rank. Nothing is moved or read.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from jaxscope._display import Renderable
from jaxscope._exceptions import ShardingInputError, ShardingValueError
from jaxscope._format import a_an, plural, short_repr
from jaxscope._host import dtype_itemsize, dtype_name
from jaxscope._sharding.layout import (
    ShardInfo,
    ShardingLayout,
    build_layout,
    check_dims,
    replication_of,
    shards_of,
)
from jaxscope._sharding.mesh import MeshGrid, make_mesh, mesh_grid, sharding_text
from jaxscope._staging import first_line
from jaxscope.compat import sharding as _csharding


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class ShardingView(Renderable):
    """How one array (or every leaf of a pytree) is laid out over devices.

    Attributes:
        shape, dtype: the global array's (dtype as a string, e.g. ``"float32"``).
        spec: the partition spec as text (``"P('data', None)"``), or a description
            for shardings without one (``"SingleDevice(cpu:0)"``).
        mesh: ``{axis name: size}`` for a ``NamedSharding``, else None.
        shards: one ``ShardInfo`` per device, in the sharding's device order.
        layout: the drawn grid (``ShardingLayout``).
        leaves: for a pytree, ``[(path, ShardingView), ...]``; for an array ``[]``.
    """

    shape: tuple[int, ...] | None
    dtype: str | None
    spec: str | None
    mesh: dict[str, int] | None
    shards: list[ShardInfo]
    layout: ShardingLayout | None
    leaves: list[tuple[str, ShardingView]] = field(default_factory=list)
    committed: bool | None = None
    sharding_type: str = ""
    axis_types: dict[str, str] | None = None
    mesh_device_ids: tuple[int, ...] | None = None
    name: str = ""
    memory_kind: str | None = None
    itemsize: int = 0
    """Bytes per element (8 for a threefry ``key<fry>``, which NumPy cannot name)."""

    @property
    def is_tree(self) -> bool:
        """Whether this view describes a pytree (``leaves``) rather than one array."""
        return self.shape is None

    @property
    def n_devices(self) -> int:
        return len({s.device_id for s in self.shards})

    @property
    def replication(self) -> int:
        """How many devices hold each distinct shard (1 = fully sharded)."""
        return replication_of(self.shards)

    @property
    def bytes_per_device(self) -> int:
        """The largest shard, in bytes."""
        return max((s.bytes for s in self.shards), default=0)

    @property
    def total_bytes(self) -> int:
        """The global array's size in bytes."""
        if self.shape is None or self.dtype is None:
            return sum(v.total_bytes for _, v in self.leaves)
        return math.prod(self.shape) * (self.itemsize or dtype_itemsize(self.dtype))

    @property
    def mesh_grid(self) -> MeshGrid | None:
        """The mesh as a table of device ids with axis labels, or None."""
        return mesh_grid(self.mesh, self.mesh_device_ids)

    def with_dims(self, *dims: int) -> ShardingView:
        """The same view drawn over other dimensions (``v.with_dims(0, 2)``)."""
        if self.shape is None:
            raise ShardingValueError(
                "with_dims needs an array view; pick a leaf first: v.leaves[i][1]"
            )
        check_dims(dims, len(self.shape))
        layout = build_layout(self.shape, self.shards, dims)
        return dataclasses.replace(self, layout=layout, leaves=[])

    def __repr__(self) -> str:
        if self.shape is None:
            return f"<ShardingView of a pytree: {len(self.leaves)} arrays>"
        return (
            f"<ShardingView {self.dtype}{list(self.shape)} {self.spec}: "
            f"{plural(len(self.shards), 'shard')}>"
        )


def _sharding_of(x: Any, where: str) -> tuple[Any, bool | None]:
    """``x``'s sharding and whether it is committed (None for a ShapeDtypeStruct)."""
    if _csharding.is_tracer(x):
        raise ShardingInputError(
            f"{where} is a tracer (inside jit/grad/vmap); its sharding exists only "
            "once compiled: use js.shardings(f)(*args) for the program's view"
        )
    if isinstance(x, jax.Array):
        if x.is_deleted():
            raise ShardingValueError(
                f"{where} was deleted (donated to a jitted call or .delete()d); pass "
                "a live array"
            )
        return x.sharding, bool(getattr(x, "committed", getattr(x, "_committed", True)))
    if isinstance(x, jax.ShapeDtypeStruct):
        if x.sharding is None:
            raise ShardingValueError(
                f"{where} is a ShapeDtypeStruct without a sharding; build it with "
                "jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))"
            )
        return x.sharding, None
    raise ShardingInputError(
        f"{where} is {a_an(type(x).__module__.split('.')[0] + '.' + type(x).__name__)} "
        f"({short_repr(x, 40)}), not a JAX array; pass a jax.Array or a "
        "jax.ShapeDtypeStruct with a sharding (numpy data: jax.device_put it first)"
    )


def _mesh_facts(
    sharding: Any,
) -> tuple[dict[str, int] | None, dict[str, str] | None, tuple[int, ...] | None]:
    """A ``NamedSharding``'s mesh as ``{axis: size}``, its axis types and device ids."""
    if not isinstance(sharding, jax.sharding.NamedSharding):
        return None, None, None
    mesh = sharding.mesh
    types = getattr(mesh, "axis_types", None)
    axis_types = None
    if types is not None:
        axis_types = {
            str(n): str(getattr(t, "name", t))
            for n, t in zip(mesh.axis_names, types, strict=False)
        }
    device_ids = tuple(int(d.id) for d in np.asarray(mesh.devices).flat)
    return dict(mesh.shape), axis_types, device_ids


def _array_view(x: Any, where: str, dims: Sequence[int] | None) -> ShardingView:
    sharding, committed = _sharding_of(x, where)
    abstract = getattr(jax.sharding, "AbstractMesh", None)
    if (
        abstract is not None
        and isinstance(sharding, jax.sharding.NamedSharding)
        and isinstance(sharding.mesh, abstract)
    ):
        # an abstract mesh has no devices: lay it out on the first devices present
        sharding = jax.sharding.NamedSharding(make_mesh(sharding.mesh), sharding.spec)
    shape = tuple(int(d) for d in x.shape)
    dtype = x.dtype  # an extended dtype (a typed PRNG key) is no NumPy dtype
    if dims is not None:
        check_dims(dims, len(shape))
    shards = shards_of(shape, dtype, sharding)
    mesh, axis_types, mesh_ids = _mesh_facts(sharding)
    return ShardingView(
        shape=shape,
        dtype=dtype_name(dtype),
        spec=sharding_text(sharding),
        mesh=mesh,
        shards=shards,
        layout=build_layout(shape, shards, dims),
        committed=committed,
        sharding_type=type(sharding).__name__,
        axis_types=axis_types,
        mesh_device_ids=mesh_ids,
        name=where,
        memory_kind=getattr(sharding, "memory_kind", None),
        itemsize=dtype_itemsize(dtype),
    )


def sharding(
    x: Any,
    *,
    dims: Sequence[int] | None = None,
    spec: Any = None,
    mesh: Any = None,
) -> ShardingView:
    """How ``x`` is laid out over devices: every shard, its device and index ranges.

    Args:
        x: a ``jax.Array`` (committed or not), a ``jax.ShapeDtypeStruct`` with a
            sharding, or a pytree of those (then ``.leaves`` lists each).
        dims: the two dimensions to draw for arrays of rank > 2 (default: the two
            most sharded); every other dimension is collapsed.
        spec: with ``mesh``, lay out ``x``'s shape (or ``x`` itself given as a shape
            tuple) under ``NamedSharding(mesh, spec)`` instead, without moving data.
        mesh: the mesh of ``spec``: a ``jax.sharding.Mesh`` or a dict of axis sizes.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> v = js.sharding(jnp.ones((4, 4)))
        >>> v.spec.startswith("SingleDevice"), len(v.shards)
        (True, 1)
    """
    return sharding_view(x, name="x", dims=dims, spec=spec, mesh=mesh)


def _planned(x: Any, name: str, spec: Any, mesh: Any) -> jax.ShapeDtypeStruct:
    """``x``'s shape and dtype (float32 for a shape tuple) under ``spec`` on ``mesh``."""
    if spec is None or mesh is None:
        raise ShardingValueError(
            "spec= and mesh= go together: js.sharding(x, spec=P('data'), "
            "mesh={'data': 8})"
        )
    concrete = make_mesh(mesh)
    if isinstance(spec, jax.sharding.PartitionSpec):
        pspec = spec
    elif isinstance(spec, (tuple, list)):
        pspec = jax.sharding.PartitionSpec(*spec)
    else:
        pspec = jax.sharding.PartitionSpec(spec)
    if isinstance(x, tuple) and all(isinstance(d, (int, np.integer)) for d in x):
        shape, dtype = tuple(int(d) for d in x), np.dtype(np.float32)
    elif hasattr(x, "shape") and hasattr(x, "dtype"):
        array: Any = x
        shape, dtype = tuple(array.shape), array.dtype
    else:
        raise ShardingInputError(
            f"{name}={short_repr(x, 40)} has no shape; with spec=/mesh= pass an "
            "array, a ShapeDtypeStruct or a shape tuple such as (1024, 512)"
        )
    try:
        named = jax.sharding.NamedSharding(concrete, pspec)
    except Exception as exc:
        raise ShardingValueError(
            f"spec={pspec} does not fit mesh {dict(concrete.shape)}: "
            f"{first_line(str(exc)) or type(exc).__name__}"
        ) from None
    return jax.ShapeDtypeStruct(shape, dtype, sharding=named)


def sharding_view(
    x: Any,
    *,
    name: str = "x",
    dims: Sequence[int] | None = None,
    spec: Any = None,
    mesh: Any = None,
) -> ShardingView:
    """``sharding`` with the name errors and paths use for ``x`` (``"params"``)."""
    if spec is not None or mesh is not None:
        x = _planned(x, name, spec, mesh)
    if isinstance(x, (jax.Array, jax.ShapeDtypeStruct)):
        return _array_view(x, name, dims)
    leaves, treedef = jax.tree_util.tree_flatten_with_path(x)
    if not leaves or (treedef.num_leaves == 1 and not leaves[0][0]):
        return _array_view(x, name, dims)
    if dims is not None:
        raise ShardingValueError(
            f"dims= applies to one array, and {name} is a pytree of "
            f"{len(leaves)} arrays; pass one leaf, e.g. js.sharding({name}[...], dims=...)"
        )
    views = []
    for path, leaf in leaves:
        where = name + jax.tree_util.keystr(path)
        views.append((jax.tree_util.keystr(path), _array_view(leaf, where, None)))
    # in the mesh's own axis order, as the user built it
    meshes = {tuple(v.mesh.items()) for _, v in views if v.mesh is not None}
    common = dict(next(iter(meshes))) if len(meshes) == 1 else None
    return ShardingView(
        shape=None,
        dtype=None,
        spec=None,
        mesh=common,
        shards=[],
        layout=None,
        leaves=views,
        name=name,
    )
