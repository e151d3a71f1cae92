"""One-shot check of js.profile, js.memory and a compiled js.find_nan on a real GPU.

Not part of ``run_all.py``: CI has no accelerator. Run it by hand where one is lent::

    python benchmarks/gpu_check.py

It prints what each capability reported, so the answers can be compared with the
same script on CPU (``JAX_PLATFORMS=cpu python benchmarks/gpu_check.py``).
"""

from __future__ import annotations

import time
import traceback

import jax
import jax.numpy as jnp

import jaxscope as js


def attention(x, w):
    q, k, v = x @ w["q"], x @ w["k"], x @ w["v"]
    scores = q @ k.swapaxes(-1, -2) / jnp.sqrt(q.shape[-1])
    weights = jax.nn.softmax(scores, axis=-1)
    return weights @ v


def loss(w, x):
    y = x + attention(x, w)
    h = jax.nn.gelu(y @ w["up"])
    return jnp.mean((h @ w["down"]) ** 2)


@jax.jit
def train_step(w, x):
    value, grads = jax.value_and_grad(loss)(w, x)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, w, grads), value


@jax.jit
def nan_loss(w, xs):
    h = jnp.tanh(xs @ w)
    return jnp.log(h.sum(axis=1) - 1.0).mean()


@jax.jit
def key_loss(key, x):
    noise = jax.random.normal(key, x.shape)
    return jnp.log(x + noise).sum()


def section(title, run):
    print(f"\n=== {title}", flush=True)
    start = time.perf_counter()
    try:
        run()
    except Exception:
        traceback.print_exc()
    print(f"--- {time.perf_counter() - start:.2f} s", flush=True)


def main() -> None:
    print("jax", jax.__version__, "backend", jax.default_backend(), jax.devices())
    d, seq = 256, 1024
    shapes = {
        "q": (d, d),
        "k": (d, d),
        "v": (d, d),
        "up": (d, 4 * d),
        "down": (4 * d, d),
    }
    keys = jax.random.split(jax.random.key(0), len(shapes))
    w = {
        n: 0.05 * jax.random.normal(k, s)
        for k, (n, s) in zip(keys, shapes.items(), strict=True)
    }
    x = jax.random.normal(jax.random.key(1), (8, seq, d))

    def profile():
        view = js.profile(train_step, repeat=5)(w, x)
        print("total per run (s):", view.total)
        for spot in view.top(6):
            print(" ", spot.label, "|", spot.code)
        print("ops:", len(view.ops), "command buffers:", view.command_buffers)
        print("runs as compiled:", view.as_compiled_run_times)
        print("runs measured:", view.run_times)
        print(str(view)[:3000])

    def memory():
        mem = js.memory(train_step)(w, x)
        print("peak bytes:", mem.peak_bytes)
        print("analysis:", mem.analysis)
        for buffer in mem.largest(6):
            print(" ", buffer.bytes, buffer.kind, buffer.shape, buffer.source)
        print(str(mem)[:3000])

    def find_nan():
        wn = jnp.ones((3, 2))
        xs = jnp.ones((4, 3))
        healthy = js.find_nan(nan_loss)(wn, xs)
        print("healthy input ->", healthy)
        found = js.find_nan(nan_loss)(wn, -xs)
        print("found:", found and (found.primitive, found.source))
        print(found)

    def find_nan_key():
        found = js.find_nan(key_loss)(jax.random.key(0), -10 * jnp.ones((4,)))
        print("typed key:", found and (found.primitive, found.source))

    section("js.profile", profile)
    section("js.memory", memory)
    section("js.find_nan (compiled, on device)", find_nan)
    section("js.find_nan with a typed PRNG key", find_nan_key)


if __name__ == "__main__":
    main()
