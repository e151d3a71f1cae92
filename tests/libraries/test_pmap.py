"""Every capability on data-parallel steps written with ``jax.pmap``,
``eqx.filter_pmap`` (as Equinox's BERT example writes its step) and ``nnx.pmap``,
over the 8 CPU devices: inputs named as the user names them, equations at the
user's lines, and stepping gives what the step returns."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import jaxscope as js

N = 8  # tests/conftest.py gives JAX 8 CPU devices


# ------------------------------------------- Equinox: the BERT example's training step


class Classifier(eqx.Module):
    linear: eqx.nn.Linear
    dropout: eqx.nn.Dropout
    activation: Callable[..., Any]

    def __init__(self, key):
        self.linear = eqx.nn.Linear(3, 2, key=key)
        self.dropout = eqx.nn.Dropout(0.1)
        self.activation = jax.nn.gelu

    def __call__(self, x, enable_dropout, key):
        h = self.activation(self.linear(x))
        return self.dropout(h, inference=not enable_dropout, key=key)


@eqx.filter_value_and_grad
def compute_loss(classifier, inputs, key):
    batch_size = inputs["x"].shape[0]
    batched_keys = jax.random.split(key, num=batch_size)
    logits = jax.vmap(classifier, in_axes=(0, None, 0))(inputs["x"], True, batched_keys)
    return jnp.mean(
        optax.softmax_cross_entropy_with_integer_labels(
            logits=logits, labels=inputs["label"]
        )
    )


def make_step(model, inputs, opt_state, key, tx):
    key, new_key = jax.random.split(key)
    loss, grads = compute_loss(model, inputs, key)
    grads = jax.lax.pmean(grads, axis_name="devices")
    updates, opt_state = tx.update(grads, opt_state, model)
    model = eqx.apply_updates(model, updates)
    return loss, model, opt_state, new_key


def eqx_filter_pmap():
    model = Classifier(jax.random.key(0))
    tx = optax.adam(1e-3)
    opt_state = tx.init(eqx.filter(model, eqx.is_inexact_array))
    p_make_step = eqx.filter_pmap(
        make_step,
        axis_name="devices",
        in_axes=(None, 0, None, 0, None),
        out_axes=(0, None, None, 0),
    )
    inputs = {"x": jnp.ones((N, 4, 3)), "label": jnp.zeros((N, 4), jnp.int32)}
    keys = jax.random.split(jax.random.key(1), N)
    args = (model, inputs, opt_state, keys, tx)
    return p_make_step, args, "model.linear.weight", "compute_loss"


# ----------------------------------------------------------------------------- jax.pmap


def jax_pmap():
    def train_step(params, xs):
        def loss_fn(params):
            return jnp.mean(jnp.tanh(xs @ params["weight"]) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        grads = jax.lax.pmean(grads, axis_name="batch")
        params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
        return params, jax.lax.pmean(loss, axis_name="batch")

    p_train_step = jax.pmap(train_step, axis_name="batch", in_axes=(None, 0))
    params = {"weight": jnp.ones((3, 2))}
    return p_train_step, (params, jnp.ones((N, 4, 3))), "params['weight']", "loss_fn"


# ----------------------------------------------------------------------------- nnx.pmap


class Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(3, 2, rngs=rngs)

    def __call__(self, x):
        return self.linear(x)


def nnx_pmap():
    @nnx.pmap(axis_name="batch", in_axes=(None, 0), out_axes=0)
    def forward(model, x):
        y = model(x)
        return jax.lax.pmean(jnp.square(y).sum(), "batch")

    return forward, (Net(nnx.Rngs(0)), jnp.ones((N, 4, 3))), "model.linear", "forward"


PROGRAMS = {
    "eqx_filter_pmap": eqx_filter_pmap,
    "jax_pmap": jax_pmap,
    "nnx_pmap": nnx_pmap,
}
HERE = str(Path(__file__).resolve())


def _leaves_close(got, want):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            a, b = jax.random.key_data(a), jax.random.key_data(b)
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jaxpr_of_a_pmapped_step_names_inputs_and_lines_as_the_user(name):
    step, args, first, function = PROGRAMS[name]()
    view = js.jaxpr(step)(*args)
    assert view.arg_names is not None and view.arg_names[0].startswith(first)
    assert any(e.primitive == "psum" or "pmean" in e.primitive for e in view.eqns)
    here = [e for e in view.eqns if e.source is not None and e.source.file == HERE]
    assert any(e.source.function.endswith(function) for e in here)


def test_nnx_pmap_names_a_models_variables_by_their_paths_as_nnx_jit_does():
    step, args, _, _ = nnx_pmap()
    names = js.jaxpr(step)(*args).arg_names
    assert names == ("model.linear.bias", "model.linear.kernel", "x")


def test_pmap_static_broadcasted_arguments_stay_static_in_every_view():
    def layer(x, n, activation):
        return jax.lax.psum(activation(x) ** n, "i")

    p_layer = jax.pmap(layer, axis_name="i", static_broadcasted_argnums=(1, 2))
    x = jnp.ones((N, 3))
    view = js.jaxpr(p_layer)(x, 2, jnp.tanh)
    assert view.arg_names == ("x",)
    stepper = js.step(p_layer)(x, 2, jnp.tanh).run()
    np.testing.assert_allclose(
        np.asarray(stepper.result), np.asarray(p_layer(x, 2, jnp.tanh)), rtol=1e-6
    )


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_shardings_of_a_pmapped_step_lay_inputs_over_the_devices(name):
    step, args, first, _ = PROGRAMS[name]()
    program = js.shardings(step)(*args)
    assert program.inputs[0][0].startswith(first)
    # a step's non-array outputs (Equinox's activation, dropout rate) are no outputs
    # of the program
    assert program.outputs and all(spec != "None" for _, spec in program.outputs)
    assert program.mesh is not None and list(program.mesh.values()) == [N]
    assert program.collectives
    assert any(
        c.source is not None and c.source.file == HERE for c in program.collectives
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_capability_runs_on_a_pmapped_step(name):
    step, args, first, _ = PROGRAMS[name]()
    hlo = js.hlo(step)(*args)
    assert any(op.source is not None and op.source.file == HERE for op in hlo.ops)
    graph = js.graph(step)(*args)
    assert next(n.label for n in graph.nodes if n.kind == "input").startswith(first)

    stepper = js.step(step)(*args)
    assert next(iter(stepper.arg_names.values())).startswith(first)
    # what the step returns (s.result is the real call's pytree): its arrays
    _leaves_close(
        eqx.filter(stepper.run().result, eqx.is_array),
        eqx.filter(step(*args), eqx.is_array),
    )
    assert js.find_nan(step)(*args) is None

    assert js.profile(step, repeat=1)(*args).by_line
    assert js.memory(step)(*args).peak_bytes > 0
