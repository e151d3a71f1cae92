"""Graph viewer, Python side: the payload's size and the time to build it.

For three program shapes at 1k, 20k and 100k equations, ``build_graph`` plus
``to_payload`` (what ``GraphView.payload()`` does after the jaxpr is traced) against
``jax.make_jaxpr`` of the same program (a fresh function each round: the cost of
tracing it, for scale), and the payload's JSON size, raw and gzipped (budget: <= 5 MB
raw at 20k equations). The browser side is measured by ``bench_graph.py``.

- flat: ``for _ in range(n): x = x + 1.0`` (one source line, no groups);
- scoped: 20 ``jax.named_scope`` layers of distinct lines (``programs.layered``);
- transformer: a train step (``jax.value_and_grad`` of a stack of attention + MLP
  layers, one named scope each, and an SGD update): forward and backward groups.

    python benchmarks/bench_graph_payload.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import gzip
import json
from collections.abc import Callable, Iterator
from typing import Any

import harness
import jax
import jax.numpy as jnp
import programs

import jaxscope as js
from jaxscope._graph.model import build_graph
from jaxscope._graph.payload import to_payload

SIZES = (1_000, 20_000, 100_000)
ROUNDS = {1_000: 5, 20_000: 3, 100_000: 2}
WIDTH = 8
# Equations of one transformer layer's train step (forward, backward, update) at WIDTH.
PER_LAYER = 214


def flat(n: int) -> Callable[..., Any]:
    source = (
        "def program(x):\n"
        f"    for _ in range({n}):\n"
        "        x = x + 1.0\n"
        "    return x\n"
    )
    return programs.load(source, "program")


def transformer(n: int) -> Callable[..., Any]:
    """A fresh train step of about ``n`` equations (``n / PER_LAYER`` layers)."""

    def attention(x, w):
        q, k, v = x @ w["q"], x @ w["k"], x @ w["v"]
        a = jax.nn.softmax(q @ k.T / 8.0, axis=-1)
        return (a @ v) @ w["o"]

    def mlp(x, w):
        return jax.nn.gelu(x @ w["up"]) @ w["down"]

    def loss(params, x):
        for i, w in enumerate(params):
            with jax.named_scope(f"layer{i}"):
                x = x + attention(jax.nn.standardize(x), w)
                x = x + mlp(jax.nn.standardize(x), w)
        return jnp.mean(x**2)

    def step(params, x):
        value, grads = jax.value_and_grad(loss)(params, x)
        return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads), value

    return step


def transformer_args(n: int) -> tuple[Any, ...]:
    names = ("q", "k", "v", "o", "up", "down")
    layers = max(1, round(n / PER_LAYER))
    params = [{k: jnp.ones((WIDTH, WIDTH)) for k in names} for _ in range(layers)]
    return params, jnp.ones((4, WIDTH))


SHAPES: dict[str, tuple[Callable[[int], Callable[..., Any]], Callable[[int], Any]]] = {
    "flat": (flat, lambda n: (jnp.ones(8),)),
    "scoped": (lambda n: programs.layered(20, n // 20), lambda n: (jnp.ones(8),)),
    "transformer": (transformer, transformer_args),
}


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    for n in cfg.sizes(SIZES):
        for shape, (make, make_args) in SHAPES.items():
            args = make_args(n)
            view = js.jaxpr(make(n))(*args)
            eqns = len(view.eqns)
            payload: list[dict[str, Any]] = []

            def ours(_fresh: Any, view: Any = view, payload: list[Any] = payload):
                payload[:] = [to_payload(build_graph(view.model, "program"))]

            def theirs(fresh: Any, args: Any = args) -> None:
                jax.make_jaxpr(fresh)(*args)

            yield harness.compare(
                f"graph payload {shape} {eqns:,} eqns: build_graph + to_payload"
                " / make_jaxpr",
                ours,
                theirs,
                make=lambda make=make, n=n: make(n),
                rounds=cfg.n(ROUNDS[n]),
                warmup=cfg.warm(1 if n < 100_000 else 0),
            )
            raw = json.dumps(payload[0], separators=(",", ":")).encode()
            yield harness.value(
                f"graph payload {shape} {eqns:,} eqns: JSON size",
                [len(raw)],
                budget=harness.Budget(5e6, on="value") if n == 20_000 else None,
                unit="B",
                note=f"gzip {len(gzip.compress(raw)) / 1e6:.2f} MB; "
                f"{len(payload[0]['nodes']):,} nodes, "
                f"{len(payload[0]['groups']):,} groups",
            )


if __name__ == "__main__":
    harness.main(bench, __doc__)
