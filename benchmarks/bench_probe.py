"""Values of the compiled program: ``js.probe`` and ``js.find_nan(mode="compiled")``
against a plain compile and run of the same function.

The baseline is what a user pays without jaxscope: ``jax.jit(f)`` lowered,
compiled and run once (a fresh function each round, so nothing is cached). The
program is an Equinox MLP train step with optax Adam (``programs.train_step``).

- ``js.probe`` of 10 values (the first ten ``dot_general`` results), at 1,000
  equations. Budget: median ratio <= 1.3.
- ``js.find_nan(mode="compiled")`` at 1,000, 10,000 and 100,000 equations, on the
  finite step and on the step with a NaN made by its last equation (two
  compiles: flagged, and up to the culprit). Budget: median ratio <= 2.0
  on the finite step; the NaN case and the interpreted mode (``js.find_nan(f)``,
  which steps the program; its first round pays JAX's cold eager-op compiles)
  are reported beside it.

    python benchmarks/bench_probe.py [--smoke] [--rounds N] [--json PATH]
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

SIZES = (1_000, 10_000, 100_000)
ROUNDS = {1_000: 5, 10_000: 3, 100_000: 1}
PROBE_BUDGET = harness.Budget(1.3)
NAN_BUDGET = harness.Budget(2.0)


def with_nan_at_end(step):
    def nan_step(params, opt_state, x, y):
        params, opt_state, loss = step(params, opt_state, x, y)
        return params, opt_state, jnp.sqrt(loss - 10.0)

    return nan_step


def plain(call) -> None:
    fn, args = call
    jax.block_until_ready(jax.jit(fn).lower(*args).compile()(*args))


def first_dots(count: int):
    seen: list[object] = []

    def pick(eqn) -> bool:
        if eqn.primitive != "dot_general" or len(seen) >= count:
            return False
        seen.append(eqn)
        return True

    return pick


def probe10(call) -> None:
    fn, args = call
    view = js.probe(fn, at=first_dots(10))(*args)
    assert len(view) == 10
    jax.block_until_ready(view.result)


def compiled_hunt(call) -> None:
    fn, args = call
    js.find_nan(fn, mode="compiled")(*args)


def interpreted_hunt(call) -> None:
    fn, args = call
    js.find_nan(fn)(*args)


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    n = 1_000
    yield harness.compare(
        f"js.probe of 10 values, {n:,} eqns",
        probe10,
        plain,
        make=lambda: programs.train_step(n),
        rounds=cfg.n(5),
        warmup=cfg.warm(1),
        budget=PROBE_BUDGET,
    )
    for n in cfg.sizes(SIZES):
        rounds, warm = cfg.n(ROUNDS[n]), cfg.warm(1 if n <= 1_000 else 0)
        clean = lambda n=n: programs.train_step(n)  # noqa: E731

        def nan(n: int = n):
            step, args = programs.train_step(n)
            return with_nan_at_end(step), args

        yield harness.compare(
            f"find_nan compiled, finite step, {n:,} eqns",
            compiled_hunt,
            plain,
            make=clean,
            rounds=rounds,
            warmup=warm,
            budget=NAN_BUDGET,
        )
        yield harness.compare(
            f"find_nan compiled, NaN at the end, {n:,} eqns",
            compiled_hunt,
            plain,
            make=nan,
            rounds=rounds,
            warmup=warm,
            note="two compiles: flagged, then up to the culprit",
        )
        if n <= 10_000:
            yield harness.compare(
                f"find_nan interpreted, NaN at the end, {n:,} eqns",
                interpreted_hunt,
                plain,
                make=nan,
                rounds=rounds,
                warmup=warm,
                note="the stepper's hunt, for comparison",
            )


if __name__ == "__main__":
    harness.main(bench, __doc__)
