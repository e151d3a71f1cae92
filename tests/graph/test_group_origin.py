"""Whose code each group is (``GraphGroup.origin``): the user's own, a library call
from the user's code, or inside a library or JAX. The viewer's first view opens the
user's groups first and never JAX's or a library's internals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import nnx

import jaxscope as js
from jaxscope._graph.records import ORIGIN_LIBRARY, ORIGIN_LIBRARY_CALL, ORIGIN_USER
from jaxscope.compat.jaxpr import jaxpr_function_file


def _origins(graph) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for g in graph.groups:
        out.setdefault(g.label, set()).add(g.origin)
    return out


@jax.jit
def helper(x):
    return jnp.tanh(x) * 2


def loss(w, x, y):
    logits = helper(x @ w)
    logits = jnp.where(logits > 0, logits, 0.0)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def test_library_calls_and_jax_internals_are_told_from_the_users_groups():
    g = js.graph(jax.value_and_grad(loss))(
        jnp.ones((4, 3)), jnp.ones((2, 4)), jnp.array([0, 1])
    )
    origins = _origins(g)
    assert origins["jit helper"] == {ORIGIN_USER}  # the user's own jit, both passes
    assert origins["softmax_cross_entropy_with_integer_labels"] == {ORIGIN_LIBRARY_CALL}
    # JAX's own jits, called by the user's jnp.where or inside optax's loss
    for label in ("jit _where", "jit _take", "jit take_along_axis"):
        assert origins[label] == {ORIGIN_LIBRARY}, label


def test_a_plain_jax_programs_nested_jits_scopes_and_scans_are_all_the_users():
    def body(c, x):
        with jax.named_scope("cell"):
            return helper(c + x), c

    def f(x):
        with jax.named_scope("encoder"):
            y = jax.jit(lambda v: v * 3)(x)
        return jax.lax.scan(body, y, jnp.ones((3, 2)))[0]

    g = js.graph(f)(jnp.ones(2))
    assert g.groups
    assert {gr.origin for gr in g.groups} == {ORIGIN_USER}, _origins(g)


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(4, 8, rngs=rngs)
        self.head = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.head(nnx.relu(self.hidden(x)))


def test_an_nnx_models_layers_are_library_calls_inside_the_users_call():
    model = MLP(nnx.Rngs(0))

    def loss_fn(model, x):
        return jnp.sum(model(x) ** 2)

    g = js.graph(loss_fn)(model, jnp.ones((2, 4)))
    origins = _origins(g)
    assert origins["MLP"] == {ORIGIN_USER}
    assert origins["self.hidden"] == origins["self.head"] == {ORIGIN_LIBRARY_CALL}


def test_the_file_of_a_traced_function():
    user = jax.make_jaxpr(jax.jit(helper))(1.0).eqns[0].params["jaxpr"]
    assert jaxpr_function_file(user) == __file__
    where = jax.make_jaxpr(lambda x: jnp.where(x > 0, x, 0.0))(1.0)
    inner = next(e for e in where.eqns if e.primitive.name in ("jit", "pjit"))
    assert "jax" in jaxpr_function_file(inner.params["jaxpr"])
    assert jaxpr_function_file(jax.make_jaxpr(lambda x: x)(1.0).jaxpr) == __file__
