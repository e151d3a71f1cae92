"""A Python branch on a traced value: ``static_argnums`` is offered only for arguments
that were Python values at the call; on arrays the first fix is the user's own line
written with arrays (``jnp.where``, ``jnp.minimum``), then ``jax.lax.cond``."""

from __future__ import annotations

import ast

import jax
import jax.numpy as jnp
import pytest
from flax import nnx

import jaxscope as js
from jaxscope._explain.site import Site

# --------------------------------------------------------------------------- programs


def loss_fn(params, x, y):
    pred = x @ params[0]["w"] + params[0]["b"]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def clipped_loss(params, x, y, max_loss):
    loss = loss_fn(params, x, y)
    if loss > max_loss:  # <- error
        return max_loss
    return loss


@jax.jit
def relu_bad(v):
    if v > 0:  # <- error
        return v
    return 0.0


@jax.jit
def above(x, limit):
    if x.sum() > limit:  # <- error
        return x
    return -x


PARAMS = [{"w": jnp.ones((4, 1)), "b": jnp.zeros(1)}]
X = jnp.ones((8, 4))
Y = jnp.zeros((8, 1))


class Regressor(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(4, 1, rngs=rngs)

    def __call__(self, x):
        return self.linear(x)


@nnx.jit
def nnx_step(model, x, y, max_loss):
    loss = jnp.mean((model(x) - y) ** 2)
    if loss > max_loss:  # <- error
        return max_loss
    return loss


def times(x, n):
    return x * len(n)


# ------------------------------------------------------------------------------ tests


def test_branch_on_a_loss_from_arrays_leads_with_the_array_form(catch):
    report = js.explain(catch(clipped_loss, PARAMS, X, Y, 1.0))
    hint = report.hint
    assert "static_argnums=" not in hint
    assert "static_argnames=" not in hint
    assert "params, x and y hold arrays" in hint
    where = hint.index("`return jnp.where(loss > max_loss, max_loss, loss)`")
    assert where < hint.index("`return jax.lax.cond(loss > max_loss")
    assert "`return jnp.minimum(loss, max_loss)`" in hint


def test_branch_on_a_python_scalar_still_offers_static_first(catch):
    report = js.explain(catch(relu_bad, 1.0))
    assert report.hint.startswith("If v is a Python value")
    assert "jax.jit(relu_bad.__wrapped__, static_argnums=(0,))" in report.hint
    assert "`return jnp.where(v > 0, v, 0.0)`" in report.hint


def test_branch_on_an_array_and_a_python_scalar_offers_no_static(catch):
    report = js.explain(catch(above, jnp.ones(3), 1.0))
    assert "static_argnums=" not in report.hint
    assert report.hint.startswith("Under jit, x holds arrays")
    assert "`return jnp.where(x.sum() > limit, x, -x)`" in report.hint


def gate(p, x):
    if p["w"] > 0:  # <- error
        return x
    return -x


def test_branch_on_a_dict_of_python_floats_says_it_cannot_be_hashed(catch):
    report = js.explain(catch(jax.jit(gate), {"w": 1.0}, jnp.ones(2)))
    assert report.hint.startswith("The argument p is a container of Python values")
    assert "static_argnums=(" not in report.hint
    assert "holds arrays" not in report.hint
    assert '`return jnp.where(p["w"] > 0, x, -x)`' in report.hint


@jax.jit
def noisy(x):
    if x.sum() > 0:  # <- error
        x = x * 2
        x = x + 1
    return x


def test_a_branch_it_cannot_rewrite_gets_words_not_placeholder_code(catch):
    report = js.explain(catch(noisy, jnp.ones(3)))
    assert "jnp.where(x.sum() > 0, a, b)" in report.hint
    assert "`jnp.where" not in report.hint
    assert "`jax.lax.cond" not in report.hint


def test_nnx_jit_step_branching_on_its_loss_speaks_of_nnx_jit_and_arrays(catch):
    model = Regressor(nnx.Rngs(0))
    report = js.explain(catch(nnx_step, model, X, Y, 1.0))
    hint = report.hint
    assert hint.startswith("Under nnx.jit, model, x and y hold arrays")
    assert "static_argnums=" not in hint
    assert "model.states" not in hint
    assert "`return jnp.minimum(loss, max_loss)`" in hint


def test_static_argument_holding_arrays_is_not_sent_to_hashable_values(catch):
    unhashable = catch(jax.jit(times, static_argnums=1), 1.0, [jnp.ones(2)])
    report = js.explain(unhashable)
    assert report.category == "static_arg"
    assert "arrays cannot be static" in report.hint
    assert "tuple instead of a list" not in report.hint
    array = js.explain(catch(jax.jit(times, static_argnums=1), 1.0, jnp.ones(2)))
    assert "arrays cannot be static" in array.hint


def test_static_argument_unhashable_without_arrays_keeps_the_hashable_advice(catch):
    report = js.explain(catch(jax.jit(times, static_argnums=1), 1.0, [1, 2]))
    assert "a tuple instead of a list" in report.hint


def _fix_of(source: str, line: int):
    from jaxscope._explain.fixes import branch_fix

    tree = ast.parse(source)
    scope = tree.body[0]
    stmt = next(
        n
        for n in ast.walk(scope)
        if isinstance(n, ast.stmt) and n.lineno == line and n is not scope
    )
    return branch_fix(Site(source, None, stmt, scope))


@pytest.mark.parametrize(
    ("source", "where", "extreme"),
    [
        (
            "def f(a, b):\n    if a > b:\n        return b\n    return a\n",
            "return jnp.where(a > b, b, a)",
            "return jnp.minimum(a, b)",
        ),
        (
            "def f(a, b):\n    if a < b:\n        return b\n    else:\n        return a\n",
            "return jnp.where(a < b, b, a)",
            "return jnp.maximum(a, b)",
        ),
        (
            "def f(x):\n    if x.sum() > 0:\n        y = x * 2\n    else:\n        y = -x\n"
            "    return y\n",
            "y = jnp.where(x.sum() > 0, x * 2, -x)",
            "",
        ),
        (
            "def f(x, t):\n    if t > 0:\n        x = x / t\n    return x\n",
            "x = jnp.where(t > 0, x / t, x)",
            "",
        ),
        (
            "def f(x, t):\n    if t > 0:\n        x += t * 2\n    return x\n",
            "x = jnp.where(t > 0, x + (t * 2), x)",
            "",
        ),
        (
            "def f(x):\n    return x if x > 0 else 0.0\n",
            "return jnp.where(x > 0, x, 0.0)",
            "",
        ),
    ],
)
def test_branch_fix_writes_the_users_branch_with_arrays(source, where, extreme):
    line = 2
    fix = _fix_of(source, line)
    assert fix is not None
    assert fix.where == where
    assert fix.extreme == extreme
    assert fix.cond.startswith(where.split("jnp.where(")[0] + "jax.lax.cond(")


def test_branch_fix_leaves_other_code_alone():
    source = (
        "def f(x):\n    if x > 0:\n        print(x)\n        return x\n    return -x\n"
    )
    assert _fix_of(source, 2) is None
