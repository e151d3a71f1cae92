"""The sharding views name lines as every other view does: the innermost frame in the
user's own code (a library's frame kept as detail), op names shortened, bookkeeping
ops folded into a count."""

from __future__ import annotations

import re

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope._hlo.parse import short_op_name


def line_of(fn, marker):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def predict(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    last = params[-1]
    return x @ last["w"] + last["b"]


def loss_fn(params, x, y):
    logits = predict(params, x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()  # LOSS


@jax.jit
def sgd_step(params, x, y, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    return params, loss


@pytest.fixture(scope="module")
def mlp_view(mesh):
    keys = jax.random.split(jax.random.key(0), 2)
    params = [
        {"w": jax.random.normal(keys[0], (16, 32)) * 0.1, "b": jnp.zeros(32)},
        {"w": jax.random.normal(keys[1], (32, 10)) * 0.1, "b": jnp.zeros(10)},
    ]
    params = jax.device_put(params, NamedSharding(mesh, P()))
    x = jax.device_put(jnp.ones((64, 16)), NamedSharding(mesh, P("data", None)))
    y = jax.device_put(jnp.zeros(64, jnp.int32), NamedSharding(mesh, P("data")))
    return js.shardings(sgd_step)(params, x, y, 0.1)


def test_an_optax_loss_is_attributed_to_the_user_line_that_calls_it(mlp_view):
    files = {op.source.file for op in mlp_view.ops if op.source is not None}
    assert files == {__file__}
    loss_line = line_of(loss_fn, "# LOSS")
    on_loss = mlp_view.ops_by_line[(__file__, loss_line)]
    assert len(on_loss) > 10
    # optax's own frame stays as detail
    assert any("optax" in f.file for op in on_loss for f in op.frames), (
        "the library frame is kept in frames"
    )


def test_collective_op_names_are_short_and_say_backward(mlp_view):
    (grad,) = mlp_view.collectives
    text = str(mlp_view)
    html = mlp_view._repr_mimebundle_()["text/html"]
    assert grad.op_name.startswith("jit(sgd_step)/")  # the record keeps XLA's name
    assert "jit(sgd_step)" not in text and "jit(sgd_step)" not in html
    # XLA names the all-reduce after the ops it merged (reduce_sum and dot_general
    # on JAX 0.10, reduce_sum alone on 0.9); the short name keeps the gradient mark
    short = short_op_name(grad.op_name)
    assert short.startswith("reduce_sum") and "backward" in short
    # (the displayed markup carries the view's layout as style attributes)
    assert re.search(rf"<td[^>]*>{re.escape(short)}</td>", html)


def test_per_line_summary_uses_the_short_path(mlp_view):
    assert mlp_view.summary().startswith("line tests/sharding/test_lines.py:")


def test_bookkeeping_ops_are_folded_into_a_count(mlp_view):
    text = str(mlp_view)
    assert " parameter " not in text
    assert (
        "+ 7 bookkeeping ops not listed (parameter 7): all=True / --all lists them"
        in text
    )
    assert "bookkeeping" in mlp_view._repr_mimebundle_()["text/html"]


def test_all_lists_every_op(mesh):
    x = jax.device_put(jnp.ones((64, 16)), NamedSharding(mesh, P("data", None)))
    view = js.shardings(lambda x: jnp.tanh(x).sum(), all=True)(x)
    assert "bookkeeping" not in str(view)
    assert "parameter" in str(view)
    assert view.shown_ops == view.ops


def test_all_must_be_a_bool():
    with pytest.raises(ValueError, match="all='yes' must be True or False"):
        js.shardings(jnp.tanh, all="yes")


class LinenMLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        init = nn.initializers.lecun_normal()
        h = nn.Dense(32, kernel_init=nn.with_partitioning(init, (None, "model")))(x)
        h = nn.relu(h)
        rows = nn.with_partitioning(init, ("model", None))
        return nn.Dense(8, kernel_init=rows)(h)  # OUT


def test_a_linen_layer_collective_is_on_the_user_line_calling_the_layer(mesh):
    model = LinenMLP()
    x = jax.device_put(jnp.ones((64, 16)), NamedSharding(mesh, P("data", None)))
    abstract = jax.eval_shape(model.init, jax.random.key(0), x)
    specs = nn.get_partition_spec(abstract)
    shardings = jax.tree.map(lambda s: NamedSharding(mesh, s), specs)
    params = jax.jit(model.init, out_shardings=shardings)(jax.random.key(0), x)
    view = js.shardings(jax.jit(model.apply))(params, x)
    assert [name for name, _ in view.inputs][-2:] == [
        "variables['params']['Dense_1']['kernel'].value",
        "args[1]",
    ]
    reduces = [c for c in view.collectives if c.kind == "all-reduce"]
    assert reduces
    out_line = line_of(LinenMLP.__call__, "# OUT")
    assert {(c.source.file, c.source.line) for c in reduces} == {(__file__, out_line)}
    assert any("flax" in f.file for f in reduces[0].frames)


def test_an_equinox_layer_collective_is_on_the_user_line_calling_the_layer(mesh):
    linear = eqx.nn.Linear(32, 8, key=jax.random.key(0))
    linear = eqx.filter_shard(linear, NamedSharding(mesh, P()))
    weight = jax.device_put(linear.weight, NamedSharding(mesh, P(None, "model")))
    linear = eqx.tree_at(lambda m: m.weight, linear, weight)
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))

    @eqx.filter_jit
    def forward(model, x):
        return jax.vmap(model)(x)  # CALL

    view = js.shardings(forward)(linear, x)
    reduces = [c for c in view.collectives if c.kind == "all-reduce"]
    assert reduces
    call = line_of(forward, "# CALL")
    assert {(c.source.file, c.source.line) for c in reduces} == {(__file__, call)}
    assert any("equinox" in f.file for f in reduces[0].frames)


class TwoLayers(nnx.Module):
    def __init__(self, rngs):
        init = nnx.initializers.lecun_normal()
        cols = nnx.with_partitioning(init, (None, "model"))
        rows = nnx.with_partitioning(init, ("model", None))
        self.w1 = nnx.Param(cols(rngs.params(), (16, 32)))
        self.w2 = nnx.Param(rows(rngs.params(), (32, 8)))

    def __call__(self, x):
        return jax.nn.relu(x @ self.w1) @ self.w2  # CALL


@nnx.jit
def nnx_loss(model, x):
    return model(x).sum()


def test_nnx_jit_inputs_and_outputs_in_the_user_names(mesh):
    use_mesh = getattr(jax.sharding, "use_mesh", None) or jax.set_mesh
    with use_mesh(mesh):
        model = TwoLayers(nnx.Rngs(0))
        state = nnx.state(model)
        specs = nnx.get_partition_spec(state)
        nnx.update(
            model,
            jax.device_put(
                state, jax.tree.map(lambda s: NamedSharding(mesh, s), specs)
            ),
        )
    x = jax.device_put(jnp.ones((64, 16)), NamedSharding(mesh, P("data", None)))
    view = js.shardings(nnx_loss)(model, x)
    assert [name for name, _ in view.inputs] == ["model.w1", "model.w2", "x"]
    assert [name for name, _ in view.outputs] == [
        "model.w1 (updated)",
        "model.w2 (updated)",
        "out",
    ]
    (tp,) = [c for c in view.collectives if c.axes == ("model",)]
    assert tp.source.line == line_of(TwoLayers.__call__, "# CALL")
