"""Causes named in the user's terms behind ``jax.pmap``, ``eqx.filter_pmap`` and a
library's jit, as ``js.shardings`` names the same inputs."""

from __future__ import annotations

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp

import jaxscope as js

N = jax.device_count()


def _causes(event):
    return [(c.kind, c.path, c.before, c.after) for c in event.causes]


def test_pmap_causes_name_the_users_arguments_not_pmaps_flat_args():
    def pupdate(params, xs, lr):
        return jax.tree.map(lambda p: p - lr * xs.mean(), params)

    p_update = jax.pmap(pupdate, in_axes=(0, 0, None))
    params = {"weight": jnp.ones((N, 3)), "bias": jnp.ones((N, 2))}
    p_update(params, jnp.ones((N, 4)), 0.1)  # compiled before the watcher starts
    with js.watch_recompiles() as log:
        p_update(params, jnp.ones((N, 5)), 0.1)
        p_update({**params, "bias": jnp.ones((N, 7))}, jnp.ones((N, 5)), 0.1)
    assert [e.function for e in log.events] == [
        "pmap(" + pupdate.__qualname__ + ")"
    ] * 2
    assert [_causes(e) for e in log.events] == [
        [("shape", "xs", f"f32[{N},4]", f"f32[{N},5]")],
        [("shape", "params['bias']", f"f32[{N},2]", f"f32[{N},7]")],
    ]
    assert [p for p, _ in log.events[0].signature] == [
        "params['bias']",
        "params['weight']",
        "xs",
        "lr",
    ]


def test_nnx_pmap_causes_name_the_models_variables_by_their_paths():
    from flax import nnx

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 2, rngs=rngs)

        def __call__(self, x):
            return self.linear(x)

    @nnx.pmap(in_axes=(None, 0), axis_name="i")
    def total(model, x):
        return model(x).sum()

    model = Net(nnx.Rngs(0))
    with js.watch_recompiles() as log:
        total(model, jnp.ones((N, 4, 3)))
        total(model, jnp.ones((N, 5, 3)))
    # nnx.pmap writes the model's state back replicated over the devices: a real
    # sharding change, named as the user's model names it
    kinds = {(kind, path) for kind, path, _, _ in _causes(log.events[1])}
    assert kinds == {
        ("sharding", "model.linear.bias"),
        ("sharding", "model.linear.kernel"),
        ("shape", "x"),
    }


class Scale(eqx.Module):
    w: jax.Array

    def __call__(self, x):
        return self.w * x


def test_filter_pmap_causes_name_the_model_and_arguments():
    @eqx.filter_pmap
    def fpmapped(model, x):
        return model(x)

    model = Scale(jnp.ones((N, 3)))
    with js.watch_recompiles() as log:
        fpmapped(model, jnp.ones((N, 3)))
        fpmapped(model, jnp.ones((N, 3)))  # a hit: nothing
        fpmapped(model, jnp.ones((N, 4, 3)))
    first, second = log.events
    assert first.signature == (("model.w", f"f32[{N},3]"), ("x", f"f32[{N},3]"))
    assert first.defined_at is not None and first.defined_at.line == (
        fpmapped.__wrapped__.__code__.co_firstlineno
    )
    assert _causes(second) == [("shape", "x", f"f32[{N},3]", f"f32[{N},4,3]")]


class Term(eqx.Module):
    vector_field: Callable


@eqx.filter_jit
def solve(terms, y0):
    return terms.vector_field(y0)


def _get_data():
    def f(y):
        return -y

    return Term(f)


def test_a_new_function_of_the_same_name_says_what_differs_and_to_define_it_once():
    # diffrax's pattern: diffeqsolve(ODETerm(f), ...) with f made anew on each call
    with js.watch_recompiles() as log:
        for _ in range(2):
            solve(_get_data(), jnp.ones(3))
    ((kind, path, before, after),) = _causes(log.events[1])
    assert (kind, path) == ("static_arg", "terms.vector_field")
    assert before != after and after.endswith("(new function, same name)")
    hint = log.events[1].causes[0].hint
    assert "new function with the same name" in hint and "define it once" in hint


def test_the_same_function_each_call_compiles_once():
    @eqx.filter_jit
    def solve_once(terms, y0):
        return terms.vector_field(y0)

    term = _get_data()
    with js.watch_recompiles() as log:
        for _ in range(3):
            solve_once(term, jnp.ones(3))
    assert [e.kinds for e in log.events] == [["first_call"]]
