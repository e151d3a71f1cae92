"""compat.libraries on real Flax NNX and Equinox objects."""

from __future__ import annotations

import pytest

nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")

from jaxscope.compat import libraries as clib  # noqa: E402


def test_nnx_state_paths_leave_out_variables_an_earlier_argument_holds():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))
    seen: set[int] = set()
    assert clib.nnx_state_paths(model, seen) == ["bias", "kernel"]
    paths = clib.nnx_state_paths(optimizer, seen)
    assert (
        paths is not None and paths and not any(p.startswith("model.") for p in paths)
    )
    assert clib.nnx_state_paths(optimizer) == ["model.bias", "model.kernel", *paths]
    assert clib.nnx_state_paths([1.0]) is None


def test_is_equinox_filter_pmap_recognises_only_the_pmap_wrapper():
    eqx = pytest.importorskip("equinox")

    def f(x):
        return x

    assert clib.is_equinox_filter_pmap(eqx.filter_pmap(f))
    assert not clib.is_equinox_filter_pmap(eqx.filter_jit(f))
    assert not clib.is_equinox_filter_jit(eqx.filter_pmap(f))


def test_nnx_static_args_are_those_of_the_inner_jit():
    @nnx.jit(static_argnums=2, static_argnames="scale")
    def f(model, x, n, scale=1.0):
        return x

    nums, names = clib.nnx_static_args(f)
    assert 2 in nums and "scale" in names and 1 not in nums
    assert clib.nnx_static_args(nnx.jit(lambda x: x)) == ((), ())


def test_fresh_nnx_jit_is_a_new_wrapper_with_the_same_statics():
    import jax.numpy as jnp

    @nnx.jit(static_argnums=2)
    def f(model, x, n):
        return model(x) * n

    fresh = clib.fresh_nnx_jit(f)
    assert fresh is not f and clib.is_nnx_jit(fresh)
    assert fresh.jitted_fn is not f.jitted_fn
    assert clib.nnx_static_args(fresh) == clib.nnx_static_args(f)
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    assert (fresh(model, jnp.ones((1, 2)), 3) == f(model, jnp.ones((1, 2)), 3)).all()
    assert clib.fresh_nnx_jit(lambda x: x)(1) == 1  # not a wrapper: itself


def test_is_equinox_filtered_transform_recognises_value_and_grad_and_grad():
    eqx = pytest.importorskip("equinox")

    def loss(model, x):
        return model(x).sum()

    assert clib.is_equinox_filtered_transform(eqx.filter_value_and_grad(loss))
    assert clib.is_equinox_filtered_transform(eqx.filter_grad(loss))
    assert not clib.is_equinox_filtered_transform(eqx.filter_jit(loss))
    assert not clib.is_equinox_filtered_transform(loss)


def test_nnx_call_output_returns_the_calls_value_and_what_it_writes_back():
    import jax.numpy as jnp

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))

    @nnx.jit
    def shift(model, x):
        model.bias.set_value(model.bias.get_value() + 1.0)
        return (model(x) ** 2).sum()

    x = jnp.ones((1, 2))
    traced = shift.trace(model, x)
    import jax

    from jaxscope.compat.libraries import jax_stage, nnx_pure_arguments

    jaxpr = jax_stage(traced).jaxpr
    pure_args, _ = nnx_pure_arguments(shift, (model, x), {})
    outs = jax.core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *jax.tree.leaves(pure_args))
    pure = jax.tree_util.tree_unflatten(jax_stage(traced).out_tree, outs)
    bias = model.bias.get_value()
    out, updated = clib.nnx_call_output(shift, (model, x), {}, pure)
    assert model.bias.get_value() is bias  # written to copies only
    assert float(out) == float(shift(nnx.clone(model), x))
    assert updated == [(0, "bias")]
