"""``s.result`` is what the real call returns, through the libraries' wrappers:
nnx.jit and nnx.value_and_grad, eqx.filter_jit and eqx.filter_value_and_grad,
Linen's apply and Optax's update; the state nnx.jit would write back is reported,
and the user's objects are left as they were."""

from __future__ import annotations

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import jaxscope as js


def _assert_same(got, want):
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        if not hasattr(b, "dtype"):
            assert a == b
            continue
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        # op by op against XLA's fused run: float32 gradients near zero differ in
        # their last bits (2e-7 on JAX 0.9)
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.linear2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.linear2(nnx.relu(self.bn(self.linear1(x))))


def nnx_loss(model, x, y):
    return ((model(x) - y) ** 2).mean()


@nnx.jit
def nnx_train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(nnx_loss)(model, x, y)
    optimizer.update(model, grads)
    return loss


X = jnp.linspace(-1.0, 1.0, 12).reshape(3, 4)
Y = jnp.ones((3, 2))


@pytest.fixture
def nnx_state():
    model = MLP(nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)


@pytest.mark.slow
def test_nnx_jit_train_step_result_is_the_loss_and_its_updates_are_reported(nnx_state):
    model, optimizer = nnx_state
    kernel = model.linear1.kernel.get_value()
    s = js.step(nnx_train_step)(model, optimizer, X, Y).run()
    assert model.linear1.kernel.get_value() is kernel  # not applied by the stepper
    want = nnx_train_step(nnx.clone(model), nnx.clone(optimizer), X, Y)
    _assert_same(s.result, want)
    assert "model.linear1.kernel" in s.state_updates  # the step trains it
    assert "model.bn.mean" in s.state_updates  # BatchNorm's running statistics
    assert "optimizer.step" in s.state_updates
    assert all(not name.startswith("x") for name in s.state_updates)


@pytest.mark.slow
def test_nnx_value_and_grad_result_equals_the_call(nnx_state):
    model, _ = nnx_state
    grad_fn = nnx.value_and_grad(nnx_loss)
    s = js.step(grad_fn)(model, X, Y).run()
    _assert_same(s.result, grad_fn(model, X, Y))


def eqx_loss(model, x, y):
    return ((jax.vmap(model)(x) - y) ** 2).mean()


@eqx.filter_jit
def eqx_train_step(model, x, y):
    loss, grads = eqx.filter_value_and_grad(eqx_loss)(model, x, y)
    model = eqx.apply_updates(model, jax.tree.map(lambda g: -0.1 * g, grads))
    return loss, model


@pytest.mark.slow
def test_eqx_filter_jit_result_is_the_model_with_its_static_parts():
    model = eqx.nn.MLP(4, 2, 8, 2, key=jax.random.PRNGKey(0))
    s = js.step(eqx_train_step)(model, X, Y).run()
    want = eqx_train_step(model, X, Y)
    _assert_same(s.result, want)
    assert s.result[1].activation is want[1].activation  # not None, not Missing


def test_eqx_filter_value_and_grad_is_stepped_as_equinox_filters_it():
    model = eqx.nn.MLP(4, 2, 8, 2, key=jax.random.PRNGKey(0))
    grad_fn = eqx.filter_value_and_grad(eqx_loss)
    s = js.step(grad_fn)(model, X, Y).run()
    _assert_same(s.result, grad_fn(model, X, Y))


class LinenMLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(2)(nn.relu(nn.Dense(8)(x)))


def test_linen_apply_and_an_optax_update_results_equal_the_calls():
    model = LinenMLP()
    params = model.init(jax.random.PRNGKey(0), X)
    s = js.step(model.apply)(params, X).run()
    _assert_same(s.result, model.apply(params, X))
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)
    grads = jax.grad(lambda p: ((model.apply(p, X) - Y) ** 2).mean())(params)
    s = js.step(tx.update)(grads, opt_state, params).run()
    _assert_same(s.result, tx.update(grads, opt_state, params))
    assert s.state_updates == ()
