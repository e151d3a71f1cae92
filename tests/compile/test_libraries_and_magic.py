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


def _refiner(looped: bool):
    import optax
    from flax import nnx

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.cell = nnx.Linear(8, 8, rngs=rngs)

        def __call__(self, x):
            if looped:
                for _ in range(20):
                    x = x + 0.1 * nnx.tanh(self.cell(x))  # LOOPED
                return x

            def body(i, x):
                return x + 0.1 * nnx.tanh(self.cell(x))

            return jax.lax.fori_loop(0, 20, body, x)

    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x):
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
        optimizer.update(model, grads)
        return loss

    return train_step, (model, optimizer, jnp.ones((2, 8)))


def test_loop_in_a_flax_model_is_named_with_its_iterations_forward_and_backward():
    step, args = _refiner(looped=True)
    cp = js.compile_profile(step)(*args)
    [d] = cp.diagnoses
    assert d.kind == "unrolled_loop" and d.count == 20
    assert d.source.function.endswith("__call__")
    assert cp.top(1)[0].source == d.source


def test_the_same_flax_model_with_fori_loop_as_the_fix_says_is_not_diagnosed():
    step, args = _refiner(looped=False)
    cp = js.compile_profile(step)(*args)
    assert cp.diagnoses == ()
    assert any(c.bodies for c in cp.lines)


def test_linen_apply_under_jax_jit_and_eqx_filter_jit_are_profiled():
    import equinox as eqx
    import flax.linen as linen

    mlp = linen.Dense(4)
    params = mlp.init(jax.random.key(0), jnp.ones((1, 3)))
    cp = js.compile_profile(jax.jit(mlp.apply))(params, jnp.ones((2, 3)))
    assert cp.totals.eqns >= 2 and cp.lines[0].source is not None
    model = eqx.nn.MLP(3, 2, 8, 2, key=jax.random.key(0))
    cp = js.compile_profile(eqx.filter_jit(lambda m, x: m(x)))(model, jnp.ones(3))
    assert cp.totals.eqns > 5 and cp.diagnoses == ()


def test_cell_magic_names_a_function_recreated_per_call_with_the_watchers_fix(ip):
    ip.run_cell(CELL, store_history=True).raise_error()
    with capture_output():
        ip.run_cell(
            "%%jaxcompile\nfor i in range(3):\n    y = jax.jit(lambda v: v * 2 + 1)(x)\n",
            store_history=True,
        ).raise_error()
    view = ip.user_ns["_jaxcompile"]
    kinds = [d.kind for d in view.diagnoses]
    assert "recreated_function" in kinds
    [d] = [d for d in view.diagnoses if d.kind == "recreated_function"]
    assert d.source is not None and d.source.line == 3


def test_cell_magic_on_a_function_jitted_once_names_no_recreation(ip):
    ip.run_cell(CELL, store_history=True).raise_error()
    with capture_output():
        ip.run_cell(
            "%%jaxcompile\ng = jax.jit(lambda v: v * 2 + 1)\n"
            "for i in range(3):\n    y = g(x + i)\n",
            store_history=True,
        ).raise_error()
    view = ip.user_ns["_jaxcompile"]
    assert view.diagnoses == ()
    assert [f.compiles for f in view.functions] == [1]


def test_magic_bad_input_is_one_line_usage_error(ip):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="is an int, not a function"):
        ip.run_line_magic("jaxcompile", "3(4)")
    with pytest.raises(UsageError, match="needs a call"):
        ip.run_line_magic("jaxcompile", "")
    with pytest.raises(UsageError, match="takes no options"):
        ip.run_cell_magic("jaxcompile", "--top 3", "x = 1\n")


def test_cell_magic_shows_the_compiles_before_the_cells_own_error(ip):
    ip.run_cell(CELL, store_history=True).raise_error()
    with capture_output() as captured:
        result = ip.run_cell(
            "%%jaxcompile\ny = jax.jit(unrolled)(x)\nraise ValueError('mine')\n",
            store_history=True,
        )
    assert isinstance(result.error_in_exec, ValueError)
    assert "This cell compiled once" in captured.outputs[0].data["text/plain"]
    assert [f.function for f in ip.user_ns["_jaxcompile"].functions] == ["unrolled"]
