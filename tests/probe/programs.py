"""Train steps of Flax NNX, Flax Linen and Equinox, written as their docs write
them, with a layer where a NaN can be injected: ``shift < 0`` makes the forward
pass take the log of negatives (FORWARD line); a zero row of ``x`` leaves the
forward pass finite and makes the gradient of the norm 0 * inf (BACKWARD line)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
from flax import linen, nnx
from flax.training import train_state


def scale_norm(h):
    norm = jnp.sqrt(jnp.sum(h * h, axis=-1, keepdims=True))  # BACKWARD
    return h / (norm + 1.0)


def shifted_log(h, shift):
    return jnp.log(h * h + shift)  # FORWARD


def marker_line(marker: str) -> int:
    """The line of this file that ends with ``# marker``."""
    with open(__file__) as file:
        source = file.read().splitlines()
    return next(k + 1 for k, text in enumerate(source) if text.endswith(f"# {marker}"))


def batch(zero_row: bool):
    x = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
    if zero_row:
        x = x.at[1].set(0.0)
    return x, jnp.ones((4, 1))


# ------------------------------------------------------------------------ Flax NNX


class NnxNet(nnx.Module):
    def __init__(self, shift: float, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(3, 8, use_bias=False, rngs=rngs)
        self.shift = nnx.Param(jnp.asarray(shift))
        self.linear2 = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        h = self.linear1(x)
        h = shifted_log(h, self.shift[...])
        h = scale_norm(h)
        return self.linear2(h)


@nnx.jit
def nnx_train_step(model, optimizer, x, y):
    def loss_fn(model):
        pred = model(x)
        return ((pred - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def nnx_case(shift: float, zero_row: bool):
    model = NnxNet(shift, nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    return nnx_train_step, (model, optimizer, *batch(zero_row))


# ----------------------------------------------------------------------- Flax Linen


class LinenNet(linen.Module):
    shift: float

    @linen.compact
    def __call__(self, x):
        h = linen.Dense(8, use_bias=False)(x)
        shift = self.param("shift", lambda key: jnp.asarray(self.shift))
        h = shifted_log(h, shift)
        h = scale_norm(h)
        return linen.Dense(1)(h)


@jax.jit
def linen_train_step(state, x, y):
    def loss_fn(params):
        pred = state.apply_fn({"params": params}, x)
        return ((pred - y) ** 2).mean()

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def linen_case(shift: float, zero_row: bool):
    model = LinenNet(shift)
    x, y = batch(zero_row)
    params = model.init(jax.random.key(0), x)["params"]
    state = train_state.TrainState.create(
        apply_fn=model.apply, params=params, tx=optax.sgd(0.1)
    )
    return linen_train_step, (state, x, y)


# ------------------------------------------------------------------------- Equinox


class EqxNet(eqx.Module):
    linear1: eqx.nn.Linear
    linear2: eqx.nn.Linear
    shift: jax.Array

    def __init__(self, shift: float, key):
        k1, k2 = jax.random.split(key)
        self.linear1 = eqx.nn.Linear(3, 8, use_bias=False, key=k1)
        self.linear2 = eqx.nn.Linear(8, 1, key=k2)
        self.shift = jnp.asarray(shift)

    def __call__(self, x):
        h = self.linear1(x)
        h = shifted_log(h, self.shift)
        h = scale_norm(h)
        return self.linear2(h)


optim = optax.sgd(0.1)


def eqx_loss(model, x, y):
    pred = jax.vmap(model)(x)
    return ((pred - y) ** 2).mean()


@eqx.filter_jit
def eqx_train_step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(eqx_loss)(model, x, y)
    updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    model = eqx.apply_updates(model, updates)
    return model, opt_state, loss


def eqx_case(shift: float, zero_row: bool):
    model = EqxNet(shift, jax.random.key(0))
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    return eqx_train_step, (model, opt_state, *batch(zero_row))


CASES = {"nnx": nnx_case, "linen": linen_case, "equinox": eqx_case}
