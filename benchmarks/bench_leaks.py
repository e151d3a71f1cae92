"""Leak checking cost, as ratios against plain JAX in the same run.

The same workload (a small MLP: jitted loss + grad steps, a vmapped forward, a scan
and a while loop; nothing leaks) runs three ways: with no checking, under
``jax.checking_leaks()`` and under ``js.check_leaks()``. Each repeat builds fresh
functions, so every variant traces and compiles what it runs: JAX's checker only
looks at traces that actually happen, and jaxscope retraces on purpose.

1. cold: fresh functions every repeat (what a leak-checked test or script pays).
   Budget: js.check_leaks no slower than jax.checking_leaks by more than 20%.
2. eager: 30 eager jnp ops (no user jit) already compiled before the block: with
   retrace=True each distinct op is recompiled once per block.
3. warm: the same functions called again after a first run. jax.checking_leaks then
   checks nothing (its caches hit: a leak would stay hidden); js.check_leaks
   retraces and recompiles (retrace=True, the default) or shares a cache across its
   own blocks (retrace=False).

Run: python benchmarks/bench_leaks.py
"""

from __future__ import annotations

import contextlib
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

import jaxscope as js


def make_workload() -> Callable[[], Any]:
    """Fresh functions (new trace-cache keys) and a runner for them."""

    def mlp(params, x):
        for w, b in params:
            x = jnp.tanh(x @ w + b)
        return x

    def loss(params, x, y):
        return jnp.mean((mlp(params, x) - y) ** 2)

    @jax.jit
    def step(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return [
            (w - 0.1 * gw, b - 0.1 * gb)
            for (w, b), (gw, gb) in zip(params, grads, strict=False)
        ]

    batched = jax.jit(jax.vmap(lambda p, x: mlp(p, x[None])[0], in_axes=(None, 0)))

    def body(c, x):
        return c * 0.9 + jnp.sum(x), c

    scanned = jax.jit(lambda xs: lax.scan(body, 0.0, xs))
    looped = jax.jit(
        lambda n: lax.while_loop(
            lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 1.01), (0, 1.0)
        )
    )

    key = jax.random.PRNGKey(0)
    sizes = [16, 32, 32, 8]
    params = []
    for i, (m, n) in enumerate(itertools.pairwise(sizes)):
        params.append(
            (jax.random.normal(jax.random.fold_in(key, i), (m, n)) * 0.1, jnp.zeros(n))
        )
    x = jnp.ones((64, 16))
    y = jnp.zeros((64, 8))

    def run() -> None:
        p = params
        for _ in range(20):
            p = step(p, x, y)
        batched(p, x).block_until_ready()
        scanned(x)[0].block_until_ready()
        looped(10)[1].block_until_ready()

    return run


def eager_ops() -> None:
    x = jnp.linspace(0.0, 1.0, 256)
    for _ in range(5):
        x = jnp.tanh(jnp.sin(x) * 2 + jnp.cos(x)) / (1 + jnp.exp(-x))
        x = jnp.sqrt(jnp.abs(x) + 1.0) - jnp.mean(x)
    x.block_until_ready()


VARIANTS: dict[str, Callable[[], Any]] = {
    "none": contextlib.nullcontext,
    "jax.checking_leaks": jax.checking_leaks,
    "js.check_leaks": js.check_leaks,
    "js.check_leaks(retrace=False)": lambda: js.check_leaks(retrace=False),
}


def timed(ctx: Callable[[], Any], run: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    with ctx():
        run()
    return time.perf_counter() - t0


def bench(mode: str, repeats: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for i in range(repeats):
        order = (
            names[i % len(names) :] + names[: i % len(names)]
        )  # rotate who goes first
        for name in order:
            run = make_workload()
            if mode == "warm":
                run()
            times[name].append(timed(VARIANTS[name], run))
    return {name: statistics.median(ts) for name, ts in times.items()}


def report(mode: str, medians: dict[str, float]) -> None:
    base = medians["none"]
    jax_t = medians["jax.checking_leaks"]
    print(f"\n{mode}: median seconds per run (ratio vs none, vs jax.checking_leaks)")
    for name, t in medians.items():
        print(f"  {name:32s} {t:8.3f} s   x{t / base:5.2f}   x{t / jax_t:5.2f}")


def main() -> None:
    make_workload()()  # JAX's own one-time set-up out of the measurements
    eager_ops()
    cold = bench("cold", repeats=5)
    report("cold (fresh functions: everything traces and compiles)", cold)
    ratio = cold["js.check_leaks"] / cold["jax.checking_leaks"]
    verdict = "OK" if ratio <= 1.20 else "OVER BUDGET"
    print(
        f"  budget js.check_leaks / jax.checking_leaks <= 1.20: {ratio:.2f} {verdict}"
    )
    eager = {
        name: statistics.median(timed(ctx, eager_ops) for _ in range(5))
        for name, ctx in VARIANTS.items()
    }
    report("eager (jnp ops outside any jit, compiled before the block)", eager)
    warm = bench("warm", repeats=5)
    report("warm (functions compiled before the block)", warm)


if __name__ == "__main__":
    main()
