"""Per-device sharding: how arrays lie over devices, and what a compiled program does.

``sharding(x)`` describes an array (or pytree, or ``ShapeDtypeStruct``) shard by shard:
device, process, index ranges, bytes, replica id, addressability. The grid drawn by the
renderers is computed here first, as data (``ShardingLayout``), for arrays of any rank.

``shardings(f)(*args)`` compiles (never runs) ``f`` and reads three things:
- the input/output shardings of the compiled executable;
- the sharding of every op after XLA's sharding propagation, taken from the module
  XLA hands to its SPMD partitioner (dumped for this one compile with the
  ``xla_dump_to`` / ``xla_dump_hlo_pass_re`` compiler options; the final optimized
  HLO no longer carries per-op shardings);
- every collective in the optimized, partitioned HLO (``Compiled.as_text()``), with
  the bytes it handles per device, its replica groups, the mesh axes they span and the
  user's source line (from the HLO ``StackFrames`` metadata tables).
"""

from __future__ import annotations

import bisect
import functools
import glob
import itertools
import math
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from jaxscope._display import Renderable
from jaxscope._exceptions import (
    InvalidCallError,
    ShardingInputError,
    ShardingValueError,
)
from jaxscope._hlo.parse import _OP_NAME as OP_NAME
from jaxscope._hlo.parse import _OPCODE as OPCODE
from jaxscope._hlo.parse import (
    inline_frame,
    iter_lines,
    read_frame_tables,
    stack_frame_id,
)
from jaxscope._records import SourceLoc
from jaxscope._source import display_filename
from jaxscope._staging import check_callable, function_name, trace
from jaxscope._staging import param_names as staging_param_names
from jaxscope.compat import sharding as _csharding

# --------------------------------------------------------------------------------------
# records


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardInfo:
    """One shard of an array: which device holds which part of the global array.

    ``index`` holds one ``slice(start, stop)`` per dimension, with concrete integers.
    ``addressable`` is False for shards held by another process; those carry their
    ``process_index`` and are never read.
    """

    device_id: int
    device_kind: str
    platform: str
    process_index: int
    index: tuple[slice, ...]
    shape: tuple[int, ...]
    bytes: int
    replica_id: int
    addressable: bool

    @property
    def label(self) -> str:
        """``"CPU 3"``: the device as JAX's own sharding diagrams name it."""
        return f"{self.platform.upper()} {self.device_id}"

    @property
    def ranges(self) -> str:
        """``"[0:16, 0:32]"``: the index as text."""
        return "[" + ", ".join(f"{s.start}:{s.stop}" for s in self.index) + "]"


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutCell:
    """One tile of the drawn grid: a range of the row and column dimensions."""

    rows: tuple[int, int]
    cols: tuple[int, int]
    device_ids: tuple[int, ...]
    labels: tuple[str, ...]
    process_indices: tuple[int, ...]
    addressable: bool
    group: int
    pieces: int = 1
    """Distinct blocks among the holders: 1 when they are replicas, more when the
    devices hold different parts of the collapsed dimensions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShardingLayout:
    """The grid of an array's shards over two chosen dimensions.

    ``row_dim``/``col_dim`` are the dimensions drawn (None for rank < 2 / rank 0);
    every other dimension is collapsed: a cell lists every device holding any part of
    its rows x columns. ``row_edges``/``col_edges`` are the tile boundaries.
    """

    shape: tuple[int, ...]
    row_dim: int | None
    col_dim: int | None
    collapsed: tuple[int, ...]
    row_edges: tuple[int, ...]
    col_edges: tuple[int, ...]
    cells: tuple[LayoutCell, ...]
    n_groups: int

    def cell(self, row: int, col: int) -> LayoutCell:
        """The cell at grid position (row, col)."""
        return self.cells[row * (len(self.col_edges) - 1) + col]


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
            " ".join(f"{n}={k}" for n, k in zip(names[1:], c)) for c in cols
        ),
        rows=tuple(tuple(int(i) for i in row) for row in ids.reshape(sizes[0], -1)),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class OpSharding:
    """The sharding XLA chose for one op (after propagation, before partitioning).

    ``sharding`` is XLA's own text (``{devices=[4,1,2]<=[8] last_tile_dim_replicate}``);
    ``spec`` is the same in mesh-axis terms (``"P('data', None)"``) where it maps onto
    the program's mesh, else None. ``shape`` is the global shape.
    """

    name: str
    opcode: str
    sharding: str
    source: SourceLoc | None
    shape: str = ""
    spec: str | None = None
    op_name: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Collective:
    """One collective XLA inserted into the partitioned program.

    ``bytes`` is what one device hands to it: the larger of its per-device input and
    output buffers. ``replica_groups`` are logical device ids (positions in the
    program's device assignment), or (source, target) pairs for collective-permute;
    None where XLA's text could not be decoded (``groups_text`` keeps the raw text).
    ``axes`` are the mesh axes the groups span, where they match the program's mesh.
    A collective inside a loop body is listed once; ``runs`` is how many times it
    runs per call of the program (the product of the enclosing loops' trip counts as
    XLA knows them, 1 outside loops, None inside a loop of unknown length).
    """

    name: str
    kind: str
    bytes: int
    replica_groups: tuple[tuple[int, ...], ...] | None
    source: SourceLoc | None
    shape: str = ""
    groups_text: str = ""
    axes: tuple[str, ...] | None = None
    op_name: str = ""
    computation: str = ""
    runs: int | None = 1

    @property
    def total_bytes(self) -> int:
        """``bytes`` times ``runs`` (one run where the loop length is unknown)."""
        return self.bytes * (self.runs if self.runs is not None else 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class LineSummary:
    """All collectives attributed to one source line."""

    source: SourceLoc | None
    counts: dict[str, int]
    bytes: int

    @property
    def text(self) -> str:
        """``"In [3]:42: 2 all-gathers, 1 all-reduce, 48 MiB"``."""
        where = f"line {self.source}" if self.source is not None else "unknown line"
        parts = [
            f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in self.counts.items()
        ]
        return f"{where}: {', '.join(parts)}, {format_bytes(self.bytes)}"


# --------------------------------------------------------------------------------------
# helpers


def format_bytes(n: int) -> str:
    """``1536`` -> ``"1.5 KiB"``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            if unit == "B":
                return f"{int(value)} B"
            text = f"{value:.1f}".rstrip("0").rstrip(".")
            return f"{text} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


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


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _norm_index(index: Sequence[Any], shape: Sequence[int]) -> tuple[slice, ...]:
    out = []
    for s, dim in zip(index, shape):
        if isinstance(s, slice):
            start, stop, _ = s.indices(dim)
            out.append(slice(start, stop))
        else:  # an integer index (never produced by JAX shardings, kept for safety)
            out.append(slice(int(s), int(s) + 1))
    return tuple(out)


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


class _Raw(str):
    """A spec entry printed as is (``P.UNCONSTRAINED``)."""


def _spec_of(sharding: Any, ndim: int) -> str:
    if isinstance(sharding, jax.sharding.NamedSharding):
        return spec_text(sharding.spec)
    if isinstance(sharding, jax.sharding.SingleDeviceSharding):
        (device,) = tuple(sharding.device_set)
        return f"SingleDevice({device.platform}:{device.id})"
    if sharding is None:
        return "None"
    if getattr(sharding, "is_fully_replicated", False):
        return "replicated"
    text = repr(sharding)
    return text if len(text) <= 80 else text[:77] + "..."


def _mesh_of(sharding: Any) -> Any:
    if isinstance(sharding, jax.sharding.NamedSharding):
        return sharding.mesh
    return None


# --------------------------------------------------------------------------------------
# the array view


def shards_of(shape: tuple[int, ...], dtype: Any, sharding: Any) -> list[ShardInfo]:
    """Every shard of a global array of ``shape``/``dtype`` under ``sharding``.

    Works for every device of the sharding, addressable or not: the index map is the
    sharding's, so no data is touched.
    """
    itemsize = np.dtype(dtype).itemsize
    try:
        index_map = sharding.devices_indices_map(tuple(shape))
    except Exception as exc:
        raise ShardingValueError(
            f"sharding {_describe(sharding)} cannot lay out shape {tuple(shape)}: "
            f"{_first_line(exc)}"
        ) from None
    addressable = set(sharding.addressable_devices)
    seen: dict[tuple[tuple[int, int], ...], int] = {}
    shards = []
    for device, raw_index in index_map.items():
        index = _norm_index(raw_index, shape)
        key = tuple((s.start, s.stop) for s in index)
        replica = seen.get(key, 0)
        seen[key] = replica + 1
        sshape = tuple(s.stop - s.start for s in index)
        shards.append(
            ShardInfo(
                device_id=int(device.id),
                device_kind=str(device.device_kind),
                platform=str(device.platform),
                process_index=int(device.process_index),
                index=index,
                shape=sshape,
                bytes=math.prod(sshape) * itemsize,
                replica_id=replica,
                addressable=device in addressable,
            )
        )
    return shards


def _first_line(exc: BaseException) -> str:
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__


def default_dims(shape: Sequence[int], shards: Sequence[ShardInfo]) -> tuple[int, ...]:
    """The dimensions to draw: the two most sharded, in array order."""
    rank = len(shape)
    if rank <= 2:
        return tuple(range(rank))
    splits = [len({s.index[d].start for s in shards}) for d in range(rank)]
    order = sorted(range(rank), key=lambda d: (-splits[d], d))
    return tuple(sorted(order[:2]))


def build_layout(
    shape: tuple[int, ...],
    shards: Sequence[ShardInfo],
    dims: Sequence[int] | None = None,
) -> ShardingLayout:
    """The grid of ``shards`` over ``dims`` (default: the two most sharded dims)."""
    rank = len(shape)
    chosen = tuple(dims) if dims is not None else default_dims(shape, shards)
    if len(chosen) == 2:
        row_dim, col_dim = chosen
    elif len(chosen) == 1:
        row_dim, col_dim = None, chosen[0]
    else:
        row_dim, col_dim = None, None

    def edges(dim: int | None) -> tuple[int, ...]:
        if dim is None:
            return (0, 1)
        points = {0, shape[dim]}
        for s in shards:
            points.add(s.index[dim].start)
            points.add(s.index[dim].stop)
        return tuple(sorted(points))

    def span(s: ShardInfo, dim: int | None) -> tuple[int, int]:
        if dim is None:
            return (0, 1)
        return (s.index[dim].start, s.index[dim].stop)

    row_edges, col_edges = edges(row_dim), edges(col_dim)
    n_cols = len(col_edges) - 1
    holders: list[list[ShardInfo]] = [[] for _ in range((len(row_edges) - 1) * n_cols)]
    for shard in shards:
        r0, r1 = span(shard, row_dim)
        c0, c1 = span(shard, col_dim)
        rows = range(
            bisect.bisect_left(row_edges, r0), bisect.bisect_left(row_edges, r1)
        )
        cols = range(
            bisect.bisect_left(col_edges, c0), bisect.bisect_left(col_edges, c1)
        )
        for r in rows:
            for c in cols:
                holders[r * n_cols + c].append(shard)
    groups: dict[tuple[int, ...], int] = {}
    cells = []
    for k, held in enumerate(holders):
        r, c = divmod(k, n_cols)
        held.sort(key=lambda s: s.device_id)
        ids = tuple(dict.fromkeys(s.device_id for s in held))
        group = groups.setdefault(ids, len(groups))
        by_id = {s.device_id: s for s in held}
        cells.append(
            LayoutCell(
                rows=(row_edges[r], row_edges[r + 1]),
                cols=(col_edges[c], col_edges[c + 1]),
                device_ids=ids,
                labels=tuple(by_id[i].label for i in ids),
                process_indices=tuple(sorted({by_id[i].process_index for i in ids})),
                addressable=all(by_id[i].addressable for i in ids),
                group=group,
                pieces=len({tuple((x.start, x.stop) for x in h.index) for h in held}),
            )
        )
    collapsed = tuple(d for d in range(rank) if d not in (row_dim, col_dim))
    return ShardingLayout(
        shape=tuple(shape),
        row_dim=row_dim,
        col_dim=col_dim,
        collapsed=collapsed,
        row_edges=row_edges,
        col_edges=col_edges,
        cells=tuple(cells),
        n_groups=len(groups),
    )


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

    __slots__ = (
        "axis_types",
        "committed",
        "dtype",
        "layout",
        "leaves",
        "memory_kind",
        "mesh",
        "mesh_device_ids",
        "name",
        "shape",
        "sharding_type",
        "shards",
        "spec",
    )

    def __init__(
        self,
        *,
        shape: tuple[int, ...] | None,
        dtype: str | None,
        spec: str | None,
        mesh: dict[str, int] | None,
        shards: list[ShardInfo],
        layout: ShardingLayout | None,
        leaves: list[tuple[str, ShardingView]] | None = None,
        committed: bool | None = None,
        sharding_type: str = "",
        axis_types: dict[str, str] | None = None,
        mesh_device_ids: tuple[int, ...] | None = None,
        name: str = "",
        memory_kind: str | None = None,
    ) -> None:
        self.memory_kind = memory_kind
        self.shape = shape
        self.dtype = dtype
        self.spec = spec
        self.mesh = mesh
        self.shards = shards
        self.layout = layout
        self.leaves = leaves if leaves is not None else []
        self.committed = committed
        self.sharding_type = sharding_type
        self.axis_types = axis_types
        self.mesh_device_ids = mesh_device_ids
        self.name = name

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
        distinct = {tuple((s.start, s.stop) for s in sh.index) for sh in self.shards}
        return max(1, len(self.shards) // max(1, len(distinct)))

    @property
    def bytes_per_device(self) -> int:
        """The largest shard, in bytes."""
        return max((s.bytes for s in self.shards), default=0)

    @property
    def total_bytes(self) -> int:
        """The global array's size in bytes."""
        if self.shape is None or self.dtype is None:
            return sum(v.total_bytes for _, v in self.leaves)
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

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
        _check_dims(dims, len(self.shape))
        return ShardingView(
            shape=self.shape,
            dtype=self.dtype,
            spec=self.spec,
            mesh=self.mesh,
            shards=self.shards,
            layout=build_layout(self.shape, self.shards, dims),
            committed=self.committed,
            sharding_type=self.sharding_type,
            axis_types=self.axis_types,
            mesh_device_ids=self.mesh_device_ids,
            name=self.name,
            memory_kind=self.memory_kind,
        )

    def __repr__(self) -> str:
        if self.shape is None:
            return f"<ShardingView of a pytree: {len(self.leaves)} arrays>"
        return (
            f"<ShardingView {self.dtype}{list(self.shape)} {self.spec}: "
            f"{len(self.shards)} shards>"
        )


def _check_dims(dims: Sequence[int], rank: int) -> None:
    if len(dims) > 2 or len(set(dims)) != len(dims):
        raise ShardingValueError(
            f"dims={tuple(dims)} must name one or two distinct dimensions; "
            "e.g. dims=(0, 2)"
        )
    for d in dims:
        if not isinstance(d, (int, np.integer)) or not 0 <= d < rank:
            raise ShardingValueError(
                f"dims={tuple(dims)} is out of range for a rank-{rank} array; use "
                f"dimensions in 0..{rank - 1}"
            )
    if rank >= 2 and len(dims) != 2:
        raise ShardingValueError(
            f"dims={tuple(dims)}: a rank-{rank} array is drawn over two dimensions; "
            "pass two, e.g. dims=(0, 1)"
        )


def _make_mesh(mesh: Any) -> Any:
    if isinstance(mesh, jax.sharding.Mesh):
        return mesh
    abstract = getattr(jax.sharding, "AbstractMesh", None)
    if abstract is not None and isinstance(mesh, abstract):
        mesh = dict(mesh.shape)
    if isinstance(mesh, dict) and mesh:
        names = tuple(str(k) for k in mesh)
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
        f"mesh={_describe(mesh)} is not a mesh; pass a jax.sharding.Mesh or a dict of "
        "axis sizes such as {'data': 4, 'model': 2}"
    )


def _array_view(x: Any, where: str, dims: Sequence[int] | None) -> ShardingView:
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
        sharding = x.sharding
        committed = bool(getattr(x, "committed", getattr(x, "_committed", True)))
    elif isinstance(x, jax.ShapeDtypeStruct):
        sharding = x.sharding
        committed = None
        if sharding is None:
            raise ShardingValueError(
                f"{where} is a ShapeDtypeStruct without a sharding; build it with "
                "jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))"
            )
    else:
        raise ShardingInputError(
            f"{where} is a {type(x).__module__.split('.')[0]}.{type(x).__name__} "
            f"({_describe(x)}), not a JAX array; pass a jax.Array or a "
            "jax.ShapeDtypeStruct with a sharding (numpy data: jax.device_put it first)"
        )
    abstract = getattr(jax.sharding, "AbstractMesh", None)
    if (
        abstract is not None
        and isinstance(sharding, jax.sharding.NamedSharding)
        and isinstance(sharding.mesh, abstract)
    ):
        # an abstract mesh has no devices: lay it out on the first devices present
        sharding = jax.sharding.NamedSharding(_make_mesh(sharding.mesh), sharding.spec)
    shape = tuple(int(d) for d in x.shape)
    dtype = np.dtype(x.dtype)
    if dims is not None:
        _check_dims(dims, len(shape))
    shards = shards_of(shape, dtype, sharding)
    mesh_obj = _mesh_of(sharding)
    mesh = dict(mesh_obj.shape) if mesh_obj is not None else None
    axis_types = None
    mesh_ids = None
    if mesh_obj is not None:
        types = getattr(mesh_obj, "axis_types", None)
        if types is not None:
            axis_types = {
                str(n): str(getattr(t, "name", t))
                for n, t in zip(mesh_obj.axis_names, types)
            }
        mesh_ids = tuple(int(d.id) for d in mesh_obj.devices.flat)
    return ShardingView(
        shape=shape,
        dtype=str(dtype),
        spec=_spec_of(sharding, len(shape)),
        mesh=mesh,
        shards=shards,
        layout=build_layout(shape, shards, dims),
        committed=committed,
        sharding_type=type(sharding).__name__,
        axis_types=axis_types,
        mesh_device_ids=mesh_ids,
        name=where,
        memory_kind=getattr(sharding, "memory_kind", None),
    )


def _is_arraylike(x: Any) -> bool:
    return isinstance(x, (jax.Array, jax.ShapeDtypeStruct))


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
        spec, mesh: lay out ``x``'s shape (or ``x`` itself given as a shape tuple)
            under ``NamedSharding(mesh, spec)`` instead, without moving data; ``mesh``
            is a ``jax.sharding.Mesh`` or a dict of axis sizes.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> v = js.sharding(jnp.ones((4, 4)))
        >>> v.spec.startswith("SingleDevice"), len(v.shards)
        (True, 1)
    """
    return sharding_view(x, name="x", dims=dims, spec=spec, mesh=mesh)


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
        if spec is None or mesh is None:
            raise ShardingValueError(
                "spec= and mesh= go together: js.sharding(x, spec=P('data'), "
                "mesh={'data': 8})"
            )
        concrete = _make_mesh(mesh)
        pspec = (
            spec
            if isinstance(spec, jax.sharding.PartitionSpec)
            else (
                jax.sharding.PartitionSpec(*spec)
                if isinstance(spec, (tuple, list))
                else jax.sharding.PartitionSpec(spec)
            )
        )
        if isinstance(x, tuple) and all(isinstance(d, (int, np.integer)) for d in x):
            shape, dtype = tuple(int(d) for d in x), np.float32
        elif hasattr(x, "shape") and hasattr(x, "dtype"):
            shape, dtype = tuple(x.shape), x.dtype
        else:
            raise ShardingInputError(
                f"{name}={_describe(x)} has no shape; with spec=/mesh= pass an array, a "
                "ShapeDtypeStruct or a shape tuple such as (1024, 512)"
            )
        try:
            named = jax.sharding.NamedSharding(concrete, pspec)
        except Exception as exc:
            raise ShardingValueError(
                f"spec={pspec} does not fit mesh {dict(concrete.shape)}: "
                f"{_first_line(exc)}"
            ) from None
        x = jax.ShapeDtypeStruct(shape, dtype, sharding=named)
    if _is_arraylike(x):
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
    meshes = {tuple(sorted(v.mesh.items())) for _, v in views if v.mesh is not None}
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


# --------------------------------------------------------------------------------------
# HLO text parsing (optimized / pre-partitioning modules)

_DTYPE_BYTES = {
    "pred": 1,
    "s2": 1,
    "u2": 1,
    "s4": 1,
    "u4": 1,
    "s8": 1,
    "u8": 1,
    "s16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "s32": 4,
    "u32": 4,
    "f32": 4,
    "s64": 8,
    "u64": 8,
    "f64": 8,
    "c64": 8,
    "c128": 16,
    "token": 0,
    "tuple": 0,
}
_ARRAY_SHAPE = re.compile(r"\b([a-z]\w*)\[([\d,\s]*)\]")
_NAME_HEAD = re.compile(r"\s*(?:ROOT\s+)?%?([^\s=]+)\s=\s")
_COMP_HEAD = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")

COLLECTIVE_KINDS = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
)
_OPCODE_KIND = {k: k for k in COLLECTIVE_KINDS}
_OPCODE_KIND.update(
    {
        "all-reduce-start": "all-reduce",
        "all-gather-start": "all-gather",
        "collective-permute-start": "collective-permute",
        "ragged-all-to-all": "all-to-all",
    }
)


_COLLECTIVE_LINE = re.compile(
    r" (?:all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
    r"|ragged-all-to-all)(?:-start)?\("
)


def shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape string (tuples summed): ``"f32[16,16]{1,0}"`` -> 1024."""
    total = 0
    for dtype, dims in _ARRAY_SHAPE.findall(shape):
        size = _DTYPE_BYTES.get(dtype)
        if size is None:
            size = 1 if dtype.startswith("f8") or dtype.startswith("f4") else 4
        n = math.prod(int(d) for d in dims.replace(" ", "").split(",") if d)
        total += n * size
    return total


def _balanced(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """Index just past the bracket closing the one at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        ch = text[i]
        if ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


@dataclass(slots=True)
class HloInstr:
    """One parsed HLO instruction line (internal)."""

    name: str
    opcode: str
    shape: str
    operands: list[str]
    attrs: str
    computation: str


def parse_instruction(line: str, computation: str = "") -> HloInstr | None:
    """An ``HloInstr`` from one instruction line, or None for other lines."""
    head = _NAME_HEAD.match(line)
    if head is None:
        return None
    rest = line[head.end() :]
    if rest.startswith("("):
        end = _balanced(rest, 0, "(", ")")
        shape, rest = rest[:end], rest[end:].lstrip()
    else:
        shape, _, rest = rest.partition(" ")
    op = OPCODE.match(rest)
    if op is None:
        return None
    start = op.end() - 1
    end = _balanced(rest, start, "(", ")")
    operands_text = re.sub(r"/\*.*?\*/", "", rest[start + 1 : end - 1])
    operands = [
        o.strip().lstrip("%").split(" ")[-1].lstrip("%")
        for o in operands_text.split(",")
        if o.strip()
    ]
    return HloInstr(
        name=head.group(1).lstrip("%"),
        opcode=op.group(1),
        shape=shape,
        operands=operands,
        attrs=rest[end:],
        computation=computation,
    )


def iter_instructions(
    text: str,
    keep: Callable[[str], bool] | None = None,
    index: dict[tuple[str, str], str] | None = None,
) -> list[HloInstr]:
    """Instructions of every computation of an HLO module's text.

    Only lines for which ``keep(line)`` is true are parsed (all by default); when
    ``index`` is given it receives ``(computation, name) -> line`` for every
    instruction, so operands can be looked up without parsing every line.
    """
    out = []
    computation = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == "}":
            computation = ""
            continue
        if stripped.endswith("{") and not computation:
            head = _COMP_HEAD.match(stripped)
            if head is not None and " = " not in stripped.split("(")[0]:
                computation = head.group(2)
                continue
        if not computation:
            continue
        if index is not None:
            head = _NAME_HEAD.match(line)
            if head is not None:
                index[(computation, head.group(1).lstrip("%"))] = line
        if keep is not None and not keep(line):
            continue
        instr = parse_instruction(line, computation)
        if instr is not None:
            out.append(instr)
    return out


def parse_stack_frames(text: str) -> dict[int, SourceLoc]:
    """``stack_frame_id`` -> the innermost ``SourceLoc`` of that frame (jax >= 0.9).

    The tables (``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames``)
    precede the computations and are read by ``_hlo.read_frame_tables``, which stops
    at the first computation; a frame's own location is its innermost one.
    """
    table = read_frame_tables(iter_lines(text))
    shown: dict[str, str] = {}
    frames: dict[int, SourceLoc] = {}
    for key in table.stack_frames:
        frame = table.frame(key)
        if frame is None or frame.line <= 0:
            continue
        file = shown.get(frame.file)
        if file is None:
            file = shown[frame.file] = display_filename(frame.file)
        frames[key] = SourceLoc(
            file=file,
            line=frame.line,
            column=frame.column if frame.column >= 0 else None,
            function=frame.function,
        )
    return frames


def source_of(attrs: str, frames: dict[int, SourceLoc]) -> SourceLoc | None:
    """The ``SourceLoc`` of an instruction's metadata (compact or old inline form)."""
    frame_id = stack_frame_id(attrs)
    if frame_id is not None:
        return frames.get(frame_id)
    frame = inline_frame(attrs)
    if frame is not None:
        return SourceLoc(file=display_filename(frame.file), line=frame.line)
    return None


def _attr(attrs: str, key: str) -> str | None:
    """The value of ``key=...`` in an attribute list, balanced braces kept."""
    idx = attrs.find(f"{key}=")
    while idx > 0 and attrs[idx - 1] not in ", ":
        idx = attrs.find(f"{key}=", idx + 1)
    if idx < 0:
        return None
    start = idx + len(key) + 1
    if start < len(attrs) and attrs[start] == "{":
        return attrs[start : _balanced(attrs, start, "{", "}")]
    if attrs.startswith("mesh[", start):
        # mesh['a'=4,'b'=2] {'a'}  (the form newer XLA prints for iota groups)
        close = _balanced(attrs, start + 4, "[", "]")
        brace = attrs.find("{", close)
        if brace >= 0:
            return attrs[start : _balanced(attrs, brace, "{", "}")]
        return attrs[start:close]
    end = attrs.find(", ", start)
    return attrs[start : end if end >= 0 else len(attrs)]


# --------------------------------------------------------------------------------------
# device groups and HLO shardings in mesh terms

_IOTA = re.compile(r"^\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?")


def _iota(dims: list[int], reshape: list[int], perm: list[int] | None) -> np.ndarray:
    ids = np.arange(math.prod(reshape)).reshape(reshape)
    if perm:
        ids = ids.transpose(perm)
    return ids.reshape(dims)


def parse_replica_groups(text: str) -> tuple[tuple[int, ...], ...] | None:
    """Replica groups from any of XLA's three spellings, or None if not decoded.

    ``{{0,1},{2,3}}``; iota ``[2,2]<=[4]`` / ``[2,4]<=[4,2]T(1,0)``; and
    ``mesh['axis_0'=4,'axis_1'=2] {'axis_0'}`` (groups vary the listed axes).
    """
    text = text.strip()
    try:
        if text.startswith("{"):
            inner = re.findall(r"\{([\d,\s]*)\}", text[1:-1])
            if not inner and text == "{}":
                return ()
            return tuple(
                tuple(int(i) for i in g.replace(" ", "").split(",") if i) for g in inner
            )
        iota = _IOTA.match(text)
        if iota is not None:
            dims = [int(d) for d in iota.group(1).split(",")]
            reshape = [int(d) for d in iota.group(2).split(",")]
            perm = [int(d) for d in iota.group(3).split(",")] if iota.group(3) else None
            ids = _iota(dims, reshape, perm)
            return tuple(tuple(int(i) for i in row) for row in ids.reshape(dims[0], -1))
        if text.startswith("mesh["):
            axes = re.findall(r"'([^']+)'=(\d+)", text[: text.index("]") + 1])
            names = [a for a, _ in axes]
            sizes = [int(s) for _, s in axes]
            rest = text[text.index("]") + 1 :]
            wanted = re.findall(r"'([^']+)'", rest[rest.find("{") :])
            if any(w not in names for w in wanted) or ":" in rest:
                return None
            ids = np.arange(math.prod(sizes)).reshape(sizes)
            keep = [i for i, n in enumerate(names) if n not in wanted]
            vary = [names.index(w) for w in wanted]
            ids = ids.transpose(keep + vary)
            size = math.prod(sizes[i] for i in vary)
            return tuple(tuple(int(i) for i in row) for row in ids.reshape(-1, size))
    except (ValueError, IndexError):
        return None
    return None


_groups_cached = functools.lru_cache(maxsize=1024)(parse_replica_groups)


def _pairs(text: str) -> tuple[tuple[int, ...], ...] | None:
    try:
        return tuple(
            tuple(int(i) for i in p.split(","))
            for p in re.findall(r"\{(\d+,\d+)\}", text)
        )
    except ValueError:
        return None


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


def spec_of_hlo_sharding(text: str, mesh: dict[str, int] | None) -> str | None:
    """An HLO sharding as a mesh spec; see ``_spec_of_hlo_sharding`` (memoised)."""
    return _spec_cached(text, tuple(mesh.items()) if mesh else None)


@functools.lru_cache(maxsize=1024)
def _spec_cached(
    text: str, mesh_items: tuple[tuple[str, int], ...] | None
) -> str | None:
    return _spec_of_hlo_sharding(text, dict(mesh_items) if mesh_items else None)


def _spec_of_hlo_sharding(text: str, mesh: dict[str, int] | None) -> str | None:
    """An HLO sharding (``{devices=[4,1,2]<=[8] last_tile_dim_replicate}``) as a spec.

    Returns ``"P('data', None)"`` style text where every tiled dimension maps onto
    mesh axes (logical device ids taken in mesh order), ``"replicated"``,
    ``"manual"`` (inside shard_map) or ``"device N"``; None otherwise.
    """
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    if body.startswith("{"):
        return None  # tuple sharding
    if body == "replicated":
        return "replicated"
    if body == "manual":
        return "manual"
    maximal = re.match(r"maximal device=(\d+)", body)
    if maximal:
        return f"device {maximal.group(1)}"
    if not body.startswith("devices=") or not mesh:
        return None
    rest = body[len("devices=") :]
    iota = _IOTA.match(rest)
    try:
        if iota is not None:
            dims = [int(d) for d in iota.group(1).split(",")]
            reshape = [int(d) for d in iota.group(2).split(",")]
            perm = [int(d) for d in iota.group(3).split(",")] if iota.group(3) else None
            tiles = _iota(dims, reshape, perm)
            tail = rest[iota.end() :]
        else:
            explicit = re.match(r"^\[([\d,]+)\]([\d,]+)", rest)
            if explicit is None:
                return None
            dims = [int(d) for d in explicit.group(1).split(",")]
            tiles = np.array([int(i) for i in explicit.group(2).split(",")]).reshape(
                dims
            )
            tail = rest[explicit.end() :]
    except ValueError:
        return None
    n_data = len(dims)
    if "last_tile_dim_replicate" in tail:
        n_data -= 1
    subgroups = re.search(r"last_tile_dims=\{([^}]*)\}", tail)
    if subgroups:
        n_data -= len([s for s in subgroups.group(1).split(",") if s.strip()])
    names = list(mesh)
    sizes = [mesh[n] for n in names]
    if tiles.size != math.prod(sizes):
        return None
    coords = np.unravel_index(tiles, sizes)
    parts: list[Any] = []
    for d in range(n_data):
        if dims[d] == 1:
            parts.append(None)
            continue
        varying = [a for a in range(len(names)) if np.ptp(coords[a], axis=d).any()]
        if math.prod(sizes[a] for a in varying) != dims[d]:
            return None

        def first_step(a: int, d: int = d) -> int:
            line = np.moveaxis(coords[a], d, 0).reshape(dims[d], -1)[:, 0]
            changes = np.nonzero(np.diff(line))[0]
            return int(changes[0]) + 1 if changes.size else dims[d]

        order = sorted(varying, key=lambda a: -first_step(a))
        position = np.zeros(tiles.shape, dtype=np.int64)
        for a in order:
            position = position * sizes[a] + coords[a]
        expected = np.arange(dims[d]).reshape(
            [-1 if i == d else 1 for i in range(len(dims))]
        )
        if not (position == np.broadcast_to(expected, tiles.shape)).all():
            return None
        axes = tuple(names[a] for a in order)
        parts.append(axes if len(axes) > 1 else axes[0])
    return format_spec(parts)


def parse_collectives(
    text: str,
    frames: dict[int, SourceLoc] | None = None,
    mesh: dict[str, int] | None = None,
) -> list[Collective]:
    """Every collective in an (optimized, partitioned) HLO module's text."""
    if frames is None:
        frames = parse_stack_frames(text)
    lines: dict[tuple[str, str], str] = {}
    instrs = iter_instructions(text, _COLLECTIVE_LINE.search, lines)

    def operand_shape(computation: str, name: str) -> str:
        line = lines.get((computation, name))
        if line is None:
            return ""
        parsed = parse_instruction(line, computation)
        return parsed.shape if parsed is not None else ""

    runs = _computation_runs(lines)
    n_devices = module_devices(text)
    out = []
    for instr in instrs:
        kind = _OPCODE_KIND.get(instr.opcode)
        if kind is None:
            continue
        operand_bytes = sum(
            shape_bytes(operand_shape(instr.computation, o)) for o in instr.operands
        )
        result_bytes = shape_bytes(instr.shape)
        if instr.opcode.endswith("-start"):
            # async starts return (operands, results, ...) tuples: the result alone
            result_bytes = (
                result_bytes - operand_bytes
                if result_bytes > operand_bytes
                else result_bytes
            )
        if kind == "collective-permute":
            groups_text = _attr(instr.attrs, "source_target_pairs") or ""
            groups = _pairs(groups_text)
        else:
            groups_text = _attr(instr.attrs, "replica_groups") or ""
            groups = _groups_cached(groups_text) if groups_text else None
            if groups == () and n_devices > 1:
                groups = (tuple(range(n_devices)),)  # {}: every device in one group
        mesh_key = tuple(mesh.items()) if mesh else None
        if kind != "collective-permute":
            axes = _axes_cached(groups, mesh_key)
        else:
            axes = _permute_axes(groups, mesh)
        op_name = OP_NAME.search(instr.attrs)
        out.append(
            Collective(
                name=instr.name,
                kind=kind,
                bytes=max(operand_bytes, result_bytes),
                replica_groups=groups,
                source=source_of(instr.attrs, frames),
                shape=instr.shape,
                groups_text=groups_text,
                axes=axes,
                op_name=op_name.group(1) if op_name else "",
                computation=instr.computation,
                runs=runs.get(instr.computation, 1),
            )
        )
    return out


def module_devices(text: str) -> int:
    """Devices an HLO module runs on: ``num_partitions`` x ``replica_count``."""
    header = text[: text.find("\n")] if "\n" in text else text
    parts = re.search(r"num_partitions=(\d+)", header)
    replicas = re.search(r"replica_count=(\d+)", header)
    return (int(parts.group(1)) if parts else 1) * (
        int(replicas.group(1)) if replicas else 1
    )


_CALLEE = re.compile(
    r"\b(body|condition|to_apply|calls|true_computation|false_computation)=%?([\w.\-]+)"
)
_BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


def _computation_runs(lines: dict[tuple[str, str], str]) -> dict[str, int | None]:
    """How many times each called computation runs per program call.

    While bodies run their known trip count (None if unknown) times their caller's
    count; every other callee (call, conditional branch, fusion) its caller's count.
    """
    edges: dict[str, list[tuple[str, int | None]]] = {}
    for (computation, _), line in lines.items():
        if "=" not in line or not (
            "body=" in line
            or "calls=" in line
            or "to_apply=" in line
            or "branch_computations=" in line
            or "_computation=" in line
        ):
            continue
        trip_match = _TRIP.search(line)
        trip = int(trip_match.group(1)) if trip_match else None
        for key, callee in _CALLEE.findall(line):
            factor = trip if key in ("body", "condition") else 1
            edges.setdefault(computation, []).append((callee, factor))
        branches = _BRANCHES.search(line)
        if branches:
            for callee in branches.group(1).split(","):
                edges.setdefault(computation, []).append(
                    (callee.strip().lstrip("%"), 1)
                )
    callees = {c for targets in edges.values() for c, _ in targets}
    runs: dict[str, int | None] = {}
    stack = [(root, 1) for root in edges if root not in callees]
    seen = 0
    while stack and seen < 100_000:
        seen += 1
        computation, count = stack.pop()
        if computation in runs:
            continue
        runs[computation] = count
        for callee, factor in edges.get(computation, []):
            if callee not in runs:
                sub = None if count is None or factor is None else count * factor
                stack.append((callee, sub))
    return runs


@functools.lru_cache(maxsize=1024)
def _axes_cached(
    groups: tuple[tuple[int, ...], ...] | None,
    mesh_items: tuple[tuple[str, int], ...] | None,
) -> tuple[str, ...] | None:
    return axes_of_groups(groups, dict(mesh_items) if mesh_items else None)


def _permute_axes(
    pairs: tuple[tuple[int, ...], ...] | None, mesh: dict[str, int] | None
) -> tuple[str, ...] | None:
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


def parse_op_shardings(
    text: str, mesh: dict[str, int] | None = None
) -> list[OpSharding]:
    """Every instruction carrying a ``sharding=`` attribute, with its spec and source."""
    frames = parse_stack_frames(text)
    out = []
    for instr in iter_instructions(text, lambda line: "sharding={" in line):
        raw = _attr(instr.attrs, "sharding")
        if raw is None:
            continue
        op_name = OP_NAME.search(instr.attrs)
        out.append(
            OpSharding(
                name=instr.name,
                opcode=instr.opcode,
                sharding=raw,
                source=source_of(instr.attrs, frames),
                shape=instr.shape,
                spec=spec_of_hlo_sharding(raw, mesh),
                op_name=op_name.group(1) if op_name else "",
            )
        )
    return out


# --------------------------------------------------------------------------------------
# the program view


class ProgramShardingView(Renderable):
    """What one compiled program does across devices.

    Attributes:
        inputs, outputs: ``[(path in the user's names, spec string), ...]``.
        ops: ``OpSharding`` of every op after XLA's sharding propagation.
        collectives: every ``Collective`` in the optimized, partitioned HLO.
        by_line: ``{(file, line): [Collective, ...]}``.
        ops_by_line: ``{(file, line): [OpSharding, ...]}``.
        line_summary: one ``LineSummary`` per source line (heaviest first).
        mesh: ``{axis: size}`` of the program's mesh, or None.
        device_ids: the physical device id of each logical id (the ids in
            ``Collective.replica_groups``), in mesh order; None without a mesh.
        hlo_text: the optimized HLO (``Compiled.as_text()``).
        num_devices: the number of devices the program runs on.
    """

    __slots__ = (
        "collectives",
        "device_ids",
        "function_name",
        "hlo_text",
        "inputs",
        "mesh",
        "num_devices",
        "ops",
        "ops_stage",
        "outputs",
    )

    def __init__(
        self,
        *,
        function_name: str,
        inputs: list[tuple[str, str]],
        outputs: list[tuple[str, str]],
        ops: list[OpSharding],
        collectives: list[Collective],
        mesh: dict[str, int] | None,
        hlo_text: str,
        num_devices: int,
        ops_stage: str = "",
        device_ids: tuple[int, ...] | None = None,
    ) -> None:
        self.device_ids = device_ids
        self.function_name = function_name
        self.inputs = inputs
        self.outputs = outputs
        self.ops = ops
        self.collectives = collectives
        self.mesh = mesh
        self.hlo_text = hlo_text
        self.num_devices = num_devices
        self.ops_stage = ops_stage

    @property
    def by_line(self) -> dict[tuple[str, int], list[Collective]]:
        out: dict[tuple[str, int], list[Collective]] = {}
        for c in self.collectives:
            if c.source is not None:
                out.setdefault(c.source.key, []).append(c)
        return out

    @property
    def collective_bytes(self) -> int:
        """Bytes per device all collectives handle per call (loop runs counted)."""
        return sum(c.total_bytes for c in self.collectives)

    @property
    def ops_by_line(self) -> dict[tuple[str, int], list[OpSharding]]:
        """``{(file, line): [OpSharding, ...]}``: the ops each source line produced."""
        out: dict[tuple[str, int], list[OpSharding]] = {}
        for op in self.ops:
            if op.source is not None:
                out.setdefault(op.source.key, []).append(op)
        return out

    @property
    def line_summary(self) -> list[LineSummary]:
        groups: dict[Any, list[Collective]] = {}
        locs: dict[Any, SourceLoc | None] = {}
        for c in self.collectives:
            key = c.source.key if c.source is not None else None
            groups.setdefault(key, []).append(c)
            locs.setdefault(key, c.source)
        rows = []
        for key, items in groups.items():
            counts: dict[str, int] = {}
            for kind in COLLECTIVE_KINDS:
                n = sum(1 for c in items if c.kind == kind)
                if n:
                    counts[kind] = n
            rows.append(
                LineSummary(
                    source=locs[key],
                    counts=counts,
                    bytes=sum(c.total_bytes for c in items),
                )
            )
        rows.sort(key=lambda r: (-r.bytes, str(r.source)))
        return rows

    @property
    def mesh_grid(self) -> MeshGrid | None:
        """The program's mesh as a table of device ids with axis labels, or None."""
        return mesh_grid(self.mesh, self.device_ids)

    def summary(self) -> str:
        """One line per source line: ``"line In [3]:42: 2 all-gathers, 48 MiB"``."""
        return "\n".join(r.text for r in self.line_summary)

    def count(self, kind: str) -> int:
        """How many collectives of ``kind`` (e.g. ``"all-reduce"``) the program has."""
        if kind not in COLLECTIVE_KINDS:
            raise ShardingValueError(
                f"kind={kind!r} is not a collective kind; use one of "
                + ", ".join(COLLECTIVE_KINDS)
            )
        return sum(1 for c in self.collectives if c.kind == kind)

    def __repr__(self) -> str:
        return (
            f"<ProgramShardingView of {self.function_name}: {len(self.ops)} ops, "
            f"{len(self.collectives)} collectives>"
        )


def _specs_with_paths(tree: Any, prefix: str) -> list[tuple[str, str]]:
    leaves = jax.tree_util.tree_flatten_with_path(
        tree, is_leaf=lambda s: isinstance(s, jax.sharding.Sharding) or s is None
    )[0]
    return [(prefix + jax.tree_util.keystr(path), _spec_of(s, 0)) for path, s in leaves]


def _program_mesh(
    compiled: Any,
) -> tuple[dict[str, int] | None, tuple[int, ...] | None]:
    """The program's one mesh as ``{axis: size}`` and its device ids, or Nones."""
    shardings = jax.tree_util.tree_leaves(
        (compiled.input_shardings, compiled.output_shardings),
        is_leaf=lambda s: isinstance(s, jax.sharding.Sharding),
    )
    meshes = {
        (
            tuple(dict(s.mesh.shape).items()),
            tuple(int(d.id) for d in s.mesh.devices.flat),
        )
        for s in shardings
        if isinstance(s, jax.sharding.NamedSharding) and hasattr(s.mesh, "devices")
    }
    if len(meshes) == 1:
        items, ids = next(iter(meshes))
        return dict(items), ids
    return None, None


_GSPMD = re.compile(r"^GSPMDSharding\((\{.*\})")


def _gspmd_as_spec(spec: str, mesh: dict[str, int] | None) -> str:
    """``GSPMDSharding({devices=[8,1]<=[8]}, ...)`` in mesh terms where it maps."""
    match = _GSPMD.match(spec)
    if match is None:
        return spec
    mapped = spec_of_hlo_sharding(match.group(1), mesh)
    if mapped == "replicated":
        return "P()"
    return mapped if mapped is not None and mapped.startswith("P(") else spec


def _static_positions(fn: Any, static_argnums: Sequence[int], n_args: int) -> set[int]:
    own = getattr(fn, "_static_argnums", None) or ()
    nums = set()
    for i in (*static_argnums, *own):
        try:
            i = int(i)
        except (TypeError, ValueError):
            continue
        nums.add(i % n_args if i < 0 and n_args else i)
    return nums


def _compile_with_dump(lowered: Any) -> tuple[Any, str, str]:
    """Compile ``lowered``; return (compiled, pre-partitioning HLO text, its stage).

    A persistent-compilation-cache hit skips XLA's passes, so nothing is dumped; the
    compile is then redone once with that cache switched off (and switched back).
    """
    compiled, text, stage = _compile_dumping(lowered)
    if (
        stage == "after sharding propagation"
        or not jax.config.jax_enable_compilation_cache
    ):
        return compiled, text, stage
    if not getattr(jax.config, "jax_compilation_cache_dir", None):
        return compiled, text, stage
    previous = jax.config.jax_enable_compilation_cache
    try:
        jax.config.update("jax_enable_compilation_cache", False)
        again = _compile_dumping(lowered)
    finally:
        jax.config.update("jax_enable_compilation_cache", previous)
    return (
        again if again[2] == "after sharding propagation" else (compiled, text, stage)
    )


def _compile_dumping(lowered: Any) -> tuple[Any, str, str]:
    with tempfile.TemporaryDirectory(prefix="jaxscope-sharding-") as tmp:
        options = {
            "xla_dump_to": tmp,
            "xla_dump_hlo_pass_re": "spmd-partitioning",
            "xla_dump_hlo_as_text": True,
        }
        try:
            compiled = lowered.compile(compiler_options=options)
        except TypeError:  # a Lowered without compiler_options
            compiled = lowered.compile()
        for pattern, stage in (
            ("*before_spmd-partitioning.txt", "after sharding propagation"),
            ("*before_optimizations.txt", "before optimizations"),
        ):
            found = sorted(glob.glob(os.path.join(tmp, pattern)))
            if found:
                with open(found[-1], encoding="utf-8") as fh:
                    return compiled, fh.read(), stage
    try:
        text = lowered.as_text(dialect="hlo", debug_info=True)
    except TypeError:
        text = lowered.as_text(dialect="hlo")
    return compiled, text, "before optimizations"


def program_shardings(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> ProgramShardingView:
    """Build the ``ProgramShardingView`` of ``fn(*args, **kwargs)`` (compiled, not run)."""
    nums = (
        (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    )
    names_ = (
        (static_argnames,)
        if isinstance(static_argnames, str)
        else tuple(static_argnames)
    )
    if hasattr(fn, "lower") and not hasattr(fn, "trace"):
        # pmap-style: lower directly
        try:
            lowered = fn.lower(*args, **kwargs)
        except Exception as exc:
            from jaxscope._staging import trace_error

            raise trace_error(fn, exc, "js.shardings") from exc
    else:
        traced = trace(
            fn,
            args,
            kwargs,
            static_argnums=nums,
            static_argnames=names_,
            api_name="js.shardings",
        )
        try:
            lowered = traced.lower()
        except Exception as exc:
            from jaxscope._staging import trace_error

            raise trace_error(fn, exc, "js.shardings") from exc
    try:
        compiled, pre_text, stage = _compile_with_dump(lowered)
    except Exception as exc:
        raise InvalidCallError(
            f"XLA could not compile {function_name(fn)}: {_first_line(exc)}"
        ) from None
    mesh, device_ids = _program_mesh(compiled)
    text = compiled.as_text()
    param_names = staging_param_names(fn)
    statics = _static_positions(fn, nums, len(args))
    dynamic = [i for i in range(len(args)) if i not in statics]
    in_args, in_kwargs = compiled.input_shardings
    inputs: list[tuple[str, str]] = []
    for k, tree in enumerate(in_args):
        pos = dynamic[k] if k < len(dynamic) else k
        name = param_names[pos] if pos < len(param_names) else f"args[{pos}]"
        inputs.extend(_specs_with_paths(tree, name))
    for key, tree in sorted(in_kwargs.items()):
        inputs.extend(_specs_with_paths(tree, str(key)))
    outputs = _specs_with_paths(compiled.output_shardings, "out")
    inputs = [(path, _gspmd_as_spec(spec, mesh)) for path, spec in inputs]
    outputs = [(path, _gspmd_as_spec(spec, mesh)) for path, spec in outputs]
    frames = parse_stack_frames(text)
    ops = parse_op_shardings(pre_text, mesh)
    collectives = parse_collectives(text, frames, mesh)
    num_devices = module_devices(text)
    return ProgramShardingView(
        function_name=function_name(fn),
        inputs=inputs,
        outputs=outputs,
        ops=ops,
        collectives=collectives,
        mesh=mesh,
        hlo_text=text,
        num_devices=num_devices,
        ops_stage=stage,
        device_ids=device_ids,
    )


def shardings(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., ProgramShardingView]:
    """Compile ``fun`` on example arguments; show its shardings and collectives.

    The function is traced, lowered and compiled, never run. Works for ``jax.jit``
    (with ``in_shardings``/``out_shardings``), ``with_sharding_constraint``,
    ``device_put``-sharded arguments, ``shard_map`` and ``pmap``.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> p = js.shardings(lambda x: x * 2)(jnp.ones(4))
        >>> p.collectives
        []
    """
    check_callable(fun, "js.shardings")

    @functools.wraps(fun)
    def compiled(*args: Any, **kwargs: Any) -> ProgramShardingView:
        return program_shardings(
            fun,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        )

    return compiled


__all__ = [
    "Collective",
    "LayoutCell",
    "LineSummary",
    "MeshGrid",
    "OpSharding",
    "ProgramShardingView",
    "ShardInfo",
    "ShardingInputError",
    "ShardingLayout",
    "ShardingValueError",
    "ShardingView",
    "sharding",
    "shardings",
]
