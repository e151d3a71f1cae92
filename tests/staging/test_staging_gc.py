"""Full collections are held off while jaxscope traces, and the GC is left as found."""

from __future__ import annotations

import gc

import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._exceptions import TraceError


def test_full_collections_wait_for_the_end_of_a_trace_and_the_thresholds_come_back():
    before = gc.get_threshold()
    seen = []

    def f(x):
        seen.append(gc.get_threshold())
        return jnp.sin(x)

    js.jaxpr(f)(jnp.ones(3))
    assert seen[0][:2] == before[:2] and seen[0][2] > 10**9
    assert gc.get_threshold() == before


def test_the_thresholds_come_back_when_the_traced_function_raises():
    before = gc.get_threshold()

    def broken(x):
        raise ValueError("boom")

    with pytest.raises(TraceError):
        js.jaxpr(broken)(jnp.ones(3))
    assert gc.get_threshold() == before


def test_a_collector_the_user_switched_off_by_threshold_stays_off():
    before = gc.get_threshold()
    seen = []

    def f(x):
        seen.append(gc.get_threshold())
        return x + 1

    gc.set_threshold(0)
    try:
        js.jaxpr(f)(jnp.ones(3))
        assert seen[0][0] == 0 and gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)
