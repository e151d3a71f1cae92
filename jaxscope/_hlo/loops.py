"""Loops in a traced program, for honest flop counts: XLA's cost analysis counts a
``while`` body once, however many times it runs.

A ``scan`` (and a ``fori_loop`` with constant bounds, which JAX turns into one) has a
static trip count; its body is lowered on its own so the flops it adds per extra
iteration are known. A ``while_loop`` has none: it is only reported.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from jaxscope.compat import jaxpr as _cjaxpr

# Loops inside these are still run once per call of the program.
_LOOPS = ("scan", "while")


@dataclass(frozen=True, slots=True)
class Loop:
    """One loop of the program: its primitive, trip count (None: not static), and
    the flops of one run of its body as XLA counts it (inner loops once) and run
    out (inner loops per iteration); None where XLA could not cost the body."""

    primitive: str
    trip_count: int | None
    body_flops_once: float | None
    body_flops: float | None

    @property
    def extra_flops(self) -> float:
        """What XLA's count misses: the body's other iterations and its inner loops'
        (0 where unknown; a loop without a static trip count is counted once)."""
        if self.body_flops is None or self.body_flops_once is None:
            return 0.0
        runs = self.trip_count if self.trip_count is not None else 1
        return runs * self.body_flops - self.body_flops_once


def _flops(closed: Any) -> float | None:
    try:
        function = _cjaxpr.jaxpr_callable(closed)
        avals = [
            jax.ShapeDtypeStruct(a.shape, a.dtype) for a in _cjaxpr.input_avals(closed)
        ]
        cost = jax.jit(function).lower(*avals).cost_analysis()
    except Exception:  # a body XLA cannot lower alone: its cost stays unknown
        return None
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    value = cost.get("flops") if isinstance(cost, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def _body(eqn: Any) -> Any:
    labels = dict(_cjaxpr.subjaxprs(eqn))
    return labels.get("jaxpr") or labels.get("body_jaxpr")


def loops(closed: Any) -> list[Loop]:
    """The outermost loops of the ``ClosedJaxpr`` ``closed`` (inside jit and other
    calls too), each with its body's flops."""
    found: list[Loop] = []
    jaxpr, _ = _cjaxpr.open_jaxpr(closed)
    for eqn in jaxpr.eqns:
        name = _cjaxpr.primitive_name(eqn)
        if name in _LOOPS:
            body = _body(eqn)
            once = None if body is None else _flops(body)
            full = None if once is None else flops_with_trip_counts(once, loops(body))
            found.append(Loop(name, _cjaxpr.scan_length(eqn), once, full))
            continue
        for _, sub in _cjaxpr.subjaxprs(eqn):
            found.extend(loops(sub))
    return found


def flops_with_trip_counts(flops: float, found: list[Loop]) -> float:
    """XLA's ``flops`` (each loop body counted once) with every loop of ``found``
    counted per iteration where its trip count is static."""
    return flops + sum(loop.extra_flops for loop in found)


def _probe(x: Any) -> Any:
    carry, _ = jax.lax.scan(lambda c, _: (c @ c, None), x, None, length=4)
    return carry


@functools.cache
def xla_counts_bodies_once() -> bool:
    """Whether this XLA's cost analysis counts a loop body once (checked on a tiny
    scan of 4 matmuls), so that the caveat and the estimate never go stale."""
    square = jax.ShapeDtypeStruct((8, 8), jnp.float32)
    try:
        cost = jax.jit(_probe).lower(square).cost_analysis()
    except Exception:
        return False
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else None
    flops = cost.get("flops") if isinstance(cost, dict) else None
    one_matmul = 2 * 8 * 8 * 8
    return isinstance(flops, (int, float)) and 0 < flops < 2 * one_matmul
