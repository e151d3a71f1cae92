"""Purity watcher: a jitted call's cache hit, and tracing, with ``js.watch_purity`` on vs off.

1. Cache hit: 5,000 calls of a compiled function per round, the watcher active
   (started outside the clock) vs inactive. Budget: median ratio <= 1.02.
2. Tracing: ``jax.jit(f).trace(x)`` of a fresh function (a new code object from a new
   file each round, as a re-run notebook cell makes; it captures globals the watcher
   snapshots), inside ``with js.watch_purity():`` vs without. Budget: <= 1.3.

    python benchmarks/bench_purity.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from collections.abc import Iterator

import harness
import jax
import jax.numpy as jnp
import programs

import jaxscope as js

CALLS = 5_000

SOURCE = """
import jax.numpy as jnp

scale = 2.0
table = {"bias": 0.5}


def model(x):
    for _ in range(60):
        x = jnp.tanh(x * scale + table["bias"])
    return x.sum()
"""


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    x = jnp.ones(8)
    fn = jax.jit(lambda v: v * 2.0 + 1.0)
    jax.block_until_ready(fn(x))
    log = js.watch_purity()

    def calls() -> None:
        for _ in range(CALLS):
            fn(x)

    yield harness.compare(
        "purity cache hit, watcher on/off",
        calls,
        calls,
        jaxscope_context=lambda: log,
        rounds=cfg.n(41),
        warmup=cfg.warm(2),
        budget=harness.Budget(1.02),
        per=CALLS,
    )
    assert not log.findings, log.findings

    def watched(model) -> None:
        with js.watch_purity():
            jax.jit(model).trace(x)

    def plain(model) -> None:
        jax.jit(model).trace(x)

    yield harness.compare(
        "purity tracing, watcher on/off",
        watched,
        plain,
        make=lambda: programs.load(SOURCE, "model"),
        rounds=cfg.n(21),
        warmup=cfg.warm(2),
        budget=harness.Budget(1.3),
    )


if __name__ == "__main__":
    harness.main(bench, __doc__)
