"""js.shardings on a program with ~1,000 sharded ops vs ``jit(f).lower(...).compile()``.

Prints the median of each and their ratio (budget: <= 1.3), plus the ratio of minima,
which is steadier on a shared machine. Every repetition uses a
freshly defined function, so neither side hits JAX's trace or compile caches.

    .venv/bin/python benchmarks/bench_sharding.py
"""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import re
import statistics
import time

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js

LAYERS = 200
REPS = 7


def make_f():
    def f(x, ws):
        for i in range(LAYERS):
            h = jnp.tanh(x @ ws[i % len(ws)])
            h = jax.lax.with_sharding_constraint(h, P("data", None))
            x = x + 0.5 * h
        return jnp.sum(x)

    return f


def main() -> None:
    auto = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(auto, auto))
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
    ws = [
        jax.device_put(jnp.ones((32, 32)) * i, NamedSharding(mesh, P("model", None)))
        for i in range(4)
    ]
    with (
        jax.sharding.use_mesh(mesh)
        if hasattr(jax.sharding, "use_mesh")
        else jax.set_mesh(mesh)
    ):
        text = jax.jit(make_f()).lower(x, ws).as_text(dialect="hlo")
        n_ops = len(re.findall(r"^\s+(?:ROOT )?%?\S+ = ", text, re.M))
        plain, scoped = [], []
        view = None
        for _ in range(REPS):
            t0 = time.perf_counter()
            jax.jit(make_f()).lower(x, ws).compile()
            plain.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            view = js.shardings(make_f())(x, ws)
            scoped.append(time.perf_counter() - t0)
    assert view is not None
    p, s = statistics.median(plain), statistics.median(scoped)
    pmin, smin = min(plain), min(scoped)
    print(
        f"program: {n_ops} HLO ops before optimization, {len(view.ops)} sharded ops, "
        f"{len(view.collectives)} collectives"
    )
    print(f"jit(f).lower().compile(): {p * 1000:8.1f} ms (median of {REPS})")
    print(f"js.shardings(f)(...):      {s * 1000:8.1f} ms (median of {REPS})")
    print(
        f"ratio of medians: {s / p:.2f}, of minima: {smin / pmin:.2f}  (budget <= 1.3)"
    )


if __name__ == "__main__":
    main()
