"""Stepping: ``js.step(f)(x).run()`` against ``f(x)`` under ``jax.disable_jit()``.

The user's call, whole: building the stepper (tracing and source mapping) and running
it to the end, against JAX executing the same function eagerly. Both results are
waited for. Every round uses fresh functions. Programs: one long function of distinct
lines, many small functions, and an Equinox MLP train step with optax Adam, at 2,000,
20,000 and 100,000 equations (the train step up to 20,000). Budget: median ratio <= 2.0.
Also reported: stepping a program one ``step()`` at a time (no budget).

    python benchmarks/bench_stepper.py [--smoke] [--rounds N] [--json PATH]
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

SIZES = (2_000, 20_000, 100_000)
ROUNDS = {2_000: 7, 20_000: 5, 100_000: 3}
WARMUP = {2_000: 1, 20_000: 0, 100_000: 0}  # the rounds before warm the process
BUDGET = harness.Budget(2.0)


def scoped(call) -> None:
    fn, args = call
    jax.block_until_ready(js.step(fn)(*args).run().result)


def eager(call) -> None:
    fn, args = call
    with jax.disable_jit():
        jax.block_until_ready(fn(*args))


def step_by_step(call) -> None:
    fn, args = call
    stepper = js.step(fn)(*args)
    while not stepper.done:
        stepper.step()
    jax.block_until_ready(stepper.result)


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    x = jnp.linspace(0.0, 1.0, 16)
    for n in cfg.sizes(SIZES):
        builders = programs.user_programs(n, x)
        if n > 20_000:
            del builders[
                "equinox train step"
            ]  # eager autodiff of 2,000 layers: minutes
        for kind, make in builders.items():
            yield harness.compare(
                f"stepper run {kind}, {n:,} eqns",
                scoped,
                eager,
                make=make,
                rounds=cfg.n(ROUNDS[n]),
                warmup=cfg.warm(WARMUP[n]),
                budget=BUDGET,
            )
    n = 1_000
    yield harness.compare(
        f"stepper step() x {n:,}, long function",
        step_by_step,
        eager,
        make=programs.user_programs(n, x)["long function"],
        rounds=cfg.n(5),
        warmup=cfg.warm(1),
        note="one step() per equation",
    )


if __name__ == "__main__":
    harness.main(bench, __doc__)
