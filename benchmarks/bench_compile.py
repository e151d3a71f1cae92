"""Compile profile: ``js.compile_profile(f)(x)`` against a plain cold compile,
``jax.jit(f).lower(x).compile()``.

jaxscope's side does the same cold compile plus everything the profile holds: the
sampled trace, equations by line, the StableHLO and optimized-HLO op tables by line,
the diagnoses. Every round uses fresh functions, so neither side hits JAX's trace or
compile caches. Programs: one long function of distinct lines, many small functions,
a Flax NNX train step, at 1,000, 10,000 and 50,000 equations. Budget: median ratio
<= 1.5.

    python benchmarks/bench_compile.py [--smoke] [--rounds N] [--json PATH]
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
BUDGET = harness.Budget(1.5)


def _programs(n_eqns: int, x: object) -> dict[str, object]:
    return {
        "long function": lambda: (programs.long_function(n_eqns), (x,)),
        "many functions": lambda: (programs.many_functions(n_eqns), (x,)),
        "flax train step": lambda: programs.flax_train_step(n_eqns),
    }


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    x = jnp.ones((16, 16), jnp.float32)
    for size in cfg.sizes(SIZES):
        for kind, make in _programs(size, x).items():
            eqns: list[int] = []

            def scoped(call, eqns=eqns):
                fn, args = call
                eqns.append(js.compile_profile(fn)(*args).totals.eqns)

            def plain(call):
                fn, args = call
                jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
                jitted.lower(*args).compile()

            result = harness.compare(
                f"compile_profile {kind}, {size:,} eqns",
                scoped,
                plain,
                make=make,
                rounds=cfg.n(3 if size > 10_000 else 5),
                warmup=cfg.warm(1),
                budget=BUDGET,
            )
            result.note = f"{eqns[-1]:,} equations counted"
            yield result


if __name__ == "__main__":
    harness.main(bench, __doc__)
