"""js.hlo(f, stage="optimized")(x) against jax.jit(f).lower(x).compile().as_text().

Same ~1,000-op program, same process. Each run uses a freshly defined function so
no JAX cache is shared between runs; the two sides alternate. The budget is checked
on the best (minimum) wall time of each side, the estimator least disturbed by other
processes on a shared machine (as ``timeit`` does); medians and process CPU time
(all threads, which XLA's compiler uses) are printed too. The jaxscope side includes reading ``.ops`` (the op table with source
lines and fusion membership), so laziness does not flatter it. Budget: <= 1.2.

Run: .venv/bin/python benchmarks/bench_hlo.py [runs]
"""

from __future__ import annotations

import statistics
import sys
import time

import jax
import jax.numpy as jnp

import jaxscope as js


def make_program(n_layers: int = 250):
    """A fresh function of about 4 ops per layer (sin, mul, cos, add)."""

    def program(x):
        for _ in range(n_layers):
            x = jnp.sin(x) * 1.01 + jnp.cos(x)
        return x.sum()

    return program


def plain_jax(x) -> tuple[float, float]:
    f = make_program()
    start, cpu = time.perf_counter(), time.process_time()
    jax.jit(f).lower(x).compile().as_text()
    return time.perf_counter() - start, time.process_time() - cpu


def with_jaxscope(x, stage: str = "optimized") -> tuple[float, float, int]:
    f = make_program()
    start, cpu = time.perf_counter(), time.process_time()
    view = js.hlo(f, stage=stage)(x)
    n_ops = len(view.ops)
    _ = view.by_line
    return time.perf_counter() - start, time.process_time() - cpu, n_ops


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    x = jnp.ones((16, 16), jnp.float32)
    n_eqns = len(jax.make_jaxpr(make_program())(x).eqns)
    with_jaxscope(x)  # warm up: imports and JAX's own first-use costs
    plain_jax(x)
    base: list[tuple[float, float]] = []
    ours: list[tuple[float, float]] = []
    n_ops = 0
    for i in range(runs):
        if i % 2:
            base.append(plain_jax(x))
            *t, n_ops = with_jaxscope(x)
            ours.append((t[0], t[1]))
        else:
            *t, n_ops = with_jaxscope(x)
            ours.append((t[0], t[1]))
            base.append(plain_jax(x))

    def stats(samples: list[tuple[float, float]]) -> tuple[float, float, float]:
        walls = [w for w, _ in samples]
        cpus = [c for _, c in samples]
        return min(walls), statistics.median(walls), statistics.median(cpus)

    b_min, b_med, b_cpu = stats(base)
    o_min, o_med, o_cpu = stats(ours)
    print(
        f"program: {n_eqns} jaxpr equations, {n_ops} optimized HLO ops; {runs} runs each"
    )
    print(
        "                                          best wall   median wall  median CPU"
    )
    print(
        f"jax.jit(f).lower(x).compile().as_text(): {b_min * 1e3:8.1f} ms  "
        f"{b_med * 1e3:8.1f} ms  {b_cpu * 1e3:8.1f} ms"
    )
    print(
        f"js.hlo(f, stage='optimized')(x) + .ops:   {o_min * 1e3:8.1f} ms  "
        f"{o_med * 1e3:8.1f} ms  {o_cpu * 1e3:8.1f} ms"
    )
    print(
        f"ratio: {o_min / b_min:.3f} best wall (budget <= 1.2); "
        f"{o_med / b_med:.3f} median wall; {o_cpu / b_cpu:.3f} median CPU"
    )


if __name__ == "__main__":
    main()
