"""Recompile watcher cost, as ratios against plain JAX in the same run.

1. Cache-hit call of a jitted function, watcher active vs inactive (budget <= 1.02):
   medians of interleaved repeats, many calls each.
2. One cache miss (trace + lower + compile) with the watcher vs without, and the
   watcher's own bookkeeping per miss vs the compile it explains.

Run: python benchmarks/bench_recompiles.py
"""

from __future__ import annotations

import statistics
import time

import jax
import jax.numpy as jnp

import jaxscope as js


def hit_time(f, x, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        f(x)
    return (time.perf_counter() - t0) / calls


def bench_hits(repeats: int = 201, calls: int = 3000) -> None:
    f = jax.jit(lambda x: x + 1)
    x = jnp.ones(3)
    f(x).block_until_ready()
    off, on = [], []
    log = js.watch_recompiles()

    def watched() -> float:
        log.start()
        try:
            return hit_time(f, x, calls)
        finally:
            log.stop()

    for i in range(repeats):  # interleaved, alternating which goes first
        if i % 2:
            off.append(hit_time(f, x, calls))
            on.append(watched())
        else:
            on.append(watched())
            off.append(hit_time(f, x, calls))
    m_off, m_on = statistics.median(off), statistics.median(on)
    ratios = sorted(b / a for a, b in zip(off, on))
    print(
        f"cache hit, watcher inactive: {m_off * 1e6:.3f} us/call "
        f"(median of {repeats} interleaved runs x {calls} calls)"
    )
    print(f"cache hit, watcher active:   {m_on * 1e6:.3f} us/call")
    print(
        f"hit ratio active/inactive:   {m_on / m_off:.4f} (median of paired ratios "
        f"{ratios[len(ratios) // 2]:.4f}; budget <= 1.02)"
    )
    assert not log.events, "a cache hit was recorded as an event"


def bench_misses(n: int = 16) -> None:
    from jaxscope._recompiles import watcher as _recompiles

    body = lambda x: jnp.tanh(x @ x.T).sum() * 2 + 1  # noqa: E731
    arrays = [jnp.ones((s, 4)) for s in range(8, 8 + 2 * n)]  # no eager compiles below
    f_plain, f_watched = jax.jit(body), jax.jit(body)
    plain, watched = [], []
    # time spent inside the watcher's own miss hooks
    hooks = _recompiles._STATE.hooks
    spent = [0.0]
    orig_start, orig_end = hooks.on_start, hooks.on_end

    def timed(fn):
        def wrapper(*args):
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                spent[0] += time.perf_counter() - t0

        return wrapper

    hooks.on_start, hooks.on_end = timed(orig_start), timed(orig_end)
    log = js.watch_recompiles()
    try:
        for i in range(0, 2 * n, 2):
            a, b = arrays[i], arrays[i + 1]
            if i % 4:
                a, b = b, a
            t0 = time.perf_counter()
            f_plain(a).block_until_ready()
            plain.append(time.perf_counter() - t0)
            log.start()
            try:
                t0 = time.perf_counter()
                f_watched(b).block_until_ready()
                watched.append(time.perf_counter() - t0)
            finally:
                log.stop()
    finally:
        hooks.on_start, hooks.on_end = orig_start, orig_end
    m_plain, m_watched = statistics.median(plain), statistics.median(watched)
    compile_s = statistics.median(e.seconds for e in log.events)
    per_miss = spent[0] / len(log.events)
    print(
        f"miss (trace+lower+compile+run), plain:  {m_plain * 1e3:.2f} ms (median of {n})"
    )
    print(f"miss, watched:                          {m_watched * 1e3:.2f} ms")
    print(f"miss ratio watched/plain:               {m_watched / m_plain:.3f}")
    print(
        f"compile JAX spent per miss (median event.seconds): {compile_s * 1e3:.2f} ms"
    )
    print(
        f"recording one miss (time in the watcher's hooks): {per_miss * 1e3:.3f} ms "
        f"= {per_miss / compile_s:.4f} of the compile it explains"
    )


if __name__ == "__main__":
    print("jax", jax.__version__, "devices", jax.devices()[0].platform)
    bench_hits()
    bench_misses()
