"""Sharding: ``js.shardings(f)(x, ws)`` against ``jax.jit(f).lower(x, ws).compile()``.

A 200-layer program (about 1,000 sharded ops) on a 4 x 2 mesh of 8 host CPU devices.
jaxscope's side also reads ``.line_summary`` (per source line: ops, collectives,
bytes) and why each collective is there (``Collective.reason``, built with the view:
the ops before partitioning matched to each collective). Every round uses a fresh function, so neither side hits JAX's trace or compile
caches. Budget: median ratio <= 1.3.

    python benchmarks/bench_sharding.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from collections.abc import Iterator

import harness
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js

LAYERS = 200


def make_f():
    def f(x, ws):
        for i in range(LAYERS):
            h = jnp.tanh(x @ ws[i % len(ws)])
            h = jax.lax.with_sharding_constraint(h, P("data", None))
            x = x + 0.5 * h
        return jnp.sum(x)

    return f


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    auto = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(auto, auto))
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
    ws = [
        jax.device_put(jnp.ones((32, 32)) * i, NamedSharding(mesh, P("model", None)))
        for i in range(4)
    ]
    use_mesh = getattr(jax.sharding, "use_mesh", None) or jax.set_mesh
    seen: list[str] = []

    def scoped(f) -> None:
        view = js.shardings(f)(x, ws)
        _ = view.line_summary
        explained = sum(1 for c in view.collectives if c.reason and c.reason.op)
        seen.append(
            f"{len(view.ops):,} sharded ops, {len(view.collectives)} collectives "
            f"({explained} explained by their operands' shardings)"
        )

    def plain(f) -> None:
        jax.jit(f).lower(x, ws).compile()

    with use_mesh(mesh):
        result = harness.compare(
            f"shardings, {LAYERS} layers",
            scoped,
            plain,
            make=make_f,
            rounds=cfg.n(9),
            warmup=cfg.warm(1),
            budget=harness.Budget(1.3),
        )
    result.note = f"{seen[-1]}, 8 host devices"
    yield result


if __name__ == "__main__":
    harness.main(bench, __doc__)
