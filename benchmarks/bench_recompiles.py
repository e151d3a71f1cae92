"""Recompile watcher: cache hits and cache misses with ``js.watch_recompiles`` on vs off.

1. Cache hit: 3,000 calls of a compiled function per round, the watcher active (started
   outside the clock) vs inactive. Budget: median ratio <= 1.02.
2. Cache miss: one call that traces, lowers and compiles (a new input shape every
   call, as a recompile does), watched vs not, with JAX's own compile time from the
   watcher's events for scale. No budget.

    python benchmarks/bench_recompiles.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import itertools
import statistics
from collections.abc import Iterator

import harness
import jax
import jax.numpy as jnp

import jaxscope as js

CALLS = 3_000


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    f = jax.jit(lambda x: x + 1)
    x = jnp.ones(3)
    jax.block_until_ready(f(x))
    log = js.watch_recompiles()

    def calls() -> None:
        for _ in range(CALLS):
            f(x)

    yield harness.compare(
        "recompiles cache hit, watcher on/off",
        calls,
        calls,
        jaxscope_context=lambda: log,
        rounds=cfg.n(101),
        warmup=cfg.warm(2),
        budget=harness.Budget(1.02),
        per=CALLS,
    )
    assert not log.events, "a cache hit was recorded as an event"

    def body(x):
        return jnp.tanh(x @ x.T).sum() * 2 + 1

    f_plain, f_watched = jax.jit(body), jax.jit(body)
    rows = itertools.count(8)
    result = harness.compare(
        "recompiles cache miss, watcher on/off",
        lambda a: jax.block_until_ready(f_watched(a)),
        lambda a: jax.block_until_ready(f_plain(a)),
        make=lambda: jnp.ones((next(rows), 4)),  # a new shape: a miss on either side
        jaxscope_context=lambda: log,
        rounds=cfg.n(16),
        warmup=cfg.warm(1),
    )
    assert log.events, "no miss was recorded"
    compile_s = statistics.median(e.seconds for e in log.events)
    result.note = f"JAX's trace+lower+compile per miss {compile_s * 1e3:.1f} ms"
    yield result


if __name__ == "__main__":
    harness.main(bench, __doc__)
