"""The watcher's behaviour: threads, nesting, exceptions, start/stop, weakrefs, summary."""

from __future__ import annotations

import gc
import threading
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxscope as js
from jaxscope._display import to_text
from jaxscope._recompiles.records import RecompileEvents, event_hints
from jaxscope._recompiles.watcher import (
    RecompileWatchError,
    hooks_installed,
)


def test_hooks_installed_only_while_watching():
    assert not hooks_installed()
    log = js.watch_recompiles()
    assert not hooks_installed()
    with log:
        assert hooks_installed()
    assert not hooks_installed()


def test_start_stop_repeatedly_accumulates_and_ignores_unwatched_time():
    f = jax.jit(lambda x: x * 2)
    log = js.watch_recompiles()
    log.start()
    f(jnp.ones(1))
    log.stop()
    f(jnp.ones(2))  # not watched
    log.start()
    f(jnp.ones(3))
    log.stop()
    log.stop()  # idempotent
    assert [e.signature for e in log.events] == [(("x", "f32[1]"),), (("x", "f32[3]"),)]


def test_double_start_is_a_clear_error():
    log = js.watch_recompiles()
    with log, pytest.raises(RecompileWatchError, match="already watching"):
        log.start()


def test_reentering_an_active_log_is_rejected_and_keeps_the_outer_block():
    f = jax.jit(lambda x: x + 1)
    log = js.watch_recompiles()
    with log:
        with pytest.raises(RecompileWatchError, match="already watching"), log:
            pass  # pragma: no cover - not reached
        assert log.active and hooks_installed()
        f(jnp.ones(2))
    assert not log.active and len(log.events) == 1


def test_nested_watchers_each_see_their_own_events():
    f = jax.jit(lambda x: x + 1)
    with js.watch_recompiles() as outer:
        f(jnp.ones(1))
        with js.watch_recompiles() as inner:
            f(jnp.ones(2))
        f(jnp.ones(3))
    assert len(inner.events) == 1 and inner.events[0].signature == (("x", "f32[2]"),)
    assert len(outer.events) == 3


def test_exception_inside_block_stops_the_watcher():
    f = jax.jit(lambda x: x + 1)
    with pytest.raises(ZeroDivisionError), js.watch_recompiles() as log:
        f(jnp.ones(4))
        1 / 0  # noqa: B018
    assert not log.active and not hooks_installed()
    assert len(log.events) == 1


def test_error_while_tracing_records_no_event_and_keeps_watching():
    def bad(x):
        raise ValueError("boom")

    f = jax.jit(bad)
    g = jax.jit(lambda x: x * 2)
    with js.watch_recompiles() as log:
        with pytest.raises(ValueError, match="boom"):
            f(jnp.ones(2))
        g(jnp.ones(2))
    assert [e.function for e in log.events] == [
        "test_error_while_tracing_records_no_event_and_keeps_watching.<locals>.<lambda>"
    ]


def test_threads_each_miss_is_recorded_once():
    fs = [jax.jit(lambda x, i=i: x * i) for i in range(4)]
    barrier = threading.Barrier(4)

    def work(i):
        barrier.wait()
        for n in (2, 3):
            fs[i](jnp.ones(n))

    with js.watch_recompiles() as log:
        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(log.events) == 8
    kinds = sorted(e.causes[0].kind for e in log.events)
    assert kinds.count("shape") == 4
    assert all(e.seconds > 0 for e in log.events)


def test_nested_jit_is_part_of_the_outer_event():
    inner = jax.jit(lambda x: x * 2)

    def outer_fn(x):
        return inner(x) + 1

    with js.watch_recompiles() as log:
        jax.jit(outer_fn)(jnp.ones(3))
    assert [e.function.rsplit(".", 1)[-1] for e in log.events] == ["outer_fn"]


def test_watcher_holds_no_user_arrays_or_functions():
    def make():
        def victim(x):
            return x + 1

        return victim

    fn = make()
    arr = jnp.ones(17)
    fn_ref, arr_ref = weakref.ref(fn), weakref.ref(arr)
    f = jax.jit(fn)
    with js.watch_recompiles() as log:
        f(arr)
        f(jnp.ones(18))
    assert len(log.events) == 2
    del fn, arr, f
    jax.clear_caches()
    gc.collect()
    assert arr_ref() is None
    assert fn_ref() is None


def test_summary_rows_and_totals():
    def busy(x):
        return x * 2

    f = jax.jit(busy)
    g = jax.jit(lambda x: x - 1)
    with js.watch_recompiles() as log:
        for n in (1, 2, 3):
            f(jnp.ones(n))
        g(jnp.ones(1))
    summary = log.summary()
    top = summary.rows[0]
    assert top.function.endswith("busy")
    assert (top.calls, top.traces, top.compiles) == (3, 3, 3)
    assert dict(top.top_causes) == {"shape": 2, "first_call": 1}
    assert summary.row("busy") is top
    assert summary.total_compiles == 4
    assert abs(summary.total_seconds - sum(e.seconds for e in log.events)) < 1e-9
    assert log.compiles("busy") == 3


def test_clear_forgets_events():
    f = jax.jit(lambda x: x)
    with js.watch_recompiles() as log:
        f(jnp.ones(2))
        log.clear()
        f(jnp.ones(3))
    assert len(log.events) == 1


def test_jitted_function_under_vmap_is_one_event_with_the_batched_compile():
    def mapped(x):
        return x * 2

    f = jax.jit(mapped)
    with js.watch_recompiles() as log:
        jax.vmap(f)(jnp.ones((2, 3)))
    (ev,) = log.events_of("mapped")
    assert ev.traced and ev.compiled
    assert ev.signature == (("x", "f32[3]"),)  # what the function sees per example


def test_a_started_log_dropped_without_stop_stops_when_collected():
    # the notebook pattern: `log = js.watch_recompiles(); log.start()` run three times
    f = jax.jit(lambda x: x * 3)
    log = js.watch_recompiles().start()
    for _ in range(2):
        log = js.watch_recompiles()
        log.start()
    assert hooks_installed()
    f(jnp.ones(5))
    assert len(log.events) == 1  # the one kept still watches
    del log
    gc.collect()
    assert not hooks_installed()  # no log left: JAX is no longer patched
    from jaxscope._recompiles.state import STATE

    assert STATE.live_logs() == []


def test_a_dropped_log_does_not_stop_the_ones_still_held():
    f = jax.jit(lambda x: x - 3)
    kept = js.watch_recompiles().start()
    js.watch_recompiles().start()  # dropped at once
    gc.collect()
    try:
        assert hooks_installed()
        f(jnp.ones(6))
        assert len(kept.events) == 1
    finally:
        kept.stop()
    assert not hooks_installed()


def test_top_causes_count_compiles_and_one_hint_per_kind():
    # sgd_step of the study: x and y change shape together, once; lr weak-types once
    @jax.jit
    def sgd_step(w, x, y, lr):
        return w - lr * (x @ w - y).mean()

    w = jnp.ones(4)
    x, y = jnp.ones((8, 4)), jnp.ones(8)
    with js.watch_recompiles() as log:
        sgd_step(w, x, y, 0.1)
        sgd_step(w, x[:4], y[:4], 0.1)
        sgd_step(w, x[:4], y[:4], jnp.float32(0.1))
    (row,) = log.summary().rows
    assert dict(row.top_causes) == {"first_call": 1, "shape": 1, "weak_type": 1}
    shape_event = log.events[1]
    assert shape_event.kinds == ["shape", "shape"]
    (hint,) = event_hints(shape_event)
    assert hint.startswith("x changes shape") and hint.endswith("(the same for y)")
    text = to_text(RecompileEvents(log.events))
    assert text.count("hint:") == 2  # one for the shapes, one for the weak type


class _RecordingSink:
    """An object with ``RecompileSink``'s methods and nothing else of a log."""

    def __init__(self):
        self.events = []
        self.misses = []
        self.internal = 0

    def add(self, event):
        self.events.append(event)

    def count_miss(self, key):
        self.misses.append(key)

    def count_internal(self, compiles):
        self.internal += compiles


def test_the_miss_hooks_deliver_to_any_object_with_the_sink_methods():
    from jaxscope._recompiles.state import STATE

    def shifted(x):
        return x + 5

    f = jax.jit(shifted)
    sink = _RecordingSink()
    STATE.attach(sink)
    try:
        f(jnp.ones(3))
        f(np.ones(3, np.float32))  # a miss served without a trace or compile
        jnp.ones(19) * jnp.arange(19.0)  # JAX's own eager compiles
    finally:
        STATE.detach(sink)
    assert not hooks_installed()
    (event,) = sink.events
    assert event.kinds == ["first_call"] and event.function.endswith("shifted")
    assert sink.misses == [event.key]
    assert sink.internal > 0
