"""Meshes and partition specs as text, and XLA's device groups in mesh terms.

One spelling of a spec for every JAX version (``"P('data', None)"``); a mesh as a
table of device ids; and the way back from what XLA prints (an HLO sharding, a
collective's replica groups, permute pairs) to the mesh axes it involves. Logical
device ids are positions in the mesh's device order.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from jaxscope._exceptions import ShardingValueError
from jaxscope._format import short_repr, truncate
from jaxscope._hlo.parse import parse_sharding


@dataclass(frozen=True, slots=True, kw_only=True)
class MeshGrid:
    """A device mesh as a 2-D table: rows along the first axis, columns the rest.

    ``rows[i][j]`` is the device id at row ``i`` (``row_labels[i]``, e.g.
    ``"data=1"``) and column ``j`` (``col_labels[j]``, e.g. ``"model=0"`` or
    ``"b=0 c=1"``). A 1-D mesh is one row.
    """

    axes: tuple[str, ...]
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    rows: tuple[tuple[int, ...], ...]


def mesh_grid(
    mesh: dict[str, int] | None, device_ids: Sequence[int] | None
) -> MeshGrid | None:
    """The ``MeshGrid`` of a mesh given as ``{axis: size}`` and its flat device ids."""
    if not mesh or device_ids is None or len(device_ids) != math.prod(mesh.values()):
        return None
    names = list(mesh)
    sizes = [mesh[n] for n in names]
    ids = np.asarray(device_ids).reshape(sizes)
    if len(names) == 1:
        return MeshGrid(
            axes=tuple(names),
            row_labels=("",),
            col_labels=tuple(f"{names[0]}={i}" for i in range(sizes[0])),
            rows=(tuple(int(i) for i in ids),),
        )
    cols = list(itertools.product(*(range(n) for n in sizes[1:])))
    return MeshGrid(
        axes=tuple(names),
        row_labels=tuple(f"{names[0]}={i}" for i in range(sizes[0])),
        col_labels=tuple(
            " ".join(f"{n}={k}" for n, k in zip(names[1:], c, strict=True))
            for c in cols
        ),
        rows=tuple(tuple(int(i) for i in row) for row in ids.reshape(sizes[0], -1)),
    )


def make_mesh(mesh: Any) -> Any:
    """A concrete ``jax.sharding.Mesh`` from a mesh, an abstract mesh or axis sizes."""
    if isinstance(mesh, jax.sharding.Mesh):
        return mesh
    abstract = getattr(jax.sharding, "AbstractMesh", None)
    if abstract is not None and isinstance(mesh, abstract):
        mesh = dict(mesh.shape)
    if isinstance(mesh, dict) and mesh:
        names = tuple(str(k) for k in mesh)
        for name, size in mesh.items():
            if (
                not isinstance(size, (int, np.integer))
                or isinstance(size, bool)
                or size < 1
            ):
                raise ShardingValueError(
                    f"mesh axis {short_repr(name, 40)} must have an int size >= 1, "
                    f"got {short_repr(size, 40)}; write e.g. mesh={{'data': 4}}"
                )
        sizes = tuple(int(v) for v in mesh.values())
        needed = math.prod(sizes)
        present = jax.device_count()
        if needed > present:
            raise ShardingValueError(
                f"mesh={mesh!r} needs {needed} devices but only {present} are present; "
                "use a smaller mesh, or fake CPU devices with XLA_FLAGS="
                f"--xla_force_host_platform_device_count={needed} set before importing jax"
            )
        return jax.make_mesh(sizes, names)
    raise ShardingValueError(
        f"mesh={short_repr(mesh, 40)} is not a mesh; pass a jax.sharding.Mesh or a "
        "dict of axis sizes such as {'data': 4, 'model': 2}"
    )


# ------------------------------------------------------------------ specs as text


class _Raw(str):
    """A spec entry printed as is (``P.UNCONSTRAINED``)."""


def format_spec(parts: Sequence[Any]) -> str:
    """``["data", None, ("a", "b")]`` -> ``"P('data', None, ('a', 'b'))"``."""
    out = []
    for part in parts:
        if part is None:
            out.append("None")
        elif isinstance(part, _Raw):
            out.append(str(part))
        elif isinstance(part, (tuple, list)):
            if len(part) == 1:
                out.append(repr(str(part[0])))
            else:
                out.append("(" + ", ".join(repr(str(p)) for p in part) + ")")
        else:
            out.append(repr(str(part)))
    return "P(" + ", ".join(out) + ")"


def spec_text(spec: Any) -> str:
    """A ``PartitionSpec`` as ``"P('data', None)"``, the same on every JAX version."""
    parts: list[Any] = []
    for part in spec:
        if part is None or isinstance(part, str):
            parts.append(part)
        elif isinstance(part, (tuple, list)) and all(isinstance(p, str) for p in part):
            parts.append(tuple(part))
        else:
            parts.append(_Raw(str(part)))
    text = format_spec(parts)
    for extra in ("unreduced", "reduced"):
        value = getattr(spec, extra, None)
        if value:
            text = (
                text[:-1]
                + f", {extra}={{{', '.join(repr(v) for v in sorted(value))}}})"
            )
    return text


def sharding_text(sharding: Any) -> str:
    """A ``jax.sharding.Sharding`` as text: its spec for a ``NamedSharding``,
    ``"SingleDevice(cpu:0)"``, ``"replicated"``, else its (cut) repr."""
    if isinstance(sharding, jax.sharding.NamedSharding):
        return spec_text(sharding.spec)
    if isinstance(sharding, jax.sharding.SingleDeviceSharding):
        (device,) = tuple(sharding.device_set)
        return f"SingleDevice({device.platform}:{device.id})"
    if sharding is None:
        return "None"
    if getattr(sharding, "is_fully_replicated", False):
        return "replicated"
    return truncate(repr(sharding), 80)


Spec = tuple[tuple[str, ...], ...]
"""A partition spec per dimension: the mesh axes that shard it (() when none)."""


def sharded_type(dtype: str, shape: Sequence[int], spec: Spec) -> str:
    """``f32[64@data,32@model]``, as ``jax.typeof`` prints a sharded type."""
    dims = [
        str(d) + ("@" + (a[0] if len(a) == 1 else "(" + ",".join(a) + ")") if a else "")
        for d, a in itertools.zip_longest(shape, spec[: len(shape)], fillvalue=())
    ]
    return f"{dtype}[{','.join(dims)}]"


@functools.lru_cache(maxsize=1024)
def parse_spec(text: str | None, rank: int) -> Spec | None:
    """``"P('data', None)"`` (as ``format_spec`` writes it) or ``"replicated"`` as a
    ``Spec`` of ``rank`` dimensions; None for anything else."""
    if text == "replicated":
        return ((),) * rank
    if text is None or not text.startswith("P(") or not text.endswith(")"):
        return None
    import ast

    try:
        parts = ast.literal_eval("(" + text[2:-1] + ",)") if text != "P()" else ()
    except (ValueError, SyntaxError):
        return None
    out: list[tuple[str, ...]] = []
    for part in parts:
        if part is None:
            out.append(())
        elif isinstance(part, str):
            out.append((part,))
        elif isinstance(part, tuple) and all(isinstance(a, str) for a in part):
            out.append(tuple(part))
        else:
            return None
    if len(out) > rank:
        return None
    return tuple(out) + ((),) * (rank - len(out))


_ARRAY_SHAPE = re.compile(r"^(\w+)\[([\d,]*)\]")


def local_shape(shape: str, spec: str | None, mesh: dict[str, int] | None) -> str:
    """An HLO array ``shape`` (``f32[64,32]{1,0}``) as one device holds it under
    ``spec`` (``"P('data', None)"``) on ``mesh``: ``f32[16,32]``; the global shape
    (layout dropped) where the spec or the shape cannot be read."""
    found = _ARRAY_SHAPE.match(shape)
    if found is None:
        return shape.split("{")[0]
    dims = [int(d) for d in found.group(2).split(",") if d]
    parsed = parse_spec(spec, len(dims)) if spec else None
    if parsed is None or not mesh:
        return f"{found.group(1)}[{found.group(2)}]"
    local = [
        d // max(1, math.prod(mesh.get(a, 1) for a in axes))
        for d, axes in zip(dims, parsed, strict=True)
    ]
    return f"{found.group(1)}[{','.join(map(str, local))}]"


# ------------------------------------------------------------------ XLA in mesh terms


def spec_of_hlo_sharding(text: str, mesh: dict[str, int] | None) -> str | None:
    """An HLO sharding (``{devices=[4,1,2]<=[8] last_tile_dim_replicate}``) as a spec.

    Returns ``"P('data', None)"`` style text where every tiled dimension maps onto
    mesh axes (logical device ids taken in mesh order), ``"replicated"``,
    ``"manual"`` (inside shard_map) or ``"device N"``; None otherwise. Memoised.
    """
    return _spec_cached(text, tuple(mesh.items()) if mesh else None)


@functools.lru_cache(maxsize=1024)
def _spec_cached(
    text: str, mesh_items: tuple[tuple[str, int], ...] | None
) -> str | None:
    sharding = parse_sharding(text)
    if sharding is None or sharding.kind == "tuple":
        return None
    if sharding.kind in ("replicated", "manual"):
        return sharding.kind
    if sharding.kind == "maximal":
        return f"device {sharding.device}"
    if not mesh_items or sharding.tiles is None:
        return None
    return _tiled_spec(sharding.tiles, sharding.data_dims, dict(mesh_items))


def _tiled_spec(tiles: np.ndarray, data_dims: int, mesh: dict[str, int]) -> str | None:
    """The spec of a tile assignment whose first ``data_dims`` dims split the array."""
    names = list(mesh)
    sizes = [mesh[n] for n in names]
    if tiles.size != math.prod(sizes):
        return None
    coords = np.unravel_index(tiles, sizes)
    parts: list[Any] = []
    for d in range(data_dims):
        if tiles.shape[d] == 1:
            parts.append(None)
            continue
        order = _dim_axes(coords, sizes, tiles.shape, d)
        if order is None:
            return None
        axes = tuple(names[a] for a in order)
        parts.append(axes[0] if len(axes) == 1 else axes)
    return format_spec(parts)


def _dim_axes(
    coords: tuple[np.ndarray, ...], sizes: list[int], dims: tuple[int, ...], d: int
) -> list[int] | None:
    """The mesh axes (major first) that tile dimension ``d``, if they do exactly."""
    varying = [a for a in range(len(sizes)) if np.ptp(coords[a], axis=d).any()]
    if math.prod(sizes[a] for a in varying) != dims[d]:
        return None

    def first_step(a: int) -> int:
        line = np.moveaxis(coords[a], d, 0).reshape(dims[d], -1)[:, 0]
        changes = np.nonzero(np.diff(line))[0]
        return int(changes[0]) + 1 if changes.size else dims[d]

    order = sorted(varying, key=lambda a: -first_step(a))
    position = np.zeros(dims, dtype=np.int64)
    for a in order:
        position = position * sizes[a] + coords[a]
    expected = np.arange(dims[d]).reshape(
        [-1 if i == d else 1 for i in range(len(dims))]
    )
    if not (position == np.broadcast_to(expected, dims)).all():
        return None
    return order


def axes_of_groups(
    groups: tuple[tuple[int, ...], ...] | None, mesh: dict[str, int] | None
) -> tuple[str, ...] | None:
    """The mesh axes a set of device groups spans (logical ids in mesh order)."""
    if not groups or not mesh:
        return None
    names = list(mesh)
    sizes = [mesh[n] for n in names]
    total = math.prod(sizes)
    if any(i >= total for g in groups for i in g):
        return None
    target = {frozenset(g) for g in groups}
    ids = np.arange(total).reshape(sizes)
    for r in range(len(names) + 1):
        for subset in itertools.combinations(range(len(names)), r):
            keep = [i for i in range(len(names)) if i not in subset]
            size = math.prod(sizes[i] for i in subset)
            rows = ids.transpose(keep + list(subset)).reshape(-1, size)
            if {frozenset(int(i) for i in row) for row in rows} == target:
                return tuple(names[i] for i in subset if sizes[i] > 1) or ()
    return None


@functools.lru_cache(maxsize=1024)
def axes_of_groups_cached(
    groups: tuple[tuple[int, ...], ...] | None,
    mesh_items: tuple[tuple[str, int], ...] | None,
) -> tuple[str, ...] | None:
    """``axes_of_groups`` memoised, the mesh given as its items."""
    return axes_of_groups(groups, dict(mesh_items) if mesh_items else None)


def axes_of_pairs(
    pairs: tuple[tuple[int, ...], ...] | None, mesh: dict[str, int] | None
) -> tuple[str, ...] | None:
    """The mesh axes along which collective-permute ``(source, target)`` pairs move."""
    if not pairs or not mesh:
        return None
    names = list(mesh)
    sizes = [mesh[n] for n in names]
    total = math.prod(sizes)
    moved: set[str] = set()
    for src, dst in pairs:
        if src >= total or dst >= total:
            return None
        a = np.unravel_index(src, sizes)
        b = np.unravel_index(dst, sizes)
        moved.update(names[i] for i in range(len(names)) if a[i] != b[i])
    return tuple(n for n in names if n in moved)
