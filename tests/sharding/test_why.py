"""Why each collective is there: every explanation is checked against the shardings
the test gave its operands (``typed`` writes them as JAX types them)."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope._sharding.mesh import parse_spec, sharded_type, spec_text


def typed(x, spec=None):
    """``f32[64@data,32@model]`` for an array laid out as ``spec`` (its own)."""
    spec = parse_spec(spec_text(spec if spec is not None else x.sharding.spec), x.ndim)
    return sharded_type("f32", x.shape, spec)


def line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def layer(x, w):
    y = jnp.tanh(x @ w)  # MATMUL
    return jnp.sum(y, axis=0)  # SUM


@pytest.fixture(scope="module")
def tensor_parallel(mesh):
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
    w = jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("model", None)))
    return x, w, js.shardings(layer)(x, w)


def test_a_matmul_over_a_split_contracting_dimension_is_an_all_reduce(tensor_parallel):
    x, w, view = tensor_parallel
    (matmul,) = [c for c in view.collectives if c.op_name.endswith("dot_general")]
    reason = matmul.reason
    assert reason.op == "dot"
    assert (
        reason.operands
        == (typed(x), typed(w))
        == ("f32[64@data,32@model]", "f32[32@model,16]")
    )
    assert reason.axes == ("model",) == matmul.axes
    assert reason.dims == (1,)
    assert reason.asked == ""
    line = line_of(layer, "# MATMUL")
    assert reason.text.startswith(
        f"`y = jnp.tanh(x @ w)  # MATMUL` at tests/sharding/test_why.py:{line} contracts "
        "over `model`, which splits both operands (f32[64@data,32@model] and "
        "f32[32@model,16])"
    )
    assert reason.text.endswith("1 KiB per device per step")


def test_a_sum_over_a_split_dimension_is_an_all_reduce(tensor_parallel):
    *_, view = tensor_parallel
    (total,) = [c for c in view.collectives if c.op_name.endswith("reduce_sum")]
    # the matmul's result keeps x's rows: split over data
    assert total.reason.operands == (typed(jnp.ones((64, 16)), P("data", None)),)
    assert total.reason.dims == (0,)
    assert total.reason.axes == ("data",)
    assert (
        "reduces dimension 0 of f32[64@data,16], split over `data`" in total.reason.text
    )


def test_the_view_says_why(tensor_parallel):
    *_, view = tensor_parallel
    text = " ".join(str(view).split())
    assert "why all-reduce: `y = jnp.tanh(x @ w) # MATMUL` at" in text
    html = view._repr_mimebundle_()["text/html"]
    assert "contracts over `model`" in html


def test_fsdp_weights_split_on_the_contracting_dimension_are_gathered(mesh):
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", None)))
    w = jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("data", None)))
    view = js.shardings(lambda x, w: jnp.tanh(x @ w))(x, w)
    (gather,) = [c for c in view.collectives if c.kind == "all-gather"]
    assert gather.reason.operands == (typed(w),)  # the weight, not the batch
    assert gather.reason.dims == (0,)
    assert (
        "needs f32[32@data,16] whole along dimension 0, which is split over `data`"
        in (gather.reason.text)
    )


def test_a_psum_in_shard_map_is_asked_for(mesh):
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))

    def body(x):
        return jax.lax.psum(x, "data")  # PSUM

    f = jax.shard_map(
        body, mesh=mesh, in_specs=P("data", "model"), out_specs=P(None, "model")
    )
    (c,) = js.shardings(f)(x).collectives
    assert c.reason.asked == "psum"
    assert (
        f"test_why.py:{line_of(body, '# PSUM')} asks for it (psum): an all-reduce over `data`"
        in (c.reason.text)
    )


def test_two_layouts_combined_are_resharded(mesh):
    a = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", None)))
    b = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P(None, "data")))
    view = js.shardings(lambda a, b: (a + b).sum(0))(a, b)
    (moved,) = [
        c for c in view.collectives if c.kind in ("all-to-all", "collective-permute")
    ]
    assert moved.reason.operands == (typed(b),)
    assert moved.reason.result == typed(a)
    assert "(resharding)" in moved.reason.text
    assert moved.reason.suggestion


def test_merged_gradient_all_reduces_name_every_line(mesh):
    def predict(params, x):
        h = jax.nn.relu(x @ params["w1"])  # L1
        return h @ params["w2"]  # L2

    @jax.jit
    def step(params, x):
        grads = jax.grad(lambda p: predict(p, x).sum())(params)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

    params = jax.device_put(
        {"w1": jnp.ones((16, 32)), "w2": jnp.ones((32, 8))}, NamedSharding(mesh, P())
    )
    x = jax.device_put(jnp.ones((64, 16)), NamedSharding(mesh, P("data", None)))
    view = js.shardings(step)(params, x)
    reduces = [c for c in view.collectives if c.kind == "all-reduce"]
    assert reduces and all(c.axes == ("data",) for c in reduces)
    lines = {loc.line for c in reduces for loc in c.reason.lines}
    assert {line_of(predict, "# L1"), line_of(predict, "# L2")} <= lines
    for c in reduces:
        # each weight gradient contracts over the batch, which data splits
        assert "over `data`" in c.reason.text


def test_per_device_shapes_and_collectives_by_mesh_axis(tensor_parallel):
    *_, view = tensor_parallel
    dot = next(op for op in view.ops if op.opcode == "dot")
    assert (dot.spec, view.local_shape(dot)) == ("P('data', None)", "f32[16,16]")
    assert {axes: len(cs) for axes, cs in view.by_axis.items()} == {
        ("model",): 1,
        ("data",): 1,
    }
    text = str(view)
    assert "per mesh axis" in text and "model: 1 all-reduce, 1 KiB" in text
    assert "per device" in text
