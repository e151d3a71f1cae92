"""Real programs the profile and memory tests measure: each builder returns
``(function, args)``. Sizes keep every compile under a second on a CPU."""

from __future__ import annotations

import itertools
from typing import Any

import jax
import jax.numpy as jnp
import optax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

# ------------------------------------------------------------ matmul vs elementwise


def matmul_then_elementwise(a, b):
    y = a @ b  # <- matmul
    return jnp.tanh(y) * 2.0  # <- elementwise


def matmul_and_elementwise(a, b, c):
    y = a @ b  # <- matmul
    z = jnp.exp(c) * 3.0  # <- elementwise
    return y, z


def square(n: int = 1024) -> jax.Array:
    return jnp.ones((n, n), jnp.float32) / n


# ------------------------------------------------------------------ MLP train step


def mlp_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])  # <- hidden
    out = h @ params["w2"]  # <- output
    return jnp.mean((out - y) ** 2)  # <- loss


def mlp_step(params, x, y):
    loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)  # <- grad
    new = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)  # <- update
    return new, loss


def mlp() -> tuple[Any, tuple[Any, ...]]:
    k1, k2 = jax.random.split(jax.random.key(0))
    params = {
        "w1": jax.random.normal(k1, (256, 512)) * 0.05,
        "b1": jnp.zeros(512),
        "w2": jax.random.normal(k2, (512, 16)) * 0.05,
    }
    x = jnp.ones((128, 256))
    y = jnp.zeros((128, 16))
    return jax.jit(mlp_step, donate_argnums=0), (params, x, y)


# ------------------------------------------- optax MLP train step (as optax's docs)


def optax_init(key, sizes):
    params = []
    for m, n in itertools.pairwise(sizes):
        key, sub = jax.random.split(key)
        w = jax.random.normal(sub, (m, n)) / jnp.sqrt(m)
        params.append({"w": w, "b": jnp.zeros(n)})
    return params


def optax_predict(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])  # <- relu
    last = params[-1]
    return x @ last["w"] + last["b"]  # <- logits


def optax_loss(params, x, y):
    logits = optax_predict(params, x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()  # <- xent


optimizer = optax.adam(1e-3)


def optax_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(optax_loss)(params, x, y)  # <- grad
    updates, opt_state = optimizer.update(grads, opt_state, params)  # <- adam
    params = optax.apply_updates(params, updates)  # <- apply
    return params, opt_state, loss


def optax_mlp() -> tuple[Any, tuple[Any, ...]]:
    params = optax_init(jax.random.key(0), [16, 32, 10])
    opt_state = optimizer.init(params)
    x = jnp.ones((64, 16))
    y = jnp.arange(64, dtype=jnp.int32) % 10
    return jax.jit(optax_step), (params, opt_state, x, y)


# ---------------------------------------------------------------------- scan RNN

STEPS = 12


def rnn_cell(h, x, w):
    return jnp.tanh(h @ w + x)  # <- cell


def rnn(h0, xs, w):
    def body(h, x):
        h = rnn_cell(h, x, w)
        return h, h.sum()  # <- readout

    return jax.lax.scan(body, h0, xs)  # <- scan


def scan_rnn() -> tuple[Any, tuple[Any, ...]]:
    return jax.jit(rnn), (
        jnp.zeros((64, 256)),
        jnp.ones((STEPS, 64, 256)) * 0.1,
        jnp.eye(256) * 0.5,
    )


# ------------------------------------------------------------- transformer block


def attention(x, wq, wk, wv):
    q, k, v = x @ wq, x @ wk, x @ wv  # <- qkv
    scores = q @ k.swapaxes(-1, -2) / jnp.sqrt(q.shape[-1])  # <- scores
    weights = jax.nn.softmax(scores, axis=-1)  # <- softmax
    return weights @ v  # <- mix


def block(params, x):
    y = attention(x, params["wq"], params["wk"], params["wv"])  # <- attention
    x = x + y
    h = jax.nn.gelu(x @ params["w_up"])  # <- up
    return x + h @ params["w_down"]  # <- down


def transformer() -> tuple[Any, tuple[Any, ...]]:
    d, seq = 64, 128
    keys = jax.random.split(jax.random.key(1), 5)
    params = {
        "wq": jax.random.normal(keys[0], (d, d)) * 0.1,
        "wk": jax.random.normal(keys[1], (d, d)) * 0.1,
        "wv": jax.random.normal(keys[2], (d, d)) * 0.1,
        "w_up": jax.random.normal(keys[3], (d, 4 * d)) * 0.1,
        "w_down": jax.random.normal(keys[4], (4 * d, d)) * 0.1,
    }
    return jax.jit(block), (params, jnp.ones((4, seq, d)))


# ----------------------------------------------------------- sharded step, 8 devices


def sharded_loss(w, x):
    y = jnp.tanh(x @ w)  # <- local
    return jnp.mean(y**2)  # <- mean


def sharded_step(w, x):
    loss, grad = jax.value_and_grad(sharded_loss)(w, x)  # <- sharded grad
    return w - 0.1 * grad, loss


def sharded() -> tuple[Any, tuple[Any, ...]]:
    mesh = jax.make_mesh((8,), ("data",))
    w = jax.device_put(jnp.ones((128, 128)) * 0.01, NamedSharding(mesh, P()))
    x = jax.device_put(jnp.ones((256, 128)), NamedSharding(mesh, P("data")))
    return jax.jit(sharded_step), (w, x)


def line_of(fn: Any, marker: str) -> int:
    """The file line of ``fn``'s source that holds the comment ``# <- marker``."""
    import inspect

    lines, start = inspect.getsourcelines(inspect.unwrap(fn))
    for offset, text in enumerate(lines):
        if text.rstrip().endswith(f"# <- {marker}"):
            return start + offset
    raise AssertionError(f"no '# <- {marker}' in {fn.__name__}")
