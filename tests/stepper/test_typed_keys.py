"""Typed PRNG keys (``jax.random.key``), JAX's recommended keys, through the stepper:
NumPy cannot hold them, so values, NaN checks and summaries read their key data."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxscope as js


@jax.jit
def noisy_log_loss(key, x):
    noise = jax.random.normal(key, x.shape)
    return jnp.log(x + noise).sum()


def test_find_nan_with_a_typed_key_argument_finds_the_log():
    finding = js.find_nan(noisy_log_loss)(jax.random.key(0), jnp.full(3, -10.0))
    assert finding is not None and finding.primitive == "log"


def test_find_nan_with_a_typed_key_argument_on_a_healthy_input_is_none():
    assert js.find_nan(noisy_log_loss)(jax.random.key(0), jnp.full(3, 10.0)) is None


def test_a_key_value_is_summarised_as_its_dtype_with_its_key_data():
    key = jax.random.key(0)
    stepper = js.step(noisy_log_loss)(key, jnp.ones(3))
    summary = next(s for s in stepper.summaries() if s.user_name == "key")
    assert summary.aval == "key<fry>[]" and summary.dtype == "key<fry>"
    assert summary.preview == " ".join(
        str(np.asarray(jax.random.key_data(key))).split()
    )
    assert summary.min is None and summary.nan_count == 0
    assert "key<fry>[]" in str(stepper)
    # the stepper's own value stays the key, for jax.random.key_data and the rest
    assert jax.dtypes.issubdtype(stepper.value("key").dtype, jax.dtypes.prng_key)


def test_a_scan_over_split_keys_steps_to_the_programs_result():
    @jax.jit
    def sample(key, x):
        def body(carry, k):
            return carry + jax.random.normal(k, x.shape), k

        total, used = jax.lax.scan(body, x, jax.random.split(key, 3))
        return total, used

    key = jax.random.key(1)
    stepper = js.step(sample)(key, jnp.zeros(2)).run()
    total, used = stepper.result
    want_total, want_used = sample(key, jnp.zeros(2))
    np.testing.assert_allclose(np.asarray(total), np.asarray(want_total), rtol=1e-6)
    np.testing.assert_array_equal(
        np.asarray(jax.random.key_data(used)),
        np.asarray(jax.random.key_data(want_used)),
    )
    assert "key<fry>[3]" in str(stepper)


def test_the_widget_expands_a_key_value_to_its_key_data():
    from jaxscope._stepper.widget import payload

    stepper = js.step(noisy_log_loss)(jax.random.key(0), jnp.ones(3))
    var = next(s.name for s in stepper.summaries() if s.user_name == "key")
    (row,) = [v for v in payload(stepper, expanded={var})["values"] if v["name"] == var]
    assert row["aval"] == "key<fry>[]"
    assert row["full"].startswith("key<fry>[] key data array([0, 0]")
