"""Staging: ``js.jaxpr(f)(x).eqns`` against ``jax.make_jaxpr(f)(x)``.

The user's call, whole: tracing plus mapping every equation to its source line
(``.eqns`` forces it), against JAX tracing alone. Every round builds a *fresh* function
for each side (JAX caches traces per function object, so a reused one would time a
cache lookup). Programs: one long function of distinct lines, many small functions,
and an Equinox MLP train step with optax Adam, at 1,000 / 10,000 / 50,000 equations.
Budget: median ratio <= 1.5 at every size.

    python benchmarks/bench_staging.py [--smoke] [--rounds N] [--json PATH]
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

SIZES = (1_000, 10_000, 50_000)
ROUNDS = {1_000: 11, 10_000: 7, 50_000: 5}
BUDGET = harness.Budget(1.5)


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    x = jnp.ones(8)
    for n in cfg.sizes(SIZES):
        for kind, make in programs.user_programs(n, x).items():
            mapped: list[int] = []

            def scoped(call, mapped=mapped):
                fn, args = call
                mapped.append(len(js.jaxpr(fn)(*args).eqns))

            def plain(call):
                fn, args = call
                jax.make_jaxpr(fn)(*args)

            result = harness.compare(
                f"staging {kind}, {n:,} eqns",
                scoped,
                plain,
                make=make,
                rounds=cfg.n(ROUNDS[n]),
                warmup=cfg.warm(1),
                budget=BUDGET,
            )
            result.note = f"{mapped[-1]:,} equations mapped"
            yield result


if __name__ == "__main__":
    harness.main(bench, __doc__)
