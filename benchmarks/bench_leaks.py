"""Leak checking: ``with js.check_leaks():`` against ``with jax.checking_leaks():``.

The workload (a small MLP: 20 jitted loss + grad steps, a vmapped forward, a scan and
a while loop; nothing leaks) runs inside each checker; the block's exit, where the
checking happens, is inside the clock.

1. cold: fresh functions every round, so everything traces and compiles (what a
   leak-checked test or script pays). Budget: median ratio <= 1.2. Also against no
   checking at all (no budget).
2. eager: 30 eager jnp ops (no user jit), compiled before the block (no budget).
3. warm: functions already compiled before the block: both checkers are served
   from JAX's caches (no trace runs, so nothing can leak). Budget: median ratio
   <= 1.5 against ``jax.checking_leaks``, for the MLP workload and for 20 steps of
   a Flax NNX train step (``nnx.jit``, ``nnx.Optimizer``) compiled before the block.
4. memory: 100 blocks around a warm jitted function, one after another; the
   process's resident memory may grow by at most 30 MB (Linux: ``/proc/self/statm``).

    python benchmarks/bench_leaks.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import contextlib
import itertools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import harness
import jax
import jax.numpy as jnp
import programs
from jax import lax

import jaxscope as js


def make_workload() -> Callable[[], None]:
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
            for (w, b), (gw, gb) in zip(params, grads, strict=True)
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
    params = [
        (jax.random.normal(jax.random.fold_in(key, i), (m, n)) * 0.1, jnp.zeros(n))
        for i, (m, n) in enumerate(itertools.pairwise([16, 32, 32, 8]))
    ]
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


def warm_workload() -> Callable[[], None]:
    run = make_workload()
    run()
    return run


def warm_nnx_steps() -> Callable[[], None]:
    """20 steps of a Flax NNX train step compiled before the block."""
    step, args = programs.flax_train_step(200)
    jax.block_until_ready(step(*args))

    def run() -> None:
        out = None
        for _ in range(20):
            out = step(*args)
        jax.block_until_ready(out)

    return run


def rss_bytes() -> int:
    """The process's resident memory now (Linux only)."""
    with open("/proc/self/statm", encoding="ascii") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def rss_growth_over_blocks(blocks: int = 100) -> float:
    """Bytes of resident memory gained over ``blocks`` blocks around a warm function."""

    @jax.jit
    def f(x):
        return jnp.sin(x) * 2

    x = jnp.ones(3)
    with js.check_leaks():  # the first block's one-time costs out of the measure
        f(x).block_until_ready()
    before = rss_bytes()
    for _ in range(blocks):
        with js.check_leaks():
            f(x).block_until_ready()
    return float(rss_bytes() - before)


def eager_ops() -> None:
    x = jnp.linspace(0.0, 1.0, 256)
    for _ in range(5):
        x = jnp.tanh(jnp.sin(x) * 2 + jnp.cos(x)) / (1 + jnp.exp(-x))
        x = jnp.sqrt(jnp.abs(x) + 1.0) - jnp.mean(x)
    x.block_until_ready()


def inside(checker: Callable[[], Any]) -> Callable[[Callable[[], None]], None]:
    """A side running its argument (a workload) inside ``checker()``'s block."""

    def side(run: Callable[[], None]) -> None:
        with checker():
            run()

    return side


JS = inside(js.check_leaks)
JAX = inside(jax.checking_leaks)
NONE = inside(contextlib.nullcontext)


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    make_workload()()  # JAX's own one-time set-up out of the measurements
    eager_ops()
    warmup = cfg.warm(1)
    yield harness.compare(
        "leaks cold, js.check_leaks / jax.checking_leaks",
        JS,
        JAX,
        make=make_workload,
        rounds=cfg.n(9),
        budget=harness.Budget(1.2),
        warmup=warmup,
    )
    yield harness.compare(
        "leaks cold, js.check_leaks / no checking",
        JS,
        NONE,
        make=make_workload,
        rounds=cfg.n(5),
        warmup=warmup,
    )
    yield harness.compare(
        "leaks eager ops, js.check_leaks / jax.checking_leaks",
        JS,
        JAX,
        make=lambda: eager_ops,
        rounds=cfg.n(5),
        warmup=warmup,
    )
    yield harness.compare(
        "leaks warm, js.check_leaks / jax.checking_leaks",
        JS,
        JAX,
        make=warm_workload,
        rounds=cfg.n(5),
        budget=harness.Budget(1.5),
        note="JAX's caches serve both: no trace runs inside the block",
        warmup=warmup,
    )
    yield harness.compare(
        "leaks warm Flax NNX train step, js.check_leaks / jax.checking_leaks",
        JS,
        JAX,
        make=warm_nnx_steps,
        rounds=cfg.n(5),
        budget=harness.Budget(1.5),
        note="20 steps of an nnx.jit step compiled before the block",
        warmup=warmup,
    )
    if sys.platform == "linux":
        yield harness.value(
            "leaks 100 blocks around a warm jitted function: RSS growth",
            [rss_growth_over_blocks() for _ in range(cfg.n(3))],
            budget=harness.Budget(30e6, on="value"),
            unit="B",
        )


if __name__ == "__main__":
    harness.main(bench, __doc__)
