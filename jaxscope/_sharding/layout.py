"""Shards of an array and the grid they are drawn in, as data.

``shards_of`` lists which device holds which part of a global array under a sharding
(every device, addressable or not, from the sharding's index map; no data touched);
``build_layout`` cuts two chosen dimensions into the tiles the renderers draw, for
arrays of any rank (other dimensions collapsed).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxscope._exceptions import ShardingValueError
from jaxscope._format import short_repr
from jaxscope._host import dtype_itemsize
from jaxscope._staging import first_line


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


def _norm_index(index: Sequence[Any], shape: Sequence[int]) -> tuple[slice, ...]:
    out = []
    for s, dim in zip(index, shape, strict=False):
        if isinstance(s, slice):
            start, stop, _ = s.indices(dim)
            out.append(slice(start, stop))
        else:  # an integer index (never produced by JAX shardings, kept for safety)
            out.append(slice(int(s), int(s) + 1))
    return tuple(out)


def _block(shard: ShardInfo) -> tuple[tuple[int, int], ...]:
    return tuple((s.start, s.stop) for s in shard.index)


def shards_of(shape: tuple[int, ...], dtype: Any, sharding: Any) -> list[ShardInfo]:
    """Every shard of a global array of ``shape``/``dtype`` under ``sharding``.

    Works for every device of the sharding, addressable or not: the index map is the
    sharding's, so no data is touched.
    """
    itemsize = dtype_itemsize(dtype)
    try:
        index_map = sharding.devices_indices_map(tuple(shape))
    except Exception as exc:
        raise ShardingValueError(
            f"sharding {short_repr(sharding, 40)} cannot lay out shape {tuple(shape)}: "
            f"{first_line(str(exc)) or type(exc).__name__}"
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


def replication_of(shards: Sequence[ShardInfo]) -> int:
    """How many devices hold each distinct shard (1 = fully sharded)."""
    distinct = {_block(s) for s in shards}
    return max(1, len(shards) // max(1, len(distinct)))


def default_dims(shape: Sequence[int], shards: Sequence[ShardInfo]) -> tuple[int, ...]:
    """The dimensions to draw: the two most sharded, in array order."""
    rank = len(shape)
    if rank <= 2:
        return tuple(range(rank))
    splits = [len({s.index[d].start for s in shards}) for d in range(rank)]
    order = sorted(range(rank), key=lambda d: (-splits[d], d))
    return tuple(sorted(order[:2]))


def check_dims(dims: Sequence[int], rank: int) -> None:
    """Raise ``ShardingValueError`` unless ``dims`` can be drawn for ``rank``."""
    if not isinstance(dims, (tuple, list)):
        raise ShardingValueError(
            f"dims must be a tuple of one or two ints, got {short_repr(dims, 40)}; "
            "write e.g. dims=(0, 1)"
        )
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


def _edges(
    shape: Sequence[int], shards: Sequence[ShardInfo], dim: int | None
) -> tuple[int, ...]:
    if dim is None:
        return (0, 1)
    points = {0, shape[dim]}
    for s in shards:
        points.add(s.index[dim].start)
        points.add(s.index[dim].stop)
    return tuple(sorted(points))


def _span(shard: ShardInfo, dim: int | None) -> tuple[int, int]:
    if dim is None:
        return (0, 1)
    return (shard.index[dim].start, shard.index[dim].stop)


def _cell(
    held: list[ShardInfo],
    rows: tuple[int, int],
    cols: tuple[int, int],
    groups: dict[tuple[int, ...], int],
) -> LayoutCell:
    """The cell held by ``held``; its device set numbered in ``groups`` on first sight."""
    held.sort(key=lambda s: s.device_id)
    ids = tuple(dict.fromkeys(s.device_id for s in held))
    by_id = {s.device_id: s for s in held}
    return LayoutCell(
        rows=rows,
        cols=cols,
        device_ids=ids,
        labels=tuple(by_id[i].label for i in ids),
        process_indices=tuple(sorted({by_id[i].process_index for i in ids})),
        addressable=all(by_id[i].addressable for i in ids),
        group=groups.setdefault(ids, len(groups)),
        pieces=len({_block(h) for h in held}),
    )


def build_layout(
    shape: tuple[int, ...],
    shards: Sequence[ShardInfo],
    dims: Sequence[int] | None = None,
) -> ShardingLayout:
    """The grid of ``shards`` over ``dims`` (default: the two most sharded dims)."""
    chosen = tuple(dims) if dims is not None else default_dims(shape, shards)
    row_dim: int | None = None
    col_dim: int | None = None
    if len(chosen) == 2:
        row_dim, col_dim = chosen
    elif len(chosen) == 1:
        col_dim = chosen[0]
    row_edges = _edges(shape, shards, row_dim)
    col_edges = _edges(shape, shards, col_dim)
    n_cols = len(col_edges) - 1
    holders: list[list[ShardInfo]] = [[] for _ in range((len(row_edges) - 1) * n_cols)]
    for shard in shards:
        r0, r1 = _span(shard, row_dim)
        c0, c1 = _span(shard, col_dim)
        for r in range(
            bisect.bisect_left(row_edges, r0), bisect.bisect_left(row_edges, r1)
        ):
            for c in range(
                bisect.bisect_left(col_edges, c0), bisect.bisect_left(col_edges, c1)
            ):
                holders[r * n_cols + c].append(shard)
    groups: dict[tuple[int, ...], int] = {}
    cells = []
    for k, held in enumerate(holders):
        r, c = divmod(k, n_cols)
        rows, cols = (row_edges[r], row_edges[r + 1]), (col_edges[c], col_edges[c + 1])
        cells.append(_cell(held, rows, cols, groups))
    return ShardingLayout(
        shape=tuple(shape),
        row_dim=row_dim,
        col_dim=col_dim,
        collapsed=tuple(d for d in range(len(shape)) if d not in (row_dim, col_dim)),
        row_edges=row_edges,
        col_edges=col_edges,
        cells=tuple(cells),
        n_groups=len(groups),
    )
