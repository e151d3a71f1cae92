"""find_nan answers the question a user has: where the NaN (or Inf) in my result came
from, including "it was already in your parameters", and not an Inf that a
``jnp.where`` threw away."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxscope as js


def loss(params, x):
    h = jnp.tanh(x @ params["w"])
    return jnp.sum(h * params["b"])


def test_a_nan_in_the_parameters_is_named_by_its_path():
    params = {"w": jnp.ones((3, 2)).at[1, 0].set(jnp.nan), "b": jnp.ones(2)}
    found = js.find_nan(jax.jit(loss))(params, jnp.ones((4, 3)))
    assert isinstance(found, js.NanInInput)
    assert found.path == "params['w']" and found.kind == "nan"
    assert found.value.nan_count == 1
    assert "already in the input params['w']" in str(found)


def test_an_inf_that_a_where_discards_is_not_the_culprit():
    def f(x):
        safe_log = jnp.where(x > 0, jnp.log(x), 0.0)  # log(0) = -inf, discarded
        return jnp.sqrt(safe_log - 1.0)  # the real NaN

    found = js.find_nan(f)(jnp.array([0.0, 2.0]))
    assert found is not None and found.primitive == "sqrt" and found.kind == "nan"
    assert js.find_nan(f, inf=True)(jnp.array([0.0, 2.0])).primitive == "log"


def test_clean_outputs_answer_none_without_stepping():
    def f(x):
        return jnp.where(x > 0, jnp.log(x), 0.0)

    assert js.find_nan(f)(jnp.array([0.0, 2.0])) is None


def test_an_inf_that_reaches_the_output_is_found():
    def f(x):
        return jnp.exp(x * 1000.0)

    found = js.find_nan(f)(jnp.array([1.0]))
    assert found is not None and found.kind == "inf" and found.primitive == "exp"


def test_a_nan_already_in_a_bfloat16_argument_is_reported():
    # NumPy's own type hierarchy does not count ml_dtypes' bfloat16 as inexact
    found = js.find_nan(lambda x: x * 2)(jnp.array([1.0, jnp.nan], jnp.bfloat16))
    assert isinstance(found, js.NanInInput) and found.path == "x"


def test_keyword_arguments_are_named_in_the_order_jax_flattens_them():
    # JAX flattens keyword arguments by sorted name, whatever order they are given in
    def f(x, *, zeta, alpha):
        return x + jnp.log(zeta) + alpha

    x, ok, bad = jnp.ones(2), jnp.ones(2), jnp.array([jnp.nan, 1.0])
    found = js.find_nan(f)(x, zeta=ok, alpha=bad)
    assert isinstance(found, js.NanInInput) and found.path == "alpha"
    stepper = js.step(f)(x, zeta=ok, alpha=ok)
    assert stepper.current.primitive == "log"
    assert stepper.arg_names[stepper.current.inputs[0][0]] == "zeta"
    assert js.jaxpr(f)(x, zeta=ok, alpha=ok).arg_names == ("x", "alpha", "zeta")
