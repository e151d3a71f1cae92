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


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


def test_a_built_model_joins_the_old_generation_unscanned():
    # The records live as long as the view: scanning them in young collections
    # would only promote them.
    view = js.jaxpr(lambda x: jnp.sin(x) * 2.0)(jnp.ones(3))
    record = view.eqns[0]
    assert gc.isenabled()
    assert _in_generation(record, 2) and not _in_generation(record, 0)


def test_objects_the_user_froze_stay_frozen_and_a_disabled_collector_stays_off():
    gc.freeze()
    gc.disable()
    try:
        view = js.jaxpr(lambda x: jnp.cos(x) + 1.0)(jnp.ones(3))
        assert len(view.eqns) == 2
        assert gc.get_freeze_count() > 0 and not gc.isenabled()  # not unfrozen
    finally:
        gc.enable()
        gc.unfreeze()
