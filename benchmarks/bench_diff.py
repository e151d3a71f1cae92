"""Program diffs: ``js.diff(view_a, view_b)`` of two jaxprs against tracing them.

jaxscope's side is the diff of two ``JaxprView``s already built (reading both
programs' facts, pairing lines, aligning equations); the baseline is JAX tracing the
same two programs (``jax.make_jaxpr`` of fresh functions). Three pairs per size: the
same program twice (a long function of distinct lines; and a Python loop, where
thousands of equations share one line), and the long function traced at f32 then at
bf16 (every equation changed: the alignment's worst case). Sizes 1,000 / 10,000 /
50,000 equations (``--smoke``: 1,000 only). Budgets on the diff's own time: <= 1 s at
10,000 equations and <= 5 s at 50,000 (0.2 s at 1,000), on wall time and, in a
row of its own, on the process's CPU time (what a quiet machine's wall time would
be); the ratio to tracing is reported beside it, and growing sizes show it stays
linear (n log n at worst).

    python benchmarks/bench_diff.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import gc
import time
from collections.abc import Iterator
from typing import Any

import harness
import jax
import jax.numpy as jnp
import programs

import jaxscope as js

SIZES = (1_000, 10_000, 50_000)
ROUNDS = {1_000: 7, 10_000: 3, 50_000: 3}
WARMUP = {1_000: 1, 10_000: 0, 50_000: 0}
BUDGETS = {
    1_000: harness.Budget(0.2, on="value"),
    10_000: harness.Budget(1.0, on="value"),
    50_000: harness.Budget(5.0, on="value"),
}


def _pairs(n: int) -> dict[str, Any]:
    x32 = jnp.ones(8)
    x16 = jnp.ones(8, jnp.bfloat16)
    return {
        "long function, same": (lambda: programs.long_function(n), x32, x32),
        "loop, same": (lambda: programs.loop(n), x32, x32),
        "long function, f32 vs bf16": (lambda: programs.long_function(n), x32, x16),
    }


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    for n in cfg.sizes(SIZES):
        for kind, (build, xa, xb) in _pairs(n).items():
            fn = build()
            view_a = js.jaxpr(fn)(xa)
            view_b = js.jaxpr(build())(xb)
            changed: list[int] = []

            def diff(_: Any, a: Any = view_a, b: Any = view_b, out=changed) -> None:
                out.append(len(js.diff(a, b).changed_lines))

            def trace(fns: Any, xa: Any = xa, xb: Any = xb) -> None:
                jax.make_jaxpr(fns[0])(xa)
                jax.make_jaxpr(fns[1])(xb)

            result = harness.compare(
                f"js.diff {kind}, {n:,} eqns",
                diff,
                trace,
                make=lambda build=build: (build(), build()),
                rounds=cfg.n(ROUNDS[n]),
                warmup=cfg.warm(WARMUP[n]),
                budget=BUDGETS[n],
            )
            result.note = (
                f"{len(view_a.eqns):,} equations each, {changed[-1]:,} changed lines; "
                "ratio: diff / tracing both"
            )
            yield result
            cpu: list[float] = []
            for _ in range(cfg.n(ROUNDS[n])):
                gc.collect()
                start = time.process_time()
                js.diff(view_a, view_b)
                cpu.append(time.process_time() - start)
            yield harness.value(
                f"js.diff {kind}, {n:,} eqns: CPU time",
                cpu,
                budget=BUDGETS[n],
                note="the process's CPU seconds: the wall time of a quiet machine",
            )


if __name__ == "__main__":
    harness.main(bench, __doc__)
