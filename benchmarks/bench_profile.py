"""Profiling: what ``js.profile`` costs a run, how well its lines add up, and ``js.memory``.

- Overhead: one run of an already compiled function with ``jax.profiler`` tracing
  (started and stopped outside the clock, as ``js.profile`` does around its runs),
  against the same run untraced; interleaved rounds, median of the paired ratios.
  Programs: a 1024x1024 matmul then an elementwise op, an MLP train step, a scan RNN
  and a data-parallel step on 8 host devices. Budget: median ratio <= 1.5.
- Accuracy: on the matmul program, every other line's time against the matmul
  line's (budget: <= 1, the matmul line first with most of the time), and the
  per-line times summed against the measured run, ``view.wall`` (within 10% both
  ways).
- ``js.profile(f, repeat=5)(*args)`` whole (compile, warm-up, five traced runs,
  reading the trace) against compiling and running five times plainly (no budget).
- ``js.memory(f)(*args)`` against ``jax.jit(f).lower(*args).compile()`` and
  ``memory_analysis()`` (no budget): the dump XLA writes costs some compile time.

    python benchmarks/bench_profile.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()

from collections.abc import Callable, Iterator
from typing import Any

import harness
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxscope._profile.events import tracing
from jaxscope._profile.memory import memory
from jaxscope._profile.profile import profile

OVERHEAD = harness.Budget(1.5)


def matmul_then_elementwise(a, b):
    y = a @ b
    return jnp.tanh(y) * 2.0


def mlp_step(params, x, y):
    def loss(p):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)

    value, grads = jax.value_and_grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads), value


def rnn(h0, xs, w):
    def body(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()

    return jax.lax.scan(body, h0, xs)


def data_parallel(w, x):
    def loss(w):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    value, grad = jax.value_and_grad(loss)(w)
    return w - 0.1 * grad, value


def programs() -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    a = jnp.ones((1024, 1024), jnp.float32) / 1024
    params = {
        "w1": jnp.ones((512, 1024)) * 0.01,
        "b1": jnp.zeros(1024),
        "w2": jnp.ones((1024, 64)) * 0.01,
    }
    mesh = jax.make_mesh((8,), ("data",))
    w = jax.device_put(jnp.ones((512, 512)) * 0.01, NamedSharding(mesh, P()))
    x = jax.device_put(jnp.ones((2048, 512)), NamedSharding(mesh, P("data")))
    return {
        "matmul 1024 + elementwise": (matmul_then_elementwise, (a, a)),
        "MLP train step": (
            mlp_step,
            (params, jnp.ones((256, 512)), jnp.zeros((256, 64))),
        ),
        "scan RNN, 32 steps": (
            rnn,
            (jnp.zeros((64, 256)), jnp.ones((32, 64, 256)), jnp.eye(256) * 0.5),
        ),
        "8-device data-parallel step": (data_parallel, (w, x)),
    }


def overhead(cfg: harness.Config) -> Iterator[harness.Result]:
    for name, (fn, args) in programs().items():
        compiled = jax.jit(fn).lower(*args).compile()

        def run(compiled=compiled, args=args) -> None:
            jax.block_until_ready(compiled(*args))

        yield harness.compare(
            f"profiled run / plain run: {name}",
            run,
            run,
            rounds=cfg.n(15),
            warmup=cfg.warm(3),
            jaxscope_context=tracing,
            budget=OVERHEAD,
        )


def accuracy(cfg: harness.Config) -> Iterator[harness.Result]:
    fn, args = programs()["matmul 1024 + elementwise"]
    matmul, rest, summed, run = [], [], [], []
    for _ in range(cfg.n(5)):
        view = profile(fn, repeat=5)(*args)
        first = view.lines[0]
        matmul.append(first.time if first.code == "y = a @ b" else 0.0)
        rest.append(view.total - matmul[-1])
        summed.append(sum(line.time for line in view.lines) + view.unattributed)
        run.append(view.wall)
    # the matmul line is first and has most of the time: the rest / it <= 1
    yield harness.paired(
        "accuracy: all other lines / the matmul line",
        rest,
        matmul,
        budget=harness.Budget(1.0),
    )
    # per-line times add up to the measured run within 10%, both ways
    yield harness.paired(
        "accuracy: lines summed / measured run",
        summed,
        run,
        budget=harness.Budget(1.10),
    )
    yield harness.paired(
        "accuracy: measured run / lines summed",
        run,
        summed,
        budget=harness.Budget(1.10),
    )


def whole_calls(cfg: harness.Config) -> Iterator[harness.Result]:
    fn, args = programs()["MLP train step"]

    def plain(f) -> None:
        compiled = jax.jit(f).lower(*args).compile()
        for _ in range(6):  # one warm-up and five runs, as js.profile does
            jax.block_until_ready(compiled(*args))

    yield harness.compare(
        "js.profile(f, repeat=5) whole / compile + 6 runs",
        lambda f: profile(f, repeat=5)(*args).lines,
        plain,
        make=lambda: lambda *a: fn(*a),  # fresh: no compile cache on either side
        rounds=cfg.n(5),
        warmup=cfg.warm(1),
    )
    yield harness.compare(
        "js.memory whole / compile + memory_analysis",
        lambda f: memory(f)(*args).buffers,
        lambda f: jax.jit(f).lower(*args).compile().memory_analysis(),
        make=lambda: lambda *a: fn(*a),
        rounds=cfg.n(5),
        warmup=cfg.warm(1),
    )


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    yield from overhead(cfg)
    yield from accuracy(cfg)
    yield from whole_calls(cfg)


if __name__ == "__main__":
    harness.main(bench, __doc__)
