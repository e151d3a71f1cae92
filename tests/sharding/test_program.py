"""js.shardings on real compiled programs; collectives checked against XLA's HLO text."""

from __future__ import annotations

import inspect
import re

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope._exceptions import InvalidCallError, TraceError


def line_of(fn, marker):
    """The line number of the source line of ``fn`` containing ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(f"{marker} not in {fn.__name__}")


def hlo_count(fn, args, opcode):
    text = jax.jit(fn).lower(*args).compile().as_text()
    return len(re.findall(rf"= \S+ {re.escape(opcode)}\(", text))


def layer(x, w):
    y = jnp.tanh(x @ w)  # MATMUL
    y = jax.lax.with_sharding_constraint(y, P("data", None))  # CONSTRAINT
    return jnp.sum(y, axis=0)  # SUM


@pytest.fixture(scope="module")
def layer_args(mesh):
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
    w = jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("model", None)))
    return x, w


@pytest.fixture(scope="module")
def layer_view(mesh, layer_args):
    with (
        jax.sharding.use_mesh(mesh)
        if hasattr(jax.sharding, "use_mesh")
        else jax.set_mesh(mesh)
    ):
        return js.shardings(layer)(*layer_args)


def test_device_put_args_and_constraint_give_inputs_outputs(layer_view):
    assert layer_view.inputs == [("x", "P('data', 'model')"), ("w", "P('model', None)")]
    assert layer_view.outputs == [("out", "P()")]
    assert layer_view.mesh == {"data": 4, "model": 2}
    assert layer_view.num_devices == 8


def test_collectives_match_the_compiled_hlo(mesh, layer_args, layer_view):
    with (
        jax.sharding.use_mesh(mesh)
        if hasattr(jax.sharding, "use_mesh")
        else jax.set_mesh(mesh)
    ):
        expected = hlo_count(layer, layer_args, "all-reduce")
    assert expected == 2
    assert layer_view.count("all-reduce") == expected
    assert {c.kind for c in layer_view.collectives} == {"all-reduce"}


def test_collectives_map_to_source_lines_and_mesh_axes(layer_view):
    by_line = {c.source.line: c for c in layer_view.collectives}
    matmul, total = line_of(layer, "# MATMUL"), line_of(layer, "# SUM")
    assert set(by_line) == {matmul, total}
    # the contracting dim is sharded over 'model': partial sums are all-reduced over it
    assert by_line[matmul].axes == ("model",)
    assert by_line[matmul].bytes == 16 * 16 * 4
    assert by_line[matmul].replica_groups == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert by_line[total].axes == ("data",)
    assert by_line[total].source.function == "layer"
    assert by_line[total].source.file == __file__
    assert set(layer_view.by_line) == {(__file__, matmul), (__file__, total)}


def test_per_line_summary(layer_view):
    rows = layer_view.line_summary
    assert rows[0].counts == {"all-reduce": 1}
    assert rows[0].bytes == 1024
    assert f":{line_of(layer, '# MATMUL')}: 1 all-reduce, 1 KiB" in layer_view.summary()


def test_op_shardings_after_propagation(layer_view):
    ops = {o.op_name.rsplit("/", 1)[-1]: o for o in layer_view.ops}
    assert ops["dot_general"].spec == "P('data', None)"
    assert ops["dot_general"].shape.startswith("f32[64,16]")
    assert ops["dot_general"].source.line == line_of(layer, "# MATMUL")
    assert ops["sharding_constraint"].source.line == line_of(layer, "# CONSTRAINT")
    constraint_line = (__file__, line_of(layer, "# CONSTRAINT"))
    assert [o.opcode for o in layer_view.ops_by_line[constraint_line]] == ["copy"]
    params = [o for o in layer_view.ops if o.opcode == "parameter"]
    assert [o.spec for o in params] == ["P('data', 'model')", "P('model', None)"]


def test_jit_in_and_out_shardings_with_pytree_and_keyword_names(mesh):
    data = NamedSharding(mesh, P("data"))
    repl = NamedSharding(mesh, P())

    def step(params, batch, scale):
        return {"loss": jnp.sum(batch @ params["w"]) * scale, "h": batch @ params["w"]}

    f = jax.jit(
        step,
        in_shardings=({"w": repl}, data),
        out_shardings={"loss": repl, "h": data},
        static_argnums=2,
    )
    v = js.shardings(f)({"w": jnp.ones((8, 4))}, jnp.ones((16, 8)), 2.0)
    assert v.inputs == [("params['w']", "P()"), ("batch", "P('data')")]
    assert dict(v.outputs)["out['h']"] == "P('data')"
    assert dict(v.outputs)["out['loss']"] == "P()"
    assert v.count("all-reduce") == 1  # the batch sum


def test_keyword_arguments_are_named(mesh):
    x = jax.device_put(jnp.ones((8, 2)), NamedSharding(mesh, P("data")))
    v = js.shardings(lambda a, *, b: a + b)(x, b=x)
    assert [p for p, _ in v.inputs] == ["a", "b"]


def test_static_argnums_are_skipped_in_input_names(mesh):
    def f(n, x):
        return x * n

    v = js.shardings(f, static_argnums=0)(3, jnp.ones(8))
    assert [p for p, _ in v.inputs] == ["x"]


def test_a_jitted_functions_own_static_args_are_skipped_in_input_names():
    def f(n, x):
        return x * n

    v = js.shardings(jax.jit(f, static_argnums=0))(3, jnp.ones(8))
    assert [p for p, _ in v.inputs] == ["x"]


def shmap_body(a):
    s = jax.lax.psum(a, "i")  # PSUM
    g = jax.lax.all_gather(a, "i", tiled=True)  # GATHER
    p = jax.lax.ppermute(a, "i", [(k, (k + 1) % 8) for k in range(8)])  # PERMUTE
    t = jax.lax.all_to_all(a.reshape(8, -1), "i", 0, 0, tiled=True)  # ALLTOALL
    r = jax.lax.psum_scatter(a, "i", tiled=True)  # SCATTER
    return s, g, p, t, r


def test_shard_map_collectives_of_every_kind(mesh1d):
    f = jax.jit(
        jax.shard_map(
            shmap_body,
            mesh=mesh1d,
            in_specs=P("i"),
            out_specs=(P(), P(), P("i"), P("i"), P("i")),
            check_vma=False,
        )
    )
    x = jax.device_put(jnp.ones(512), NamedSharding(mesh1d, P("i")))
    v = js.shardings(f)(x)
    text = jax.jit(f).lower(x).compile().as_text()
    for kind, marker in [
        ("all-reduce", "# PSUM"),
        ("all-gather", "# GATHER"),
        ("collective-permute", "# PERMUTE"),
        ("all-to-all", "# ALLTOALL"),
        ("reduce-scatter", "# SCATTER"),
    ]:
        found = [c for c in v.collectives if c.kind == kind]
        assert len(found) == len(re.findall(rf"= .*? {kind}\(", text)), kind
        assert found[0].source.line == line_of(shmap_body, marker), kind
    gather = next(c for c in v.collectives if c.kind == "all-gather")
    assert gather.bytes == 512 * 4  # the gathered result on each device
    assert gather.axes == ("i",)
    permute = next(c for c in v.collectives if c.kind == "collective-permute")
    assert permute.replica_groups[0] == (0, 1)
    assert permute.axes == ("i",)
    assert v.inputs == [("a", "P('i')")]
    # inside shard_map the body is manually partitioned
    manual = [o for o in v.ops if o.spec == "manual"]
    assert any(o.opcode == "all-reduce" for o in manual)
    assert any(
        o.source and o.source.line == line_of(shmap_body, "# PSUM") for o in manual
    )


def test_pmap_program(devices):
    pf = jax.pmap(lambda a: jax.lax.psum(a * 2, "b"), axis_name="b")
    x = jnp.ones((8, 4))
    v = js.shardings(pf)(x)
    assert v.count("all-reduce") == 1
    assert v.num_devices == 8
    # jax 0.9 reports pmap inputs as GSPMD shardings: shown in the mesh's terms too
    assert v.inputs[0][0] == "a" and v.inputs[0][1] in ("P('b')", "P('b', None)")
    assert v.mesh == {"b": 8}
    assert v.collectives[0].axes == ("b",)


def test_compiles_but_never_runs_the_function(mesh, layer_args):
    ran = []

    def f(x, w):
        jax.debug.callback(lambda: ran.append(1))
        return layer(x, w)

    with (
        jax.sharding.use_mesh(mesh)
        if hasattr(jax.sharding, "use_mesh")
        else jax.set_mesh(mesh)
    ):
        v = js.shardings(f)(*layer_args)
    assert v.count("all-reduce") == 2
    assert ran == []


def test_single_device_program_has_no_collectives():
    v = js.shardings(lambda x: jnp.sin(x) * 2)(jnp.ones(4))
    assert v.collectives == []
    assert v.num_devices == 1
    assert v.summary() == ""


def test_collective_inside_scan_body_is_listed_once(mesh1d):
    def body(c, a):
        return c + jax.lax.psum(a, "i"), None

    def f(xs):
        return jax.lax.scan(body, jnp.zeros(4), xs)[0]

    g = jax.jit(jax.shard_map(f, mesh=mesh1d, in_specs=P(None, "i"), out_specs=P("i")))
    xs = jax.device_put(jnp.ones((5, 32)), NamedSharding(mesh1d, P(None, "i")))
    v = js.shardings(g)(xs)
    text = jax.jit(g).lower(xs).compile().as_text()
    assert v.count("all-reduce") == len(re.findall(r"= \S+ all-reduce\(", text)) >= 1
    (ar,) = [c for c in v.collectives if "while/body" in c.op_name]
    assert ar.runs == 5  # one per scan step, from XLA's known trip count
    assert ar.total_bytes == 5 * ar.bytes
    assert v.line_summary[0].bytes == sum(c.total_bytes for c in v.collectives)
    assert "x5" in str(v)


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(InvalidCallError, match="expects a callable"):
        js.shardings(3)
    with pytest.raises(InvalidCallError, match=r"x\[0\] is a str"):
        js.shardings(lambda x: x)(["no"])
    with pytest.raises(TraceError, match="raised TypeError") as err:
        js.shardings(lambda x: x + "s")(jnp.ones(2))
    assert "\n" not in str(err.value)
    with pytest.raises(Exception, match="kind='all-sum' is not a collective kind"):
        js.shardings(lambda x: x)(jnp.ones(2)).count("all-sum")


def test_explicit_axes_program_sum_reduces_over_both_axes(devices):
    mesh = jax.make_mesh((4, 2), ("data", "model"))  # Explicit axes
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
    v = js.shardings(lambda a: jnp.sum(a))(x)  # SUMALL
    assert v.count("all-reduce") == hlo_count(lambda a: jnp.sum(a), (x,), "all-reduce")
    assert sorted(c.axes for c in v.collectives) == [("data",), ("model",)]


def test_out_shardings_resharding_is_an_all_gather_without_a_line(mesh):
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
    f = jax.jit(lambda a: a * 2, out_shardings=NamedSharding(mesh, P()))
    v = js.shardings(f)(x)
    gathers = [c for c in v.collectives if c.kind == "all-gather"]
    assert gathers and len(gathers) == v.hlo_text.count(" all-gather(")
    assert v.outputs == [("out", "P()")]
    assert (
        max(c.bytes for c in gathers) == 64 * 32 * 4
    )  # the full array lands everywhere
    assert "unknown line: " in v.summary()


def test_device_ids_map_logical_ids_to_the_mesh_devices(devices):
    order = [devices[i] for i in (7, 6, 5, 4, 3, 2, 1, 0)]
    mesh = jax.sharding.Mesh(
        __import__("numpy").array(order).reshape(4, 2), ("data", "model")
    )
    x = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("data", "model")))
    v = js.shardings(lambda a: jnp.sum(a, axis=1))(x)
    assert v.device_ids == (7, 6, 5, 4, 3, 2, 1, 0)
    (ar,) = [c for c in v.collectives if c.kind == "all-reduce"]
    assert ar.axes == ("model",)
    physical = {frozenset(v.device_ids[i] for i in g) for g in ar.replica_groups}
    assert physical == {frozenset(p) for p in ((7, 6), (5, 4), (3, 2), (1, 0))}


PERSISTENT_CACHE_SCRIPT = """
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import jaxscope as js
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
auto = jax.sharding.AxisType.Auto
mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(auto, auto))
x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
def f(a):
    return jnp.sum(jnp.tanh(a), axis=1)
for _ in range(2):
    v = js.shardings(f)(x)
    print(v.ops_stage, len(v.ops), jax.config.jax_enable_compilation_cache)
print("entries", len(os.listdir(sys.argv[1])))
"""


def test_persistent_cache_hit_still_gives_propagated_op_shardings(tmp_path):
    import subprocess
    import sys

    cache = tmp_path / "cache"
    cache.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", PERSISTENT_CACHE_SCRIPT, str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.splitlines()
    assert out[0] == out[1] == "after sharding propagation 3 True", out
    assert out[2] != "entries 0"
