"""Staging: ``js.jaxpr(f)(x).eqns`` and ``js.graph(f)(x).nodes`` against
``jax.make_jaxpr(f)(x)``.

The user's call, whole: tracing plus mapping every equation to its source line
(``.eqns`` forces it; the graph's nodes are built from the same model), against JAX
tracing alone. Every round builds a *fresh* function for each side (JAX caches traces
per function object, so a reused one would time a cache lookup). Programs: a Python
loop, one long function of distinct lines, many small functions, an Equinox MLP train
step and a Flax NNX MLP train step (optax Adam), at 1,000 / 10,000 / 50,000 equations
(``--smoke``: 1,000 only). Budget: median ratio <= 1.5 for every program and size.

Then the size of ``js.jaxpr``'s HTML display of the long function (the most distinct
source lines, so the largest source-lines panel) at each size. Budget: <= 1 MB.

    python benchmarks/bench_staging.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from collections.abc import Callable, Iterator
from typing import Any

import harness
import jax
import jax.numpy as jnp
import programs

import jaxscope as js

SIZES = (1_000, 10_000, 50_000)
ROUNDS = {1_000: 9, 10_000: 5, 50_000: 3}
WARMUP = {1_000: 1, 10_000: 0, 50_000: 0}  # imports and first compiles: at 1k
BUDGET = harness.Budget(1.5)
HTML_BUDGET = harness.Budget(1e6, on="value")


def _viewers() -> dict[str, Callable[[Any, tuple], int]]:
    return {
        "js.jaxpr": lambda fn, args: len(js.jaxpr(fn)(*args).eqns),
        "js.graph": lambda fn, args: len(js.graph(fn)(*args).nodes),
    }


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    x = jnp.ones(8)
    for n in cfg.sizes(SIZES):
        for kind, make in programs.staging_programs(n, x).items():
            for api, view in _viewers().items():
                counts: list[int] = []

                def scoped(call, view=view, counts=counts):
                    counts.append(view(*call))

                def plain(call):
                    fn, args = call
                    jax.make_jaxpr(fn)(*args)

                result = harness.compare(
                    f"{api} {kind}, {n:,} eqns",
                    scoped,
                    plain,
                    make=make,
                    rounds=cfg.n(ROUNDS[n]),
                    warmup=cfg.warm(WARMUP[n]),
                    budget=BUDGET,
                )
                what = "equations" if api == "js.jaxpr" else "graph nodes"
                result.note = f"{counts[-1]:,} {what}"
                yield result
        fn, args = programs.staging_programs(n, x)["long function"]()
        html = js.jaxpr(fn)(*args)._repr_mimebundle_()["text/html"]
        yield harness.value(
            f"js.jaxpr long function, {n:,} eqns: HTML size",
            [len(html.encode())],
            budget=HTML_BUDGET,
            unit="B",
        )


if __name__ == "__main__":
    harness.main(bench, __doc__)
