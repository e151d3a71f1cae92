"""HLO: ``js.hlo(f, stage="optimized")(x)`` against ``jax.jit(f).lower(x).compile().as_text()``.

The user's call, whole: jaxscope's side also reads ``.ops`` (every optimized op with its
source lines and fusion) and ``.by_line``, so laziness does not flatter it. Every round
uses fresh functions, so neither side hits JAX's trace or compile caches. Programs: one
long function of distinct lines, many small functions and an Equinox MLP train step,
at 1,000 equations. Budget: median ratio <= 1.2.

    python benchmarks/bench_hlo.py [--smoke] [--rounds N] [--json PATH]
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

SIZE = 1_000
BUDGET = harness.Budget(1.2)


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    x = jnp.ones((16, 16), jnp.float32)
    for kind, make in programs.user_programs(SIZE, x).items():
        n_ops: list[int] = []

        def scoped(call, n_ops=n_ops):
            fn, args = call
            view = js.hlo(fn, stage="optimized")(*args)
            n_ops.append(len(view.ops))
            _ = view.by_line

        def plain(call):
            fn, args = call
            jax.jit(fn).lower(*args).compile().as_text()

        result = harness.compare(
            f"hlo optimized {kind}, {SIZE:,} eqns",
            scoped,
            plain,
            make=make,
            rounds=cfg.n(7),
            warmup=cfg.warm(1),
            budget=BUDGET,
        )
        result.note = f"{n_ops[-1]:,} optimized HLO ops"
        yield result


if __name__ == "__main__":
    harness.main(bench, __doc__)
