"""compile_profile on the library programs (no false alarm), jit flavours, the magics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from IPython.utils.capture import capture_output

import jaxscope as js

pytest.importorskip("flax")
from tests.libraries.programs import PROGRAMS


@pytest.mark.slow
@pytest.mark.parametrize("name", ["nnx_cnn", "linen_lm", "eqx_mlp", "eqx_gru"])
def test_library_programs_get_no_diagnosis_and_add_up(name):
    step, args = PROGRAMS[name]()
    cp = js.compile_profile(step)(*args)
    assert cp.diagnoses == ()
    assert cp.totals.eqns > 10
    parts = [*cp.lines, cp.outside]
    assert sum(c.eqns for c in parts) == cp.totals.eqns
    assert sum(c.hlo_ops for c in parts) == cp.totals.hlo_ops
    assert cp.top(1)[0].source is not None


def test_pmap_and_shard_map_programs_are_profiled():
    x = jnp.ones((jax.device_count(), 4))
    cp = js.compile_profile(jax.pmap(lambda v: jnp.sin(v) * 2))(x)
    assert cp.totals.eqns >= 2 and cp.stages.compile > 0
    mesh = jax.make_mesh((jax.device_count(),), ("d",))
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    x = jax.device_put(x, NamedSharding(mesh, P("d")))

    f = jax.shard_map(
        lambda v: jnp.cos(v) + 1, mesh=mesh, in_specs=P("d"), out_specs=P("d")
    )
    cp = js.compile_profile(jax.jit(f))(x)
    assert any("shard_map body" in c.bodies for c in cp.lines)


CELL = """\
import jax, jax.numpy as jnp
def unrolled(x):
    for _ in range(40):
        x = jnp.sin(x) * 1.01
    return x
x = jnp.ones(3)
"""


def test_jaxcompile_line_magic_returns_the_view(ip):
    ip.run_cell(CELL, store_history=True).raise_error()
    with capture_output() as captured:
        ip.run_cell("cp = %jaxcompile unrolled(x)", store_history=True).raise_error()
    cp = ip.user_ns["cp"]
    assert isinstance(cp, js.CompileProfile)
    assert cp.diagnoses[0].kind == "unrolled_loop" and cp.diagnoses[0].count == 40
    assert str(cp.diagnoses[0].source).startswith("In [")
    assert captured.outputs == []


def test_jaxcompile_cell_magic_finds_an_eager_op_storm(ip):
    ip.run_cell(CELL, store_history=True).raise_error()
    with capture_output() as captured:
        result = ip.run_cell(
            "%%jaxcompile\nfor i in range(12):\n    x = jnp.ones(i + 1) * 2.0\n",
            store_history=True,
        )
    result.raise_error()
    view = ip.user_ns["_jaxcompile"]
    assert view.compiles >= 12
    assert [d.kind for d in view.diagnoses] == ["eager_op_storm"]
    assert "This cell compiled" in captured.outputs[0].data["text/plain"]


def test_jaxcompile_cell_magic_on_one_jitted_call_has_no_storm(ip):
    ip.run_cell(CELL, store_history=True).raise_error()
    with capture_output():
        ip.run_cell(
            "%%jaxcompile\ny = jax.jit(unrolled)(x)\n", store_history=True
        ).raise_error()
    view = ip.user_ns["_jaxcompile"]
    assert view.diagnoses == ()
    assert [f.function for f in view.functions] == ["unrolled"]
