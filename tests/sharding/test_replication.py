"""Silent replication: large inputs held whole over a mesh axis that could split them.
Found where it is certain; never on correctly sharded programs (data parallel, FSDP,
tensor parallel), whatever their size."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js

BIG = (512, 1024)  # 2 MiB of f32: above the 1 MiB threshold


def sgd(params, x):
    grads = jax.grad(lambda p: jnp.tanh(x @ p["w"]).sum())(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


@pytest.fixture(scope="module")
def data_mesh(devices):
    return jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))


def test_an_axis_that_splits_nothing_is_found(mesh):
    params = jax.device_put({"w": jnp.ones(BIG)}, NamedSharding(mesh, P()))
    x = jax.device_put(jnp.ones((64, 512)), NamedSharding(mesh, P("data", None)))
    view = js.shardings(sgd)(params, x)
    (found,) = view.replication
    assert (found.name, found.axis, found.spec) == ("params['w']", "model", "P()")
    assert found.wasted_bytes == 1 << 20  # 2 MiB whole, 1 MiB each when split in two
    assert found.suggested == "P(None, 'model')"
    assert "no array of the program is split over `model`" in found.why
    assert "replicated where a mesh axis could split it" in str(view)


def test_optimizer_state_left_whole_next_to_its_sharded_parameter(mesh):
    opt = optax.adam(1e-3)
    params = jax.device_put({"w": jnp.ones(BIG)}, NamedSharding(mesh, P(None, "model")))
    state = jax.device_put(opt.init(params), NamedSharding(mesh, P()))
    x = jax.device_put(jnp.ones((64, 512)), NamedSharding(mesh, P("data", None)))

    def step(params, state, x):
        grads = jax.grad(lambda p: jnp.tanh(x @ p["w"]).sum())(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    view = js.shardings(step)(params, state, x)
    assert [f.name for f in view.replication] == [
        "state[0].mu['w']",
        "state[0].nu['w']",
    ]
    for found in view.replication:
        assert found.suggested == "P(None, 'model')"  # the parameter's own spec
        assert "params['w'], of the same shape, is split over `model`" in found.why
    # the fix: the state laid out as the parameter is; then nothing is found
    fixed = jax.tree.map(
        lambda s: jax.device_put(
            s, NamedSharding(mesh, P(None, "model") if s.ndim else P())
        ),
        opt.init(params),
    )
    assert js.shardings(step)(params, fixed, x).replication == []


def test_no_finding_on_data_parallel_jax(data_mesh):
    params = jax.device_put({"w": jnp.ones(BIG)}, NamedSharding(data_mesh, P()))
    x = jax.device_put(jnp.ones((64, 512)), NamedSharding(data_mesh, P("data", None)))
    assert js.shardings(sgd)(params, x).replication == []


class NnxMLP(nnx.Module):
    def __init__(self, rngs, kernel_axes=(None, None)):
        init = nnx.with_partitioning(nnx.initializers.lecun_normal(), kernel_axes)
        self.w1 = nnx.Linear(512, 1024, kernel_init=init, rngs=rngs)
        self.w2 = nnx.Linear(1024, 8, rngs=rngs)

    def __call__(self, x):
        return self.w2(jax.nn.relu(self.w1(x)))


@nnx.jit
def nnx_step(model, x):
    loss, grads = nnx.value_and_grad(lambda m: m(x).mean())(model)
    return loss, grads


def _sharded_model(mesh, kernel_axes):
    with (
        jax.sharding.use_mesh(mesh)
        if hasattr(jax.sharding, "use_mesh")
        else jax.set_mesh(mesh)
    ):
        model = NnxMLP(nnx.Rngs(0), kernel_axes)
        state = nnx.state(model)
        specs = nnx.get_partition_spec(state)
        nnx.update(
            model,
            jax.device_put(
                state, jax.tree.map(lambda s: NamedSharding(mesh, s), specs)
            ),
        )
    return model


@pytest.mark.parametrize(
    "kernel_axes", [(None, None), ("data", None)], ids=["dp", "fsdp"]
)
def test_no_finding_on_nnx_data_parallel_and_fsdp(data_mesh, kernel_axes):
    model = _sharded_model(data_mesh, kernel_axes)
    x = jax.device_put(jnp.ones((64, 512)), NamedSharding(data_mesh, P("data", None)))
    view = js.shardings(nnx_step)(model, x)
    assert any(name.startswith("model.w1") for name, _ in view.inputs)
    assert view.replication == []


def test_no_finding_on_linen_data_parallel(data_mesh):
    model = nn.Dense(1024)
    x = jax.device_put(jnp.ones((64, 512)), NamedSharding(data_mesh, P("data", None)))
    params = jax.device_put(
        model.init(jax.random.key(0), x), NamedSharding(data_mesh, P())
    )
    view = js.shardings(jax.jit(model.apply))(params, x)
    assert view.replication == []


def test_no_finding_on_tensor_parallel(mesh):
    w1 = jax.device_put(jnp.ones(BIG), NamedSharding(mesh, P(None, "model")))
    w2 = jax.device_put(jnp.ones(BIG[::-1]), NamedSharding(mesh, P("model", None)))
    x = jax.device_put(jnp.ones((64, 512)), NamedSharding(mesh, P("data", None)))
    view = js.shardings(lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2)(x, w1, w2)
    assert view.replication == []
