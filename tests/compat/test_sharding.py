"""jaxscope.compat.sharding on real programs."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxscope.compat import sharding as csharding


def test_is_tracer_true_inside_jit_and_false_outside():
    seen = []

    @jax.jit
    def f(x):
        seen.append(csharding.is_tracer(x))
        return x * 2

    f.trace(jnp.ones(3))
    assert seen == [True]
    assert csharding.is_tracer(jnp.ones(3)) is False
    assert csharding.is_tracer(3.0) is False
