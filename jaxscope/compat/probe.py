"""Rebuilding a ``shard_map`` equation around a new body, for ``js.probe``.

Relies on the params of the ``shard_map`` equation: ``mesh``, ``in_specs`` and
``out_specs`` (PartitionSpecs), and the manual axes as ``newly_manual_axes`` (jax
0.10), ``manual_axes`` or ``axis_names`` (jax 0.9); checked on jax 0.9.0 and 0.10.2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.sharding import PartitionSpec

from jaxscope._exceptions import JaxscopeCompatError


def shard_map_axes(eqn: Any) -> tuple[tuple[str, int], ...]:
    """The manual mesh axes of a ``shard_map`` equation, ``((name, size), ...)`` in
    the mesh's order: one row per device of a per-device value follows them."""
    params = eqn.params
    mesh = params.get("mesh")
    if mesh is None:
        raise JaxscopeCompatError(
            "compat.probe.shard_map_axes needs the shard_map equation's 'mesh' param, "
            f"absent in jax {jax.__version__}; report this at the jaxscope issue tracker"
        )
    manual: Any = None
    for name in ("newly_manual_axes", "manual_axes", "axis_names"):
        if params.get(name):
            manual = params[name]
            break
    names = tuple(str(a) for a in mesh.axis_names)
    if manual is None:
        manual = names
    sizes = dict(zip(names, (int(s) for s in mesh.axis_sizes), strict=True))
    return tuple((a, sizes[a]) for a in names if a in manual)


def rebind_shard_map(
    eqn: Any, local: Callable[..., tuple[Any, Any]], args: Sequence[Any]
) -> tuple[list[Any], Any]:
    """``eqn``'s ``shard_map`` with body ``local`` (which returns ``(outputs,
    extras)``) applied to ``args``: the outputs as the equation's, and every leaf of
    ``extras`` (given a leading axis of 1 per device) stacked over the manual axes.

    Relies on: the ``mesh``, ``in_specs``, ``out_specs`` params (``shard_map_axes``).
    """
    params = eqn.params
    in_specs = params.get("in_specs")
    out_specs = params.get("out_specs")
    if in_specs is None or out_specs is None:
        raise JaxscopeCompatError(
            "compat.probe.rebind_shard_map needs the shard_map equation's in_specs "
            f"and out_specs params, absent in jax {jax.__version__}; report this at "
            "the jaxscope issue tracker"
        )
    axes = tuple(name for name, _ in shard_map_axes(eqn))
    mapped = jax.shard_map(
        local,
        mesh=params["mesh"],
        in_specs=tuple(in_specs),
        out_specs=(tuple(out_specs), PartitionSpec(axes)),
        axis_names=set(axes),
        check_vma=False,
    )
    outs, extras = mapped(*args)
    return list(outs), extras


def shard_map_devices(eqn: Any) -> list[str] | None:
    """The devices of a ``shard_map`` equation's mesh in the order of its per-device
    rows (``shard_map_axes``), as text; None when the mesh has no devices (an
    abstract mesh) or some axes are not manual.

    Relies on: the ``mesh`` param (``Mesh.devices``, ``Mesh.axis_names``).
    """
    mesh = eqn.params.get("mesh")
    devices = getattr(mesh, "devices", None)
    if devices is None or mesh is None:
        return None
    if len(shard_map_axes(eqn)) != len(tuple(mesh.axis_names)):
        return None
    return [str(d) for d in devices.reshape(-1)]
