"""Real programs the stepper must run to exactly ``f(*args)``."""

from __future__ import annotations

import itertools
from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


def mlp_init(key, sizes=(4, 8, 3)):
    params = []
    for i, (m, n) in enumerate(itertools.pairwise(sizes)):
        k1, k2 = jax.random.split(jax.random.fold_in(key, i))
        params.append(
            {
                "w": jax.random.normal(k1, (m, n)) * 0.5,
                "b": jax.random.normal(k2, (n,)) * 0.1,
            }
        )
    return params


def mlp_loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = jnp.tanh(h @ layer["w"] + layer["b"])
    logits = h @ params[-1]["w"] + params[-1]["b"]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
    new = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return new, loss


def rnn(params, xs):
    def cell(h, x):
        h = jnp.tanh(h @ params["wh"] + x @ params["wx"])
        return h, h.sum()

    h0 = jnp.zeros(params["wh"].shape[0])
    return lax.scan(cell, h0, xs)


def newton_sqrt(a):
    def cond(state):
        x, i = state
        return (jnp.abs(x * x - a) > 1e-5) & (i < 50)

    def body(state):
        x, i = state
        return 0.5 * (x + a / x), i + 1

    return lax.while_loop(cond, body, (a, 0))


def branchy(x, k):
    y = lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: -v, x)
    return lax.switch(k, [jnp.sin, jnp.cos, lambda v: v + 1.0], y)


@jax.custom_jvp
def safe_log1p(x):
    return jnp.log1p(x)


@safe_log1p.defjvp
def _safe_log1p_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return safe_log1p(x), t / (1 + x)


def custom_fn(x):
    return safe_log1p(x * x).sum()


@jax.custom_vjp
def clip_grad(x):
    return x * 1.0


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (jnp.clip(g, -1, 1),)


clip_grad.defvjp(_clip_fwd, _clip_bwd)


def vjp_fn(x):
    return jnp.sum(clip_grad(x) ** 2)


def vmap_of_grad(xs):
    return jax.vmap(jax.grad(lambda x: jnp.sum(jnp.sin(x) * x)))(xs)


def remat_fn(x):
    g = jax.checkpoint(lambda v: jnp.sin(jnp.cos(v)) * v)
    return jax.grad(lambda v: g(v).sum())(x)


def pytree_fn(tree, scale=2.0):
    a, (b, c) = tree["a"], tree["bc"]
    return {
        "sum": a + b,
        "prod": (b * c * scale, None),
        "n": jnp.int32(3) + c.astype(jnp.int32),
    }


@partial(jax.jit, static_argnums=(1,))
def static_fn(x, n):
    for _ in range(n):
        x = x * 2 + 1
    return x


def int_fn(x):
    return (x * 7 + 3) % 11, jnp.cumsum(x), x.argmax()


def random_fn(key):
    k1, k2 = jax.random.split(key)
    return jax.random.normal(k1, (3,)) + jax.random.uniform(k2, (3,))
