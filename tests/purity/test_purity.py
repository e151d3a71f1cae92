"""Purity checks on real jitted programs, each written to a real file (real line numbers)."""

from __future__ import annotations

import gc
import weakref

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._purity.watcher import PuritySummary
from jaxscope.compat import purity as cpurity

from .helpers import line_of


def test_stale_global_scalar_is_reported_with_both_values(load):
    m = load(
        """
        import jax
        shift = -1.0
        def fn(x):
            return x + shift
        jit_fn = jax.jit(fn)
        """
    )
    with js.watch_purity() as plog:
        assert float(m.jit_fn(jnp.float32(0.0))) == -1.0
    assert plog.findings == []
    m.shift = 1.0
    assert float(m.jit_fn(jnp.float32(0.0))) == -1.0  # the bug purity checks exist for
    (finding,) = plog.findings
    assert finding.kind == "stale_constant"
    assert finding.name == "shift"
    assert (finding.captured, finding.current) == ("-1.0", "1.0")
    assert finding.function == "fn"
    assert finding.source.line == line_of(m, "return x + shift")
    assert "argument" in finding.hint and "clear_cache" in finding.hint
    assert [f.name for f in js.stale(m.jit_fn)] == ["shift"]


def test_stale_numpy_array_is_not_told_to_be_static_but_a_scalar_is(load):
    m = load(
        """
        import jax
        import numpy as np
        table = np.ones(3)
        temperature = 2.0
        add_table = jax.jit(lambda z: z + table)
        scaled = jax.jit(lambda z: z / temperature)
        """
    )
    with js.watch_purity():
        m.add_table(jnp.zeros(3))
        m.scaled(jnp.ones(2))
    m.table[0] = 100.0
    m.temperature = 0.5
    (array,) = js.stale(m.add_table)
    assert "pass table as an argument" in array.hint
    assert "static" not in array.hint  # an array is not hashable
    (scalar,) = js.stale(m.scaled)
    assert "pass temperature as an argument (or mark it static)" in scalar.hint


def test_stale_closure_cell_and_config_dict_and_global_array(load):
    m = load(
        """
        import jax, jax.numpy as jnp
        config = {"use_relu": True}
        W = jnp.ones(3)
        def make(scale):
            def fn(x):
                y = x * scale + W
                return jax.nn.relu(y) if config["use_relu"] else y
            def set_scale(v):
                nonlocal scale
                scale = v
            return jax.jit(fn), set_scale
        jit_fn, set_scale = make(2.0)
        """
    )
    with js.watch_purity():
        m.jit_fn(jnp.ones(3))
    assert js.stale(m.jit_fn) == []
    m.set_scale(3.0)
    m.config["use_relu"] = False
    m.W = jnp.zeros(3)
    found = {f.name: f for f in js.stale(m.jit_fn)}
    assert set(found) == {"scale", "config", "W"}
    assert found["scale"].captured == "2.0" and found["scale"].current == "3.0"
    assert "True" in found["config"].captured and "False" in found["config"].current
    assert found["W"].source.line == line_of(m, "y = x * scale + W")


def test_array_mutated_in_place_by_value_is_not_stale_when_equal(load):
    m = load(
        """
        import jax, numpy as np
        table = np.arange(4.0)
        jit_fn = jax.jit(lambda x: x + table)
        """
    )
    with js.watch_purity():
        m.jit_fn(1.0)
    m.table = m.table.copy()  # a new object with the same values
    assert js.stale(m.jit_fn) == []
    m.table[0] = 10.0
    assert [f.name for f in js.stale(m.jit_fn)] == ["table"]


def test_attribute_of_captured_object_is_compared(load):
    m = load(
        """
        import jax
        class Model:
            def __init__(self):
                self.temperature = 1.0
        model = Model()
        @jax.jit
        def fn(x):
            return x / model.temperature
        """
    )
    with js.watch_purity():
        m.fn(1.0)
    m.model.temperature = 0.5
    (finding,) = js.stale(m.fn)
    assert finding.name == "model.temperature"
    assert (finding.captured, finding.current) == ("1.0", "0.5")


def test_trace_time_side_effects_are_each_reported_at_their_line(load, capsys):
    m = load(
        """
        import jax, time, random
        log = []
        registry = {}
        counter = 0
        @jax.jit
        def fn(x):
            global counter
            print("tracing", x)
            log.append(x)
            registry["last"] = 1
            counter += 1
            t = time.time()
            r = random.random()
            return x * 2
        """
    )
    with js.watch_purity() as plog:
        m.fn(1.0)
        m.fn(2.0)  # cache hit: nothing runs, nothing new is recorded
    assert capsys.readouterr().out.count("tracing") == 1
    effects = {f.name: f for f in plog.findings if f.kind == "trace_time_side_effect"}
    assert set(effects) == {
        "print",
        "log.append",
        "registry",
        "counter",
        "time.time",
        "random.random",
    }
    assert effects["print"].source.line == line_of(m, 'print("tracing", x)')
    assert "jax.debug.print" in effects["print"].hint
    assert effects["log.append"].source.line == line_of(m, "log.append(x)")
    assert effects["counter"].captured == "0" and effects["counter"].current == "1"
    assert "jax.random" in effects["random.random"].hint
    assert "argument" in effects["time.time"].hint


def test_side_effect_in_a_helper_called_during_tracing(load):
    m = load(
        """
        import jax
        seen = []
        def helper(x):
            seen.append(1)
            return x + 1
        jit_fn = jax.jit(lambda x: helper(x) * 2)
        """
    )
    with js.watch_purity() as plog:
        m.jit_fn(1.0)
    (finding,) = plog.findings
    assert finding.name == "seen.append"
    assert finding.source.line == line_of(m, "seen.append(1)")


@pytest.mark.parametrize(
    "body",
    [
        # module-level functions and modules read while tracing
        "import jax, jax.numpy as jnp\ndef act(x):\n    return jnp.tanh(x)\nfn = jax.jit(lambda x: act(x) + jnp.pi)\n",
        # a constant that never changes
        "import jax\nSCALE = 3.0\nfn = jax.jit(lambda x: x * SCALE)\n",
        # jax.debug.print runs on every call: not a trace-time side effect
        "import jax\ndef g(x):\n    jax.debug.print('x={x}', x=x)\n    return x\nfn = jax.jit(g)\n",
        # values passed as arguments and static arguments
        "import jax\ndef g(x, n):\n    return x * n\nfn = jax.jit(g, static_argnums=1)\n",
        # a local list mutated inside the function is not an outer object
        "import jax\ndef g(x):\n    acc = []\n    acc.append(x)\n    return acc[0]\nfn = jax.jit(g)\n",
    ],
    ids=[
        "functions-and-modules",
        "unchanged-constant",
        "debug-print",
        "arguments",
        "local-list",
    ],
)
def test_ordinary_code_has_no_findings(load, body):
    m = load(body)
    with js.watch_purity() as plog:
        args = (jnp.ones(2), 3) if "static_argnums" in body else (jnp.ones(2),)
        jax.block_until_ready(m.fn(*args))
    assert plog.findings == []


def test_stale_on_a_function_never_traced_while_watching_says_how_to_fix():
    fn = jax.jit(lambda x: x + 1)
    with pytest.raises(js.InvalidCallError, match=r"start js\.watch_purity"):
        js.stale(fn)
    with pytest.raises(js.InvalidCallError, match=r"expects a .*function"):
        js.stale(42)


def test_watcher_is_zero_cost_when_stopped_and_restores_jax():
    assert not cpurity.trace_hook_installed()
    log = js.watch_purity().start()
    assert cpurity.trace_hook_installed()
    log.stop()
    log.stop()  # repeated stop is harmless
    assert not cpurity.trace_hook_installed()
    with pytest.raises(RuntimeError), js.watch_purity():
        assert cpurity.trace_hook_installed()
        raise RuntimeError("boom")
    assert not cpurity.trace_hook_installed()


def test_a_started_log_dropped_without_stop_stops_when_collected():
    # the notebook pattern: a cell `log = js.watch_purity(); log.start()` run 3 times
    for _ in range(3):
        log = js.watch_purity()
        log.start()
    kept = weakref.ref(log)
    del log
    gc.collect()
    assert kept() is None
    assert not cpurity.trace_hook_installed()
    jax.jit(lambda x: x + 1)(jnp.ones(3))  # traced with no log left: nothing runs
    assert not cpurity.trace_hook_installed()


def test_a_log_held_by_the_user_keeps_watching_after_collection(load):
    m = load("import jax\nlog = []\ndef g(x):\n    log.append(1)\n    return x\n")
    held = js.watch_purity().start()
    dropped = js.watch_purity().start()
    del dropped
    gc.collect()
    assert cpurity.trace_hook_installed()
    jax.jit(m.g)(1.0)
    held.stop()
    assert [f.name for f in held.side_effects] == ["log.append"]
    assert not cpurity.trace_hook_installed()


def test_nested_watchers_each_see_traces_inside_them(load):
    m = load(
        "import jax\nlog = []\ndef g(x):\n    log.append(1)\n    return x\nfn = jax.jit(g)\nfn2 = jax.jit(lambda x: g(x) + 1)\n"
    )
    with js.watch_purity() as outer:
        m.fn(1.0)
        with js.watch_purity() as inner:
            m.fn2(1.0)
    assert len(outer.side_effects) == 2
    assert len(inner.side_effects) == 1


def test_records_do_not_keep_user_arrays_or_functions_alive(load):
    m = load(
        "import jax, jax.numpy as jnp\nbig = jnp.ones(1000)\ndef g(x):\n    return x + big\n"
    )
    array_ref = weakref.ref(m.big)
    fn = jax.jit(m.g)
    with js.watch_purity():
        fn(jnp.ones(1000))
    fn_ref = weakref.ref(m.g)
    del m.big, m.g, fn
    jax.clear_caches()
    gc.collect()
    assert array_ref() is None
    assert fn_ref() is None


def test_purity_log_renders_as_text_and_escaped_html(load):
    m = load(
        "import jax\nvalue = '<script>alert(1)</script>'\nfn = jax.jit(lambda x: x * len(value))\n"
    )
    with js.watch_purity() as plog:
        m.fn(1.0)
    m.value = "<b>changed</b>"
    text = str(plog)
    assert "value" in text and "stale value" in text
    html = plog._repr_mimebundle_()["text/html"]
    assert "<script>alert" not in html and "&lt;script&gt;" in html


# ------------------------------------------------------------------ the log's API

_TWO_FUNCTIONS = """
import jax
log = []
shift = 1.0
def noisy(x):
    log.append(1)
    print("tracing")
    return x + shift
def other(x):
    return x * shift
jit_noisy, jit_other = jax.jit(noisy), jax.jit(other)
"""


def test_reentering_an_active_log_is_rejected_and_keeps_the_outer_block():
    log = js.watch_purity()
    with log:
        with pytest.raises(js.InvalidCallError, match="already watching"), log:
            pass  # pragma: no cover - not reached
        assert log.active and cpurity.trace_hook_installed()
    assert not log.active and not cpurity.trace_hook_installed()
    log.start()
    with pytest.raises(js.InvalidCallError, match="already watching"):
        log.start()
    log.stop()


def test_summary_is_a_record_with_one_row_per_function(load, capsys):
    m = load(_TWO_FUNCTIONS)
    with js.watch_purity() as plog:
        m.jit_noisy(1.0)
        m.jit_other(1.0)
    m.shift = 2.0
    summary = plog.summary()
    assert isinstance(summary, PuritySummary)
    assert [r.function for r in summary.rows] == ["noisy", "other"]
    noisy = summary.row("noisy")
    assert (noisy.side_effects, noisy.stale_values, noisy.findings) == (2, 1, 3)
    assert noisy.names == ["print", "log.append", "shift"]  # in the order seen
    assert summary.row("other").names == ["shift"]
    assert summary.total_findings == len(plog.findings) == 4
    assert "tracing" in capsys.readouterr().out


def test_clear_forgets_what_was_recorded_and_reset_is_its_old_name(load, capsys):
    m = load(_TWO_FUNCTIONS)
    with js.watch_purity() as plog:
        m.jit_noisy(1.0)
        assert len(plog.side_effects) == 2
        plog.clear()
        assert plog.findings == [] and plog.summary().rows == []
        m.jit_other(1.0)
    m.shift = 2.0
    assert [(f.function, f.name) for f in plog.findings] == [("other", "shift")]
    plog.reset()
    assert plog.findings == []
    assert js.PurityLog.reset is js.PurityLog.clear


_INNER_FUNCTIONS = """
import functools
import jax, jax.numpy as jnp

@jax.jit
def step(xs, scale):
    offset = scale * 2
    steps = xs.shape[0]
    history = []

    def body(carry, x):
        return carry * scale + x + offset, carry

    @jax.checkpoint
    def loss_fn(p):
        return jnp.sum(p * offset) / steps

    @jax.jit
    def inner(y):
        return y + offset

    carry, trail = jax.lax.scan(body, jnp.zeros(()), xs)
    branch = jax.lax.cond(carry > 0, lambda: carry * scale, lambda: carry - offset)
    history.append(branch)
    return inner(carry) + jax.grad(loss_fn)(xs).sum() + history[-1], trail
"""


def test_inner_functions_reading_the_enclosing_functions_locals_have_no_findings(load):
    m = load(_INNER_FUNCTIONS)
    with js.watch_purity() as plog:
        jax.block_until_ready(m.step(jnp.ones(4), 0.5))
        jax.block_until_ready(m.step(jnp.ones(4), 2.0))
    assert plog.findings == []
    assert js.stale(m.step) == []


def test_a_factory_that_calls_its_jitted_function_before_returning_it(load):
    m = load(
        """
        import jax
        def make(scale):
            fn = jax.jit(lambda x: x * scale)
            fn(1.0)  # warm up while make is still running
            def set_scale(v):
                nonlocal scale
                scale = v
            return fn, set_scale
        """
    )
    with js.watch_purity():
        fn, set_scale = m.make(2.0)
    assert js.stale(fn) == []
    set_scale(3.0)
    assert [(f.name, f.captured, f.current) for f in js.stale(fn)] == [
        ("scale", "2.0", "3.0")
    ]


class _RecordingSink:
    """An object with ``PuritySink``'s method and nothing else of a log."""

    def __init__(self):
        self.traces = []

    def add_trace(self, fn, effects):
        self.traces.append((fn.__name__, [f.name for f in effects]))


def test_the_tracing_hook_delivers_to_any_object_with_the_sink_method(load):
    from jaxscope._purity import tracing

    m = load("import jax\nlog = []\ndef g(x):\n    log.append(1)\n    return x\n")
    sink = _RecordingSink()
    tracing.attach(sink)
    try:
        jax.jit(m.g)(1.0)
    finally:
        tracing.detach(sink)
    assert not cpurity.trace_hook_installed()
    assert sink.traces == [("g", ["log.append"])]
