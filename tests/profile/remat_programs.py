"""Differentiated programs with and without rematerialization, written as JAX,
Flax (NNX, Linen) and Equinox document them. Each builder returns
``(step, args, loss, loss_args)``: the train step ``js.residuals`` reads, and the
function it differentiates with the arguments it differentiates, for JAX's own
``print_saved_residuals`` (the other arguments closed over, as constants)."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import flax.linen as linen
import jax
import jax.numpy as jnp
from flax import nnx
from jax.ad_checkpoint import checkpoint_name

# --------------------------------------------- jax.checkpoint, save_only_these_names


def layer(w, x):
    h = jnp.sin(x @ w)  # <- sin
    h = checkpoint_name(h, "h")  # <- named
    return jnp.tanh(h @ w)  # <- tanh


def remat_loss(w, x):
    f = jax.checkpoint(layer, policy=jax.checkpoint_policies.save_only_these_names("h"))
    return f(w, f(w, x)).sum()


@jax.jit
def remat_step(w, x):
    loss, g = jax.value_and_grad(remat_loss)(w, x)  # <- grad
    return w - 0.1 * g, loss


def jax_remat() -> tuple[Any, ...]:
    w, x = jnp.ones((8, 8)) * 0.1, jnp.ones((4, 8))
    return remat_step, (w, x), lambda w: remat_loss(w, x), (w,)


# ------------------------------------------------- plain value_and_grad, no remat


def tanh_loss(params, x):
    h = jnp.tanh(x @ params["w1"])  # <- hidden
    return jnp.mean(jnp.sin(h @ params["w2"]) ** 2)  # <- out


@jax.jit
def tanh_step(params, x):
    grads = jax.grad(tanh_loss)(params, x)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def plain_grad() -> tuple[Any, ...]:
    params = {"w1": jnp.ones((16, 32)) * 0.1, "w2": jnp.ones((32, 4)) * 0.1}
    x = jnp.ones((8, 16))
    return tanh_step, (params, x), lambda p: tanh_loss(p, x), (params,)


# --------------------------------------------------------- eqx.filter_checkpoint


class Block(eqx.Module):
    linear: eqx.nn.Linear

    def __call__(self, x):
        return jax.nn.gelu(self.linear(x))  # <- gelu


class EqxNet(eqx.Module):
    blocks: list[Block]

    def __init__(self, key):
        keys = jax.random.split(key, 2)
        self.blocks = [Block(eqx.nn.Linear(8, 8, key=k)) for k in keys]

    def __call__(self, x):
        for block in self.blocks:
            x = eqx.filter_checkpoint(block)(x)  # <- block
        return x


def eqx_loss(model, x):
    return jnp.mean(jax.vmap(model)(x) ** 2)


@eqx.filter_jit
def eqx_step(model, x):
    loss, grads = eqx.filter_value_and_grad(eqx_loss)(model, x)
    return loss, grads


def eqx_remat() -> tuple[Any, ...]:
    model, x = EqxNet(jax.random.key(0)), jnp.ones((4, 8))
    return eqx_step, (model, x), lambda m: eqx_loss(m, x), (model,)


# ----------------------------------------------------------------- nnx.remat


class MLPBlock(nnx.Module):
    def __init__(self, dim: int, *, rngs: nnx.Rngs):
        self.up = nnx.Linear(dim, 4 * dim, rngs=rngs)
        self.down = nnx.Linear(4 * dim, dim, rngs=rngs)

    def __call__(self, x):
        h = checkpoint_name(nnx.gelu(self.up(x)), "up")  # <- up
        return x + self.down(h)  # <- down


class NnxNet(nnx.Module):
    def __init__(self, dim: int, *, rngs: nnx.Rngs):
        self.block = MLPBlock(dim, rngs=rngs)

    def __call__(self, x):
        policy = jax.checkpoint_policies.save_only_these_names("up")
        return nnx.remat(lambda block, x: block(x), policy=policy)(self.block, x)


def nnx_loss(model, x):
    return jnp.mean(model(x) ** 2)


@nnx.jit
def nnx_step(model, x):
    return nnx.value_and_grad(nnx_loss)(model, x)


def nnx_remat() -> tuple[Any, ...]:
    model, x = NnxNet(8, rngs=nnx.Rngs(0)), jnp.ones((4, 8))
    graphdef, state = nnx.split(model)

    def loss(state):
        return nnx_loss(nnx.merge(graphdef, state), x)

    return nnx_step, (model, x), loss, (state,)


# -------------------------------------------------------------------- linen.remat


class Dense2(linen.Module):
    @linen.compact
    def __call__(self, x):
        return jnp.tanh(linen.Dense(8)(x))  # <- dense


class LinenNet(linen.Module):
    @linen.compact
    def __call__(self, x):
        x = linen.remat(Dense2)()(x)
        return linen.remat(Dense2)()(x)


linen_net = LinenNet()


def linen_loss(variables, x):
    return jnp.mean(linen_net.apply(variables, x) ** 2)


@jax.jit
def linen_step(variables, x):
    return jax.grad(linen_loss)(variables, x)


def linen_remat() -> tuple[Any, ...]:
    x = jnp.ones((4, 8))
    variables = linen_net.init(jax.random.key(0), x)
    return linen_step, (variables, x), lambda v: linen_loss(v, x), (variables,)


# --------------------------------------------------------- a scan over layers


def scan_loss(ws, x):
    def body(h, w):
        return jnp.tanh(h @ w), None  # <- scanned

    h, _ = jax.lax.scan(body, x, ws)
    return jnp.mean(h**2)


@jax.jit
def scan_step(ws, x):
    return jax.grad(scan_loss)(ws, x)


def scan_layers() -> tuple[Any, ...]:
    ws, x = jnp.ones((6, 32, 32)) * 0.05, jnp.ones((16, 32))
    return scan_step, (ws, x), lambda ws: scan_loss(ws, x), (ws,)


PROGRAMS = {
    "jax_remat": jax_remat,
    "plain_grad": plain_grad,
    "eqx_remat": eqx_remat,
    "nnx_remat": nnx_remat,
    "linen_remat": linen_remat,
    "scan_layers": scan_layers,
}


# ------------------------------------------ the same layer under other policies


def remat_step_with(policy):
    """``remat_step`` with ``policy`` for its checkpoint: a jitted train step."""

    def loss(w, x):
        f = jax.checkpoint(layer, policy=policy)
        return f(w, f(w, x)).sum()  # <- checkpointed

    return jax.jit(jax.grad(loss)), (jnp.ones((8, 8)) * 0.1, jnp.ones((4, 8)))


def deep_scan(checkpointed: bool):
    """A scan over 24 layers of a batch of 256: its stacked activations dominate
    the peak unless the body is checkpointed."""

    def body(h, w):
        return jnp.tanh(h @ w), None  # <- deep body

    def loss(ws, x):
        step = jax.checkpoint(body) if checkpointed else body
        h, _ = jax.lax.scan(step, x, ws)  # <- deep scan
        return jnp.mean(h**2)

    return jax.jit(jax.grad(loss)), (jnp.ones((24, 32, 32)) * 0.05, jnp.ones((256, 32)))
