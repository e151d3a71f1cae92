"""Purity watcher cost: a jitted call's cache hit, and tracing, with the watcher on vs off.

Budgets: cache-hit ratio <= 1.02, trace-time ratio <= 1.3. Run:
    python benchmarks/bench_purity.py
"""

from __future__ import annotations

import statistics
import time
import timeit

import jax
import jax.numpy as jnp

import jaxscope as js

SOURCE = """
import jax.numpy as jnp
scale = 2.0
table = {"bias": 0.5}
def model(x):
    for _ in range(60):
        x = jnp.tanh(x * scale + table["bias"])
    return x.sum()
"""


def fresh_model():
    """A new function with its own code object, as a new notebook cell would make."""
    namespace: dict = {}
    exec(compile(SOURCE, f"<bench-{time.perf_counter_ns()}>", "exec"), namespace)
    return namespace["model"]


def hit_time(fn, x, number=20_000, repeats=7) -> float:
    return min(timeit.repeat(lambda: fn(x), number=number, repeat=repeats)) / number


def trace_time(watch: bool, n: int = 15) -> float:
    times = []
    for _ in range(n):
        fn = jax.jit(fresh_model())
        start = time.perf_counter()
        if watch:
            with js.watch_purity():
                fn.trace(jnp.ones(8))
        else:
            fn.trace(jnp.ones(8))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    x = jnp.ones(8)
    fn = jax.jit(lambda v: v * 2.0 + 1.0)
    jax.block_until_ready(fn(x))
    off, on = [], []
    log = js.watch_purity()
    for _ in range(3):  # interleave so drift hits both sides alike
        off.append(hit_time(fn, x))
        log.start()
        on.append(hit_time(fn, x))
        log.stop()
    hit_off, hit_on = min(off), min(on)
    print(
        f"cache hit  off {hit_off * 1e6:7.2f} us   on {hit_on * 1e6:7.2f} us   "
        f"ratio {hit_on / hit_off:.3f}  (budget <= 1.02)"
    )
    trace_time(False, 3)  # warm-up
    t_off = trace_time(False)
    t_on = trace_time(True)
    print(
        f"trace      off {t_off * 1e3:7.2f} ms   on {t_on * 1e3:7.2f} ms   "
        f"ratio {t_on / t_off:.3f}  (budget <= 1.3)"
    )


if __name__ == "__main__":
    main()
