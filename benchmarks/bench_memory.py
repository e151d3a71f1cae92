"""Memory: the buffer model (``js.memory``) and ``js.residuals`` against compiling.

A train step over an MLP of ``L`` unrolled layers (``jax.value_and_grad`` of a
tanh stack, an SGD update), sized to about 1k, 10k and 50k jaxpr equations.
Each side gets a fresh function (no trace or compile cache):

- ``js.memory(f)(*args)`` (trace, lower, compile with XLA's buffer dump, the peak
  and every buffer's kind and line) against ``jax.jit(f).lower(*args).compile()``.
- ``js.residuals(f)(*args)`` (the jaxpr's residuals by line, and the compiled
  buffer model for what is live at the peak) against the same compile.

Budget: median ratio <= 1.5 for both.

    python benchmarks/bench_memory.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from collections.abc import Callable, Iterator
from typing import Any

import harness
import jax
import jax.numpy as jnp

from jaxscope._profile.memory import memory
from jaxscope._profile.residuals import residuals

BUDGET = harness.Budget(1.5)
# layers for about 1k, 10k and 50k equations (value_and_grad + update: ~12 a layer)
SIZES = (85, 830, 4150)


def deep_step(layers: int) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    def loss(ws, x):
        for w in ws:
            x = jnp.tanh(x @ w + 0.1)
        return jnp.mean(x**2)

    def step(ws, x):
        value, grads = jax.value_and_grad(loss)(ws, x)
        return [w - 0.01 * g for w, g in zip(ws, grads, strict=True)], value

    ws = [jnp.eye(16) * 0.5 for _ in range(layers)]
    return step, (ws, jnp.ones((8, 16)))


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    for layers in cfg.sizes(SIZES):
        fn, args = deep_step(layers)
        eqns = len(jax.make_jaxpr(fn)(*args).eqns)

        def compile_only(f: Callable[..., Any], args: tuple[Any, ...] = args) -> None:
            jax.jit(f).lower(*args).compile()

        def fresh(fn: Callable[..., Any] = fn) -> Callable[..., Any]:
            return lambda *a: fn(*a)

        yield harness.compare(
            f"js.memory / compile: {layers} layers, {eqns} eqns",
            lambda f, args=args: memory(f)(*args).kinds,
            compile_only,
            make=fresh,
            rounds=cfg.n(3),
            warmup=cfg.warm(1),
            budget=BUDGET,
        )
        yield harness.compare(
            f"js.residuals / compile: {layers} layers, {eqns} eqns",
            lambda f, args=args: residuals(f)(*args).lines,
            compile_only,
            make=fresh,
            rounds=cfg.n(3),
            warmup=cfg.warm(1),
            budget=BUDGET,
        )


if __name__ == "__main__":
    harness.main(bench, __doc__)
