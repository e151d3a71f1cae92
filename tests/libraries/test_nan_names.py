"""A NaN already in a parameter is named as the user names the parameter, through
the wrappers of nnx.jit and eqx.filter_jit (never ``input 3``)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import jaxscope as js


class Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(3, 4, rngs=rngs)
        self.final_norm = nnx.LayerNorm(4, rngs=rngs)

    def __call__(self, x):
        return self.final_norm(self.linear(x))


def loss_fn(model, x):
    return (model(x) ** 2).mean()


@nnx.jit
def train_step(model, optimizer, x):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x)
    optimizer.update(grads)
    return loss


def test_nan_parameter_of_a_model_its_optimizer_also_holds_is_named_by_its_path():
    # nnx.ModelAndOptimizer holds the model: nnx.jit passes the model's variables
    # once, with the first argument that holds them.
    model = Net(nnx.Rngs(0))
    optimizer = nnx.ModelAndOptimizer(model, optax.adam(1e-3))
    model.final_norm.scale[...] = model.final_norm.scale[...].at[1].set(jnp.nan)
    found = js.find_nan(train_step)(model, optimizer, jnp.ones((2, 3)))
    assert isinstance(found, js.NanInInput)
    assert found.path == "model.final_norm.scale"
    names = js.jaxpr(train_step)(model, optimizer, jnp.ones((2, 3))).arg_names
    assert names is not None and len(names) == len(set(names))
    assert any(n.startswith("optimizer.opt_state") for n in names)
    assert not any(n.startswith("optimizer.model.") for n in names)


def test_nan_parameter_under_eqx_filter_jit_is_named_by_its_path():
    mlp = eqx.nn.MLP(2, 1, 4, 1, key=jax.random.key(0))
    bad = eqx.tree_at(lambda m: m.layers[1].bias, mlp, jnp.array([np.nan]))

    @eqx.filter_jit
    def forward(model, x):
        return model(x)

    found = js.find_nan(forward)(bad, jnp.ones(2))
    assert isinstance(found, js.NanInInput) and found.path == "model.layers[1].bias"


class LogScaled(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.log_base = nnx.Param(jnp.array([1.0, -1.0, 2.0]))

    def __call__(self, x):
        return self.linear(x) * jnp.log(self.log_base[...])


def test_a_nan_made_from_a_parameter_names_its_input_by_the_parameters_path():
    @nnx.jit
    def forward(model, x):
        return model(x).sum()

    found = js.find_nan(forward)(LogScaled(nnx.Rngs(0)), jnp.ones((2, 3)))
    assert type(found).__name__ == "NanFinding" and found.primitive == "log"
    assert [v.user_name for v in found.inputs] == ["model.log_base"]
    assert found.inputs[0].label == f"model.log_base ({found.inputs[0].name})"


def test_nnx_jit_static_arguments_are_left_out_of_the_stepped_inputs():
    @nnx.jit(static_argnums=2, static_argnames="scale")
    def power_loss(model, x, n, scale=1.0):
        return scale * (model(x) ** n).mean()

    model = Net(nnx.Rngs(0))
    x = jnp.ones((2, 3))
    stepper = js.step(power_loss)(model, x, 2, scale=3.0).run()
    np.testing.assert_allclose(  # the loss: the last leaf of nnx.jit's outputs
        np.asarray(jax.tree_util.tree_leaves(stepper.result)[-1]),
        np.asarray(power_loss(model, x, 2, scale=3.0)),
        rtol=1e-6,
    )
    assert list(stepper.arg_names.values())[-1] == "x"
    model.final_norm.scale[...] = model.final_norm.scale[...].at[0].set(jnp.nan)
    found = js.find_nan(power_loss)(model, x, 2, scale=3.0)
    assert isinstance(found, js.NanInInput) and found.path == "model.final_norm.scale"
