# pyright: strict
"""Silent replication: a program's large input (a parameter, an optimizer state, a
batch) held whole on every device of a mesh axis that could split it.

Two cases are certain enough to report, and nothing else is (data parallelism keeps
its parameters whole on purpose):
- the axis splits nothing in the whole program: every device along it holds the
  same arrays and repeats the same work;
- another input of the same shape and dtype is split over the axis (an optimizer
  state left whole next to its sharded parameter): the spec that input uses fits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from jaxscope._format import format_bytes
from jaxscope._sharding.mesh import Spec, format_spec, parse_spec, sharded_type
from jaxscope._sharding.ops import OpSharding

MIN_BYTES = 1 << 20
"""Inputs smaller than this per device are never reported (1 MiB)."""
_ANY_RANK = 64  # a spec read only for the axes it names


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgramInput:
    """One input leaf of a compiled program: its name, type and spec."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    itemsize: int
    spec: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationFinding:
    """An input held whole on every device of a mesh axis that could split it.

    Attributes:
        name: the input, in the user's names (``params['w1']``, ``model.w1``).
        typed: its type and layout now (``f32[1024,1024@model]``).
        spec: its spec now.
        axis: the mesh axis it is replicated over.
        wasted_bytes: the bytes per device the replication costs (what splitting it
            over ``axis`` would free).
        suggested: the spec to use instead.
        why: why the axis could split it.
    """

    name: str
    typed: str
    spec: str
    axis: str
    wasted_bytes: int
    suggested: str
    why: str

    @property
    def text(self) -> str:
        return (
            f"{self.name} ({self.typed}) is whole on every device of `{self.axis}`: "
            f"{format_bytes(self.wasted_bytes)} per device to spare with "
            f"{self.suggested}; {self.why}"
        )


def _used_axes(specs: Sequence[Spec]) -> set[str]:
    return {a for spec in specs for axes in spec for a in axes}


def _split_over(
    spec: Spec, shape: tuple[int, ...], axis: str, size: int, mesh: dict[str, int]
) -> Spec | None:
    """``spec`` with ``axis`` added to the largest dimension it divides evenly."""
    best: int | None = None
    for d, axes in enumerate(spec):
        split = math.prod(mesh.get(a, 1) for a in axes) * size
        if shape[d] % split == 0 and (best is None or shape[d] > shape[best]):
            best = d
    if best is None:
        return None
    return tuple((*axes, axis) if d == best else axes for d, axes in enumerate(spec))


def replication_findings(
    inputs: Sequence[ProgramInput],
    ops: Sequence[OpSharding],
    outputs: Sequence[str],
    mesh: dict[str, int] | None,
    min_bytes: int = MIN_BYTES,
) -> list[ReplicationFinding]:
    """The inputs held whole over a mesh axis that could split them, largest first."""
    if not mesh:
        return []
    specs: list[tuple[ProgramInput, Spec]] = []
    for item in inputs:
        spec = parse_spec(item.spec, len(item.shape))
        if spec is not None:
            specs.append((item, spec))
    program_specs = [s for _, s in specs]
    for text in [op.spec for op in ops] + list(outputs):
        parsed = parse_spec(text, _ANY_RANK) if text else None
        if parsed is not None:
            program_specs.append(parsed)
    used = _used_axes(program_specs)
    found: list[ReplicationFinding] = []
    for item, spec in specs:
        held = math.prod(item.shape) * item.itemsize
        per_device = held // max(
            1, math.prod(mesh.get(a, 1) for ax in spec for a in ax)
        )
        if per_device < min_bytes:
            continue
        mine = {a for axes in spec for a in axes}
        for axis, size in mesh.items():
            if size <= 1 or axis in mine:
                continue
            sibling = next(
                (
                    (other, other_spec)
                    for other, other_spec in specs
                    if other is not item
                    and other.shape == item.shape
                    and other.dtype == item.dtype
                    and axis in {a for axes in other_spec for a in axes}
                ),
                None,
            )
            if sibling is not None:
                suggested: Spec | None = sibling[1]
                why = (
                    f"{sibling[0].name}, of the same shape, is split over "
                    f"`{axis}` ({sibling[0].spec})"
                )
            elif axis not in used:
                suggested = _split_over(spec, item.shape, axis, size, mesh)
                why = (
                    f"no array of the program is split over `{axis}`, so its "
                    f"{size} devices hold the same data and repeat the same work"
                )
            else:
                continue
            if suggested is None:
                continue
            found.append(
                ReplicationFinding(
                    name=item.name,
                    typed=sharded_type(item.dtype, item.shape, spec),
                    spec=item.spec,
                    axis=axis,
                    wasted_bytes=per_device - per_device // size,
                    suggested=format_spec([a or None for a in suggested]),
                    why=why,
                )
            )
    found.sort(key=lambda f: (-f.wasted_bytes, f.name))
    return found
