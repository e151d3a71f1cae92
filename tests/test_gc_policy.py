"""jaxscope's one GC policy (``jaxscope/_gc.py``): full collections wait while a
trace runs, collection pauses while records are built or the stepper runs, and the
user's collector settings (on or off, thresholds, frozen objects) come back on every
exit path."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._exceptions import TraceError
from jaxscope._gc import full_collections_deferred, gc_paused, young_collections_only

X = jnp.ones(3)


def _settings() -> tuple[bool, tuple[int, ...], bool]:
    # frozen objects die like others: their count may fall, not drop to zero
    return gc.isenabled(), gc.get_threshold(), gc.get_freeze_count() > 0


def _frozen(obj: object) -> bool:
    # gc.get_objects() lists the three generations, not the frozen objects
    return not any(o is obj for o in gc.get_objects())


class _User:
    """The collector settings a user made before calling jaxscope."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.frozen_object: list[object] = [object()]
        if kind == "thresholds":
            gc.set_threshold(1234, 17, 19)
        elif kind == "disabled":
            gc.disable()
        elif kind == "frozen":
            gc.freeze()
        self.settings = _settings()

    def assert_unchanged(self) -> None:
        assert _settings() == self.settings
        assert _frozen(self.frozen_object) == (self.kind == "frozen")


@pytest.fixture(params=["thresholds", "disabled", "frozen"])
def user(request: pytest.FixtureRequest) -> Iterator[_User]:
    threshold = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    try:
        yield _User(request.param)
    finally:
        gc.enable()
        gc.set_threshold(*threshold)
        if not frozen_before:
            gc.unfreeze()


def _sin(x: Any) -> Any:
    return jnp.sin(x) * 2.0


def _broken(x: Any) -> Any:
    raise ValueError("boom")


def _raise_in_callback(value: Any) -> Any:
    raise ValueError("boom")


def _failing_step(x: Any) -> Any:
    y = jnp.sin(x)
    return jax.pure_callback(_raise_in_callback, jax.ShapeDtypeStruct((3,), y.dtype), y)


_RUNS: dict[str, tuple[Callable[[], object], type[Exception] | None]] = {
    "js.jaxpr": (lambda: js.jaxpr(_sin)(X).eqns, None),
    "js.jaxpr text": (lambda: js.jaxpr(_sin)(X).text, None),
    "js.jaxpr of a function that raises": (lambda: js.jaxpr(_broken)(X), TraceError),
    "js.graph": (lambda: js.graph(_sin)(X).nodes, None),
    "js.graph of a function that raises": (lambda: js.graph(_broken)(X), TraceError),
    "js.step run": (lambda: js.step(_sin)(X).run(), None),
    "js.step one step": (lambda: js.step(_sin)(X).step(), None),
    "js.step of an equation that raises": (
        lambda: js.step(_failing_step)(X).run(),
        js.JaxscopeError,
    ),
}


@pytest.mark.parametrize("run", list(_RUNS))
def test_the_users_collector_settings_come_back_after_each_entry_point(
    run: str, user: _User
):
    call, error = _RUNS[run]
    if error is None:
        call()
    else:
        with pytest.raises(error):
            call()
    user.assert_unchanged()


@pytest.mark.parametrize(
    "tactic", [full_collections_deferred, gc_paused, young_collections_only]
)
def test_each_tactic_gives_the_settings_back_when_the_work_inside_raises(
    tactic: Callable[[], Any], user: _User
):
    with pytest.raises(RuntimeError, match="inside"), tactic():
        raise RuntimeError("inside")
    user.assert_unchanged()


def test_a_collector_the_user_disabled_collects_nothing_while_the_stepper_runs():
    collections: list[dict[str, int]] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info)

    gc.callbacks.append(seen)
    gc.disable()
    try:
        with young_collections_only() as collect:
            collect()
        assert collections == []
        gc.enable()
        with young_collections_only() as collect:
            collect()
        assert [c["generation"] for c in collections] == [1]
    finally:
        gc.enable()
        gc.callbacks.remove(seen)


def test_automatic_collection_pauses_while_the_stepper_runs_equations():
    seen: list[bool] = []

    def f(x):
        jax.debug.callback(lambda _: seen.append(gc.isenabled()), x)
        return jnp.sin(x)

    assert gc.isenabled()
    js.step(f)(X).run()
    assert seen == [False] and gc.isenabled()


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
