"""Small programs written the way Flax, Equinox and Optax document them.

Each builder returns ``(step, args)``: a train (or eval) step as the library's docs
write it and example arguments, so every capability can be tried on the code JAX users
really write. Sizes are tiny so the whole file traces in seconds on a CPU.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import flax.linen as linen
import jax
import jax.numpy as jnp
import optax
from flax import nnx

# ---------------------------------------------------------------- Flax NNX: MNIST CNN


class CNN(nnx.Module):
    """The CNN of Flax's NNX MNIST tutorial, scaled down."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(4, 8, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = lambda x: nnx.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(8 * 2 * 2, 16, rngs=rngs)
        self.linear2 = nnx.Linear(16, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        x = nnx.relu(self.linear1(x))
        x = self.linear2(x)
        return x


def nnx_loss_fn(model: CNN, batch: dict[str, Any]):
    logits = model(batch["image"])
    loss = optax.softmax_cross_entropy_with_integer_labels(
        logits=logits, labels=batch["label"]
    ).mean()
    return loss, logits


@nnx.jit
def nnx_train_step(model: CNN, optimizer: nnx.Optimizer, batch: dict[str, Any]):
    grad_fn = nnx.value_and_grad(nnx_loss_fn, has_aux=True)
    (loss, _logits), grads = grad_fn(model, batch)
    optimizer.update(model, grads)
    return loss


def nnx_cnn() -> tuple[Any, tuple[Any, ...]]:
    model = CNN(rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3, 0.9), wrt=nnx.Param)
    batch = {
        "image": jnp.ones((2, 8, 8, 1), jnp.float32),
        "label": jnp.array([1, 3], jnp.int32),
    }
    return nnx_train_step, (model, optimizer, batch)


# ------------------------------------------------------- Linen: ResNet block, BatchNorm


class ResNetBlock(linen.Module):
    filters: int

    @linen.compact
    def __call__(self, x, train: bool = True):
        residual = x
        y = linen.Conv(self.filters, (3, 3))(x)
        y = linen.BatchNorm(use_running_average=not train)(y)
        y = linen.relu(y)
        y = linen.Conv(self.filters, (3, 3))(y)
        y = linen.BatchNorm(
            use_running_average=not train, scale_init=linen.initializers.zeros
        )(y)
        return linen.relu(residual + y)


class ResNetTiny(linen.Module):
    @linen.compact
    def __call__(self, x, train: bool = True):
        x = linen.Conv(4, (3, 3))(x)
        x = ResNetBlock(4)(x, train)
        x = jnp.mean(x, axis=(1, 2))
        return linen.Dense(10)(x)


def linen_resnet() -> tuple[Any, tuple[Any, ...]]:
    model = ResNetTiny()
    x = jnp.ones((2, 8, 8, 3), jnp.float32)
    labels = jnp.array([0, 1])
    variables = model.init(jax.random.key(0), x)
    tx = optax.sgd(0.1, momentum=0.9)
    opt_state = tx.init(variables["params"])

    @jax.jit
    def train_step(params, batch_stats, opt_state, x, labels):
        def loss_fn(params):
            logits, updates = model.apply(
                {"params": params, "batch_stats": batch_stats},
                x,
                mutable=["batch_stats"],
            )
            loss = optax.softmax_cross_entropy_with_integer_labels(
                logits, labels
            ).mean()
            return loss, updates

        (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates_, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates_)
        return params, updates["batch_stats"], opt_state, loss

    args = (variables["params"], variables["batch_stats"], opt_state, x, labels)
    return train_step, args


# ----------------------------------------------------- Linen: a small transformer LM step


class DecoderBlock(linen.Module):
    dim: int
    heads: int

    @linen.compact
    def __call__(self, x):
        y = linen.LayerNorm()(x)
        y = linen.MultiHeadDotProductAttention(
            num_heads=self.heads, qkv_features=self.dim
        )(y, mask=linen.make_causal_mask(jnp.ones(x.shape[:2])))
        x = x + y
        y = linen.LayerNorm()(x)
        y = linen.Dense(4 * self.dim)(y)
        y = linen.gelu(y)
        y = linen.Dense(self.dim)(y)
        return x + y


class TransformerLM(linen.Module):
    vocab: int = 32
    dim: int = 16
    layers: int = 2

    @linen.compact
    def __call__(self, tokens):
        x = linen.Embed(self.vocab, self.dim)(tokens)
        for _ in range(self.layers):
            x = DecoderBlock(self.dim, heads=2)(x)
        return linen.Dense(self.vocab)(linen.LayerNorm()(x))


def linen_lm() -> tuple[Any, tuple[Any, ...]]:
    model = TransformerLM()
    tokens = jnp.zeros((2, 8), jnp.int32)
    params = model.init(jax.random.key(0), tokens)["params"]
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)

    @jax.jit
    def train_step(params, opt_state, tokens):
        def loss_fn(params):
            logits = model.apply({"params": params}, tokens[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(
                logits, tokens[:, 1:]
            ).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return train_step, (params, opt_state, tokens)


# ------------------------------------------------------------------- Equinox: MNIST CNN


class EqxCNN(eqx.Module):
    layers: list

    def __init__(self, key):
        key1, key2, key3 = jax.random.split(key, 3)
        self.layers = [
            eqx.nn.Conv2d(1, 3, kernel_size=4, key=key1),
            eqx.nn.MaxPool2d(kernel_size=2),
            jax.nn.relu,
            jnp.ravel,
            eqx.nn.Linear(3 * 6 * 6, 16, key=key2),
            jax.nn.sigmoid,
            eqx.nn.Linear(16, 10, key=key3),
            jax.nn.log_softmax,
        ]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def eqx_loss(model, x, y):
    pred_y = jax.vmap(model)(x)
    return -jnp.mean(jnp.take_along_axis(pred_y, y[:, None], axis=1))


def eqx_cnn() -> tuple[Any, tuple[Any, ...]]:
    model = EqxCNN(jax.random.key(0))
    optim = optax.adamw(1e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def make_step(model, opt_state, x, y):
        loss_value, grads = eqx.filter_value_and_grad(eqx_loss)(model, x, y)
        updates, opt_state = optim.update(
            grads, opt_state, eqx.filter(model, eqx.is_array)
        )
        model = eqx.apply_updates(model, updates)
        return model, opt_state, loss_value

    x = jnp.ones((2, 1, 10, 10), jnp.float32)
    y = jnp.array([1, 2])
    return make_step, (model, opt_state, x, y)


# ------------------------------------------------------------------- Equinox: GRU RNN


class RNN(eqx.Module):
    hidden_size: int
    cell: eqx.Module
    linear: eqx.nn.Linear
    bias: jax.Array

    def __init__(self, in_size, out_size, hidden_size, *, key):
        ckey, lkey = jax.random.split(key)
        self.hidden_size = hidden_size
        self.cell = eqx.nn.GRUCell(in_size, hidden_size, key=ckey)
        self.linear = eqx.nn.Linear(hidden_size, out_size, use_bias=False, key=lkey)
        self.bias = jnp.zeros(out_size)

    def __call__(self, input):
        hidden = jnp.zeros((self.hidden_size,))

        def f(carry, inp):
            return self.cell(inp, carry), None

        out, _ = jax.lax.scan(f, hidden, input)
        return jax.nn.sigmoid(self.linear(out) + self.bias)


def eqx_gru() -> tuple[Any, tuple[Any, ...]]:
    model = RNN(in_size=2, out_size=1, hidden_size=4, key=jax.random.key(0))
    optim = optax.adam(3e-3)
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))

    @eqx.filter_value_and_grad
    def compute_loss(model, x, y):
        pred_y = jax.vmap(model)(x)
        return -jnp.mean(y * jnp.log(pred_y) + (1 - y) * jnp.log(1 - pred_y))

    @eqx.filter_jit
    def make_step(model, x, y, opt_state):
        loss, grads = compute_loss(model, x, y)
        updates, opt_state = optim.update(grads, opt_state)
        model = eqx.apply_updates(model, updates)
        return loss, model, opt_state

    x = jnp.ones((3, 5, 2), jnp.float32)
    y = jnp.array([[0.0], [1.0], [0.0]])
    return make_step, (model, x, y, opt_state)


def eqx_mlp() -> tuple[Any, tuple[Any, ...]]:
    mlp = eqx.nn.MLP(
        in_size=3, out_size=2, width_size=8, depth=2, key=jax.random.key(0)
    )

    @eqx.filter_jit
    def forward(model, x):
        return jax.vmap(model)(x)

    return forward, (mlp, jnp.ones((4, 3)))


PROGRAMS = {
    "nnx_cnn": nnx_cnn,
    "linen_resnet": linen_resnet,
    "linen_lm": linen_lm,
    "eqx_cnn": eqx_cnn,
    "eqx_gru": eqx_gru,
    "eqx_mlp": eqx_mlp,
}
