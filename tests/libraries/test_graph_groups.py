"""The graph keeps the model's structure on programs written as the libraries write
them: the user's calls and the name scopes a library opens nest, neither hiding the
other, and a library call the user made is one group named as the user wrote it."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

import jaxscope as js

from .programs import linen_lm


def _tree(graph, kinds=("call", "scope")):
    """``(depth, label)`` of the groups of ``kinds``, parents before children; the
    depth counts only those kinds (a jit or custom_jvp between adds none)."""
    by_id = {gr.id: gr for gr in graph.groups}
    out = []
    for gr in graph.groups:
        if gr.kind not in kinds:
            continue
        depth, up = 0, gr.parent
        while up is not None:
            depth += by_id[up].kind in kinds
            up = by_id[up].parent
        out.append((depth, gr.label))
    return out


def _children(graph, label, nth=0):
    """The labels of the groups directly in the ``nth`` group labelled ``label``."""
    parent = [gr for gr in graph.groups if gr.label == label][nth]
    return [gr.label for gr in graph.groups if gr.parent == parent.id]


# ------------------------------------- Flax NNX: a block with nnx.MultiHeadAttention


class Block(nnx.Module):
    def __init__(self, d: int, rngs: nnx.Rngs, attention: bool):
        self.attn = (
            nnx.MultiHeadAttention(num_heads=2, in_features=d, decode=False, rngs=rngs)
            if attention
            else None
        )
        self.lin = nnx.Linear(d, d, rngs=rngs)

    def __call__(self, x):
        if self.attn is not None:
            x = x + self.attn(x)
        return x + nnx.relu(self.lin(x))


class Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs, attention: bool = True):
        self.block = Block(8, rngs, attention)
        self.head = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.head(self.block(x))


@nnx.jit
def nnx_train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean((model(x) - y) ** 2)

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def _nnx_graph(attention: bool):
    model = Net(nnx.Rngs(0), attention)
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    x, y = jnp.ones((2, 3, 8)), jnp.ones((2, 3, 2))
    return js.graph(nnx_train_step)(model, optimizer, x, y)


def test_nnx_attention_keeps_the_modules_around_flax_name_scopes():
    # Flax's attention opens einsum name scopes; they sit inside self.attn, and the
    # modules around it stay groups, as they are without attention.
    without = [c for c in _tree(_nnx_graph(False)) if c[1] != "self.attn"]
    g = _nnx_graph(True)
    tree = _tree(g)
    forward = [
        (0, "loss_fn"),
        (1, "Net"),
        (2, "Block"),
        (3, "self.attn"),
        (4, "BTNH,BSNH->BNTS"),
        (4, "BNTS,BSNH->BTNH"),
        (3, "self.lin"),
        (2, "self.head"),
    ]
    backward = [
        (0, "loss_fn (backward)"),
        (1, "Net"),
        (2, "self.head"),
        (2, "Block"),
        (3, "self.lin"),
        (3, "self.attn"),
        (4, "BNTS,BSNH->BTNH"),
        (4, "BTNH,BSNH->BNTS"),
    ]
    assert tree == [*forward, *backward, (0, "optimizer.update")]
    assert [c for c in tree if c[0] < 4 and c[1] != "self.attn"] == without
    scopes = [gr for gr in g.groups if gr.kind == "scope"]
    assert [gr.backward for gr in scopes] == [False, False, True, True]


# --------------------------------- Equinox: a GAN's Generator and Discriminator step


class Generator(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [
            eqx.nn.ConvTranspose2d(4, 8, kernel_size=3, key=k1),
            eqx.nn.BatchNorm(8, axis_name="batch", mode="batch"),
            jax.nn.relu,
            eqx.nn.ConvTranspose2d(8, 1, kernel_size=3, key=k2),
            jax.nn.tanh,
        ]

    def __call__(self, x, state):
        for layer in self.layers:
            if isinstance(layer, eqx.nn.BatchNorm):
                x, state = layer(x, state)
            else:
                x = layer(x)
        return x, state


class Discriminator(eqx.Module):
    layers: list

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [
            eqx.nn.Conv2d(1, 4, kernel_size=3, key=k1),
            eqx.nn.BatchNorm(4, axis_name="batch", mode="batch"),
            jax.nn.leaky_relu,
            eqx.nn.Conv2d(4, 1, kernel_size=3, key=k2),
        ]

    def __call__(self, x, state):
        for layer in self.layers:
            if isinstance(layer, eqx.nn.BatchNorm):
                x, state = layer(x, state)
            else:
                x = layer(x)
        return x, state


@eqx.filter_value_and_grad(has_aux=True)
def compute_grads_discriminator(discriminator, generator, noise, g_state, d_state):
    fake_batch, g_state = jax.vmap(
        generator, axis_name="batch", in_axes=(0, None), out_axes=(0, None)
    )(noise, g_state)
    pred_y, d_state = jax.vmap(
        discriminator, axis_name="batch", in_axes=(0, None), out_axes=(0, None)
    )(fake_batch, d_state)
    loss = optax.sigmoid_binary_cross_entropy(pred_y, jnp.zeros_like(pred_y)).mean()
    return loss, (g_state, d_state)


def test_equinox_gan_step_keeps_the_users_modules_around_eqx_nn_scopes():
    g_key, d_key = jax.random.split(jax.random.key(0))
    generator, g_state = eqx.nn.make_with_state(Generator)(g_key)
    discriminator, d_state = eqx.nn.make_with_state(Discriminator)(d_key)
    optim = optax.adam(1e-3)
    opt_state = optim.init(eqx.filter(discriminator, eqx.is_array))

    @eqx.filter_jit
    def step(discriminator, generator, opt_state, g_state, d_state, noise):
        (loss, _states), grads = compute_grads_discriminator(
            discriminator, generator, noise, g_state, d_state
        )
        updates, opt_state = optim.update(grads, opt_state, discriminator)
        discriminator = eqx.apply_updates(discriminator, updates)
        return discriminator, opt_state, loss

    noise = jnp.ones((2, 4, 4, 4))
    g = js.graph(step)(discriminator, generator, opt_state, g_state, d_state, noise)
    tree = [c for c in _tree(g) if c[0] < 3]
    assert tree == [
        (0, "compute_grads_discriminator"),
        (1, "Generator"),
        (2, "eqx.nn.ConvTranspose"),
        (2, "eqx.nn.BatchNorm"),
        (2, "eqx.nn.ConvTranspose"),
        (1, "Discriminator"),
        (2, "eqx.nn.Conv"),
        (2, "eqx.nn.BatchNorm"),
        (2, "eqx.nn.Conv"),
        (1, "optax.sigmoid_binary_cross_entropy"),
        (0, "compute_grads_discriminator (backward)"),
        (1, "optax.sigmoid_binary_cross_entropy"),
        (1, "Discriminator"),
        (2, "eqx.nn.Conv"),
        (2, "eqx.nn.BatchNorm"),
        (2, "eqx.nn.Conv"),
        (0, "optim.update"),
        (0, "eqx.apply_updates"),
    ]


# ------------------------------------------------- Optax: gradient accumulation


def test_an_optax_multisteps_update_is_the_users_call_around_its_cond():
    params = {"w": jnp.ones((3, 2))}
    optimizer = optax.MultiSteps(optax.adam(1e-3), every_k_schedule=2)
    opt_state = optimizer.init(params)

    @jax.jit
    def step(params, opt_state, x):
        grads = jax.grad(lambda p: jnp.mean((x @ p["w"]) ** 2))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    g = js.graph(step)(params, opt_state, jnp.ones((4, 3)))
    top = [(gr.kind, gr.label) for gr in g.groups if gr.parent is None]
    assert ("call", "optimizer.update") in top
    assert _children(g, "optimizer.update") == ["cond(_do_update, _skip_update)"]


# ----------------------------------------------------------- Linen: a transformer LM


def test_linen_lm_keeps_the_loss_call_around_module_paths_and_einsum_scopes():
    step, args = linen_lm()
    g = js.graph(step)(*args)
    top = [gr.label for gr in g.groups if gr.parent is None]
    assert top == ["loss_fn", "loss_fn (backward)", "tx.update", "optax.apply_updates"]
    tree = _tree(g)
    attention = [
        (3, "MultiHeadDotProductAttention_0"),
        (4, "query"),
        (4, "key"),
        (4, "value"),
        (4, "...qhd,...khd->...hqk"),
        (4, "...hqk,...khd->...qhd"),
        (4, "out"),
    ]
    assert tree[:5] == [
        (0, "loss_fn"),
        (1, "TransformerLM"),
        (2, "Embed_0"),
        (2, "DecoderBlock_0"),
        (3, "LayerNorm_0"),
    ]
    start = tree.index((2, "DecoderBlock_0"))
    assert tree[start + 3 : start + 10] == attention
    # the backward pass mirrors it, its scopes in the backward call
    back = tree.index((0, "loss_fn (backward)"))
    assert (1, "TransformerLM") in tree[back:]
    assert sum(c == (3, "MultiHeadDotProductAttention_0") for c in tree[back:]) == 2


# ------------------------------------------------------ diffrax: a neural ODE step


@pytest.mark.slow
def test_a_diffrax_solve_is_one_group_named_as_the_user_called_it():
    diffrax = pytest.importorskip("diffrax")

    class Func(eqx.Module):
        mlp: eqx.nn.MLP

        def __init__(self, *, key):
            self.mlp = eqx.nn.MLP(2, 2, 4, 1, activation=jax.nn.softplus, key=key)

        def __call__(self, t, y, args):
            return self.mlp(y)

    class NeuralODE(eqx.Module):
        func: Func

        def __init__(self, *, key):
            self.func = Func(key=key)

        def __call__(self, ts, y0):
            solution = diffrax.diffeqsolve(
                diffrax.ODETerm(self.func),
                diffrax.Tsit5(),
                t0=ts[0],
                t1=ts[-1],
                dt0=ts[1] - ts[0],
                y0=y0,
                saveat=diffrax.SaveAt(ts=ts),
            )
            return solution.ys

    @eqx.filter_value_and_grad
    def grad_loss(model, ti, yi):
        y_pred = jax.vmap(model, in_axes=(None, 0))(ti, yi[:, 0])
        return jnp.mean((yi - y_pred) ** 2)

    optim = optax.adabelief(3e-3)

    @eqx.filter_jit
    def make_step(ti, yi, model, opt_state):
        loss, grads = grad_loss(model, ti, yi)
        updates, opt_state = optim.update(grads, opt_state)
        model = eqx.apply_updates(model, updates)
        return loss, model, opt_state

    model = NeuralODE(key=jax.random.key(0))
    opt_state = optim.init(eqx.filter(model, eqx.is_inexact_array))
    ts, ys = jnp.linspace(0, 1, 3), jnp.ones((2, 3, 2))
    g = js.graph(make_step)(ts, ys, model, opt_state)
    tree = [c for c in _tree(g, ("call",)) if c[0] < 3]
    assert tree[:4] == [
        (0, "grad_loss"),
        (1, "NeuralODE"),
        (2, "diffrax.diffeqsolve"),
        (0, "grad_loss (backward)"),
    ]
    assert _children(g, "diffrax.diffeqsolve") == ["jit diffeqsolve"]
    assert _children(g, "diffrax.diffeqsolve", 1) == ["jit diffeqsolve"]
