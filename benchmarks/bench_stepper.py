"""Stepping a 2,000-equation program to the end vs the same function under disable_jit.

Run: ``.venv/bin/python benchmarks/bench_stepper.py``. Prints times (best of N, warm:
each eager primitive is compiled once by JAX on first use) and ratios against plain
JAX in the same run. Budget: stepper run / disable_jit <= 2.0.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp

import jaxscope as js

N_OPS = 1000  # two equations each: sin, mul


def program(x):
    for _ in range(N_OPS):
        x = jnp.sin(x) * 1.0001
    return x


def best(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    x = jnp.linspace(0.0, 1.0, 16)
    n_eqns = len(js.jaxpr(program)(x).eqns)
    with jax.disable_jit():
        program(x).block_until_ready()
    js.step(program)(x).run()

    def eager():
        with jax.disable_jit():
            program(x).block_until_ready()

    steppers = []

    def make():
        steppers.append(js.step(program)(x))

    def run_only():
        steppers.pop().run().result.block_until_ready()

    def trace_and_run():
        js.step(program)(x).run().result.block_until_ready()

    t_eager = best(eager)
    t_make = []
    t_run = []
    for _ in range(5):
        t_make.append(best(make, 1))
        t_run.append(best(run_only, 1))
    t_make_best, t_run_best = min(t_make), min(t_run)
    t_total = best(trace_and_run, 5)
    s = js.step(program)(x)
    t0 = time.perf_counter()
    steps = 0
    while not s.done:
        s.step()
        steps += 1
    t_steps = time.perf_counter() - t0

    print(
        f"program: {n_eqns} equations, jax {jax.__version__}, {jax.devices()[0].platform}"
    )
    print(f"disable_jit call                 {t_eager * 1e3:8.1f} ms")
    print(f"js.step(...) construct (trace)   {t_make_best * 1e3:8.1f} ms")
    print(
        f"stepper.run() to the end        {t_run_best * 1e3:8.1f} ms   ratio {t_run_best / t_eager:.2f} (budget <= 2.0)"
    )
    print(
        f"construct + run                  {t_total * 1e3:8.1f} ms   ratio {t_total / t_eager:.2f}"
    )
    print(
        f"{steps} x step()                  {t_steps * 1e3:8.1f} ms   ratio {t_steps / t_eager:.2f}"
    )
    print(
        f"per equation: disable_jit {t_eager / n_eqns * 1e6:.1f} us, stepper run {t_run_best / n_eqns * 1e6:.1f} us, "
        f"overhead {(t_run_best - t_eager) / n_eqns * 1e6:+.1f} us"
    )


if __name__ == "__main__":
    main()
