"""Hints for errors whose JAX message hides a library or parallel-code cause, on
programs written as the libraries' docs write them: a Linen model applied with
params made for another input shape, ``jax.grad`` over an Equinox Module, a
``shard_map`` output declared replicated without its ``psum``, an unsplit ``pmap``
batch, a diffrax solve that ran out of steps."""

from __future__ import annotations

from functools import partial

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js

N = jax.local_device_count()


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(3)(x)


def test_linen_model_on_a_new_input_shape_says_to_reinitialise(catch):
    model = MLP()
    params = model.init(jax.random.key(0), jnp.ones((2, 4)))
    wide = jnp.ones((2, 6))
    report = js.explain(catch(lambda: model.apply(params, wide)))
    assert "kernel in /Dense_0 has shape (4, 3), this input needs (6, 3)" in report.hint
    assert "`params = model.init(jax.random.key(0), wide)`" in report.hint
    assert "reshape or transpose" not in report.hint.lower()


class Net(eqx.Module):
    layers: list
    activation: object

    def __init__(self, key):
        self.layers = [eqx.nn.Linear(4, 1, key=key)]
        self.activation = jax.nn.relu

    def __call__(self, x):
        return self.activation(self.layers[0](x))


def batch_loss(model, x):
    return jnp.sum(jax.vmap(model)(x))


@pytest.mark.parametrize(
    ("call", "wrapper", "filtered"),
    [
        (lambda net, x: jax.grad(batch_loss)(net, x), "jax.grad", "eqx.filter_grad"),
        (
            lambda net, x: jax.value_and_grad(batch_loss)(net, x),
            "jax.value_and_grad",
            "eqx.filter_value_and_grad",
        ),
    ],
)
def test_jax_grad_over_an_equinox_module_points_to_filter_grad(
    catch, call, wrapper, filtered
):
    report = js.explain(catch(call, Net(jax.random.key(0)), jnp.ones((2, 4))))
    assert f"use `{filtered}` instead of `{wrapper}`" in report.hint
    assert report.hint.startswith("net is an eqx.Module")


def test_jax_grad_of_a_non_array_that_is_no_module_gets_no_equinox_hint(catch):
    report = js.explain(catch(lambda: jax.grad(lambda f, x: f(x))(jnp.sin, 1.0)))
    assert "eqx" not in report.hint


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((N,), ("i",))


def test_shard_map_without_psum_gets_the_collective_in_the_users_names(catch, mesh):
    @jax.jit
    @partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
    def total(x):
        return jnp.sum(x, keepdims=True)

    x = jax.device_put(jnp.arange(2.0 * N), NamedSharding(mesh, P("i")))
    report = js.explain(catch(total, x))
    assert "`return jax.lax.psum(jnp.sum(x, keepdims=True), 'i')`" in report.hint
    assert "jax.lax.pmean" in report.hint
    assert "reshape or transpose" not in report.hint.lower()


def test_shard_map_without_psum_on_a_two_axis_mesh_names_both_axes(catch):
    # The 2-D mesh of the README: the hint's collective names the mesh's own axes
    # (it named a made-up 'i' where JAX's message lists them as "not {data,model}").
    mesh2 = jax.make_mesh((4, 2), ("data", "model"))

    def total(x):
        return jnp.sum(x, keepdims=True)

    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh2, P("data", "model")))
    specs = {"mesh": mesh2, "in_specs": P("data", "model"), "out_specs": P()}
    report = js.explain(catch(jax.jit(jax.shard_map(total, **specs)), x))
    fix = "jax.lax.psum(jnp.sum(x, keepdims=True), ('data', 'model'))"
    assert f"`return {fix}`" in report.hint
    assert "over mesh axes ('data', 'model')" in report.hint
    assert "'i'" not in report.hint

    def fixed(x):  # the hint applied
        return jax.lax.psum(jnp.sum(x, keepdims=True), ("data", "model"))

    out = jax.jit(jax.shard_map(fixed, **specs))(x)
    assert out.shape == (1, 1) and float(out[0, 0]) == 32.0  # the sum of all 32 ones


def _step(w, x):
    return jnp.sum(w * x)


@pytest.mark.parametrize(
    ("pmap", "name"), [(jax.pmap, "jax.pmap"), (eqx.filter_pmap, "eqx.filter_pmap")]
)
def test_unsplit_pmap_batch_says_split_the_leading_axis(catch, pmap, name):
    weights = jnp.ones((N, 3))
    batch = jnp.ones((4 * N, 3))
    report = js.explain(catch(lambda: pmap(_step)(weights, batch)))
    assert report.hint.startswith(f"{name} maps the leading axis")
    assert f"`batch.reshape({N}, 4, 3)`" in report.hint
    assert "in_axes=None for it" not in report.hint


def test_pmap_with_shared_parameters_says_which_argument_is_unmapped(catch):
    weights = jnp.ones(3)
    batch = jnp.ones((4 * N, 3))
    report = js.explain(catch(lambda: jax.pmap(_step)(weights, batch)))
    assert f"`batch.reshape({N}, 4, 3)`" in report.hint
    assert "weights has no device axis" in report.hint
    assert "in_axes=(None, 0)" in report.hint


def _squeeze_first(x):
    return jnp.squeeze(x, axis=0)


def test_a_squeeze_error_inside_a_pmapped_function_is_not_an_unsplit_batch(catch):
    split = jnp.ones((N, 4, 3))
    report = js.explain(catch(lambda: jax.pmap(_squeeze_first)(split)))
    assert "split" not in report.hint


def test_a_squeeze_error_outside_pmap_keeps_its_own_hint(catch):
    report = js.explain(catch(lambda: jnp.squeeze(jnp.ones((4, 3)), axis=0)))
    assert "pmap" not in report.hint


MAX_STEPS = (
    "The maximum number of solver steps was reached. Try increasing `max_steps`."
)


def stepper(y0):
    return eqx.error_if(y0, jnp.isnan(y0).any(), MAX_STEPS)


def test_solver_out_of_steps_says_check_the_inputs_for_nan_first(catch):
    y0 = jnp.array([1.0, jnp.nan])
    report = js.explain(catch(lambda: solve_with(stepper, y0)))
    assert report.message == MAX_STEPS
    assert "check the inputs for NaN first, with `js.find_nan(" in report.hint
    from jaxscope._explain.library_hints import LibraryFacts, library_hint

    hint = library_hint(MAX_STEPS, LibraryFacts(call="js.find_nan(solve)(y0)"))
    assert "`js.find_nan(solve)(y0)`" in hint


def solve_with(fn, y0):
    return eqx.filter_jit(fn)(y0)


def test_diffrax_solve_on_a_nan_input_points_to_find_nan(catch):
    diffrax = pytest.importorskip("diffrax")
    term = diffrax.ODETerm(lambda t, y, args: -y)

    def solve(y0):
        return diffrax.diffeqsolve(
            term,
            diffrax.Tsit5(),
            t0=0.0,
            t1=1.0,
            dt0=0.1,
            y0=y0,
            stepsize_controller=diffrax.PIDController(rtol=1e-5, atol=1e-5),
            max_steps=16,
        )

    y0 = jnp.array([1.0, jnp.nan])
    report = js.explain(catch(lambda: solve(y0)))
    assert "`js.find_nan(solve)(y0)`" in report.hint
    found = js.find_nan(solve)(y0)
    assert "y0" in str(found)
