"""Sharding errors explained with the operands' shardings, never with a shape hint
when the shapes fit (the pasted fixes run in test_pasted_hints.py)."""

from __future__ import annotations

import ast
import re
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope._explain.hints import Facts, explanation
from jaxscope._explain.messages import Tracing
from jaxscope._explain.report import ErrorKind, Operand
from jaxscope._explain.site import Site

EXPLICIT = (AxisType.Explicit, AxisType.Explicit)
# The README's mesh, with the explicit axes jax.make_mesh gives on JAX 0.10; a global,
# as in a notebook, so the fixes name it.
mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=EXPLICIT)


@pytest.fixture(scope="module")
def xa():
    return jax.device_put(
        np.ones((64, 32), np.float32), NamedSharding(mesh, P("data", "model"))
    )


@pytest.fixture(scope="module")
def wa():
    return jax.device_put(
        np.ones((32, 16), np.float32), NamedSharding(mesh, P("model", None))
    )


def layer(a, w):
    return jnp.tanh(a @ w).sum(axis=0)


def _site(code: str) -> Site:
    return Site(code, ast.parse(code, mode="eval").body, None, None)


def _shape_facts(code: str, *operands: tuple[str, str]) -> Facts:
    return Facts(
        kind=ErrorKind.SHAPE,
        text="some shape message",
        site=_site(code),
        tracing=Tracing(),
        code=None,
        operands=tuple(Operand(expr=e, aval=a) for e, a in operands),
        user_frame=None,
        context=(),
    )


def test_no_shape_hint_when_the_matmul_shapes_fit():
    hint = explanation(
        _shape_facts("a @ w", ("a", "f32[64,32]"), ("w", "f32[32,16]"))
    ).hint
    assert "differ" not in hint
    assert hint == ""


def test_no_shape_hint_when_elementwise_shapes_broadcast():
    hint = explanation(
        _shape_facts("a + b", ("a", "f32[64,32]"), ("b", "f32[1,32]"))
    ).hint
    assert hint == ""


def test_a_real_shape_mismatch_keeps_its_hint():
    hint = explanation(_shape_facts("h @ w", ("h", "f32[4,3]"), ("w", "f32[4,5]"))).hint
    assert "the inner dimensions differ (3 vs 4)" in hint
    hint = explanation(_shape_facts("a + b", ("a", "f32[4,3]"), ("b", "f32[5]"))).hint
    assert "reshape or transpose" in hint


def test_contracting_dimensions_sharded_on_the_readme_mesh(catch, xa, wa):
    report = js.explain(catch(jax.jit(layer), xa, wa))
    assert report.category == "sharding"
    assert "inner dimensions" not in report.hint
    assert [o.aval for o in report.operands] == [
        "f32[64@data,32@model]",
        "f32[32@model,16]",
    ]
    assert "with a: f32[64@data,32@model], w: f32[32@model,16]" in report.message
    # The fix names the layout of the result (rows as in a) in the file's own names.
    assert "`jnp.matmul(a, w, out_sharding=NamedSharding(mesh, P('data', None)))`" in (
        report.hint
    )
    assert "across `model`" in report.hint
    assert (
        "jax.sharding.reshard(a, NamedSharding(mesh, P('data', None)))" in report.hint
    )
    # Each operand's tile, as js.sharding draws it.
    assert (
        "a on the 8 devices: a f32[16,16] tile each (dimension 0 over data, dimension 1 over model)"
        in (report.jax_context)
    )
    assert "w on the 8 devices: a f32[16,16] tile each (dimension 0 over model)" in (
        report.jax_context
    )


def test_the_contracting_fix_runs_under_a_mesh_context(catch, xa, wa):
    """Under ``jax.set_mesh`` a bare spec is enough, and the fix says so."""
    with (
        jax.sharding.use_mesh(mesh)
        if hasattr(jax.sharding, "use_mesh")
        else jax.set_mesh(mesh)
    ):
        report = js.explain(catch(jax.jit(layer), xa, wa))
        fixed = next(c for c in re.findall(r"`([^`]+)`", report.hint) if "matmul" in c)
        assert fixed == "jnp.matmul(a, w, out_sharding=P('data', None))"
        out = jax.jit(lambda a, w: eval(fixed, globals(), {"a": a, "w": w}))(xa, wa)
    assert out.shape == (64, 16)


def test_incompatible_layouts_name_both_shardings(catch, xa):
    ya = jax.device_put(
        np.ones((64, 32), np.float32), NamedSharding(mesh, P("model", "data"))
    )
    report = js.explain(catch(jax.jit(lambda a, b: a + b), xa, ya))  # <- error
    assert report.category == "sharding"
    assert "a is f32[64@data,32@model] and b is f32[64@model,32@data]" in report.hint
    assert (
        "a + jax.sharding.reshard(b, NamedSharding(mesh, P('data', 'model')))"
        in report.hint
    )


def test_unknown_mesh_axis_in_a_spec_suggests_the_close_name(catch):
    report = js.explain(catch(lambda: NamedSharding(mesh, P("dat", None))))
    assert report.category == "sharding"
    assert (
        "'dat' is not an axis of the mesh, whose axes are 'data', 'model'"
        in report.hint
    )
    assert "did you mean 'data'?" in report.hint


def test_unknown_mesh_axis_in_shard_map_specs(catch, xa):
    body = jax.shard_map(
        lambda x: x, mesh=mesh, in_specs=P("batch"), out_specs=P("batch")
    )
    report = js.explain(catch(jax.jit(body), xa))
    assert report.category == "sharding"
    assert (
        "'batch' is not an axis of the mesh, whose axes are 'data', 'model'"
        in report.hint
    )


def test_shard_map_spec_that_does_not_divide(catch):
    body = jax.shard_map(
        lambda x: x, mesh=mesh, in_specs=P("data"), out_specs=P("data")
    )
    report = js.explain(catch(jax.jit(body), jnp.ones(6)))
    assert report.category == "sharding"
    assert "has size 6, which `data` (4 devices) cannot split evenly: pad it to 8" in (
        report.hint
    )
    assert "mesh axes that divide 6: model" in report.hint


def test_duplicate_axis_in_a_spec(catch):
    report = js.explain(catch(NamedSharding, mesh, P("data", "data")))
    assert report.category == "sharding"
    assert "`data` is given twice" in report.hint


@pytest.mark.skipif(
    jax.__version_info__ < (0, 10),
    reason="jax 0.9 does not check in_specs against the argument's sharding: this "
    "program fails later, on out_specs' replication, and gets that hint",
)
def test_shard_map_in_specs_that_disagree_with_the_input(catch, xa):
    body = partial(jax.shard_map, mesh=mesh, in_specs=P("data", None), out_specs=P())
    report = js.explain(catch(jax.jit(body(lambda x: x.sum())), xa))
    assert report.category == "sharding"
    assert "in_specs=P('data', 'model')" in report.hint


def test_the_long_sharding_repr_in_jax_message_is_cut_to_its_spec(catch, xa):
    ya = jax.device_put(
        np.ones((64, 32), np.float32), NamedSharding(mesh, P("model", "data"))
    )
    report = js.explain(catch(jax.jit(lambda a, b: jnp.concatenate([a, b])), xa, ya))
    assert report.category == "sharding"
    assert "AbstractMesh" not in report.message
    assert "Got shardings P('data', 'model'), P('model', 'data')" in report.message
    assert report.original_message.count("AbstractMesh") == 2


def test_a_collective_over_an_axis_the_mesh_lacks(catch, xa):
    """Inside shard_map JAX raises a bare AssertionError; the report names the axis,
    the mesh's axes and the close one."""

    def body(x):
        return jax.lax.psum(x, "dta")  # <- error

    f = jax.shard_map(body, mesh=mesh, in_specs=P("data", "model"), out_specs=P())
    report = js.explain(catch(jax.jit(f), xa))
    assert report.category == "sharding"
    assert report.message.startswith("unknown mesh axis 'dta' in a collective")
    assert (
        "'dta' is not an axis of the mesh, whose axes are 'data', 'model'"
        in report.hint
    )
    assert "did you mean 'data'?" in report.hint
