"""js.compile_profile: cold stage times, per-line counts that add up and agree with
JAX's own eqn_count_pprof dump, diagnoses with fixes, the user's caches untouched."""

from __future__ import annotations

from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxscope as js
from jaxscope._compile.pprof import read_eqn_counts
from jaxscope._paths import display_filename

HERE = display_filename(__file__)
W_BIG = jnp.ones((1024, 512), jnp.float32)  # 2 MiB, closed over below


def unrolled(x):
    for _ in range(2000):
        x = jnp.sin(x) * 1.01  # UNROLLED
    return x


def scanned(x):
    def body(c, _):
        return jnp.sin(c) * 1.01, None

    return jax.lax.scan(body, x, None, length=2000)[0]


def baked(x):
    return jnp.tanh(x @ W_BIG)  # BAKED


def baked_fixed(x, w):
    return jnp.tanh(x @ w)


@jax.jit
def inner(x):
    return jnp.cos(x) + 1.0  # INNER


def nested(x):
    y = inner(x)  # CALLS INNER
    y = jax.lax.fori_loop(0, 3, lambda i, c: c * 2.0 + jnp.sin(c), y)  # LOOP
    z = jax.checkpoint(lambda a: jnp.exp(a) * a)(y)  # REMAT
    return inner(z).sum()  # CALLS INNER AGAIN


@pytest.fixture(scope="module")
def unrolled_profile():
    return js.compile_profile(unrolled)(jnp.ones(3))


@pytest.fixture(scope="module")
def nested_profile():
    return js.compile_profile(nested)(jnp.ones(8))


def test_unrolled_loop_line_is_first_with_its_count_and_fix(unrolled_profile, line_of):
    cp = unrolled_profile
    top = cp.top(1)[0]
    assert top.source.line == line_of(unrolled, "UNROLLED")
    assert top.eqns == 4000
    [diagnosis] = cp.diagnoses
    assert diagnosis.kind == "unrolled_loop"
    assert diagnosis.count == 2000
    assert diagnosis.source.line == top.source.line
    assert "lax.fori_loop" in diagnosis.fix and "lax.scan" in diagnosis.fix
    assert diagnosis.saves == 4000 - 2


def test_scanned_equivalent_gets_no_diagnosis_and_marks_its_body():
    cp = js.compile_profile(scanned)(jnp.ones(3))
    assert cp.diagnoses == ()
    assert cp.totals.eqns < 10
    body = [c for c in cp.lines if c.bodies]
    assert body and all(b.bodies == ("scan body",) for b in body)


def test_stage_seconds_are_measured_and_positive(unrolled_profile):
    stages = unrolled_profile.stages
    assert stages.trace > 0 and stages.lower > 0 and stages.compile > 0
    assert stages.total == pytest.approx(stages.trace + stages.lower + stages.compile)


@pytest.mark.parametrize("which", ["unrolled", "nested"])
def test_per_line_counts_add_up_to_the_totals(which, unrolled_profile, nested_profile):
    cp = unrolled_profile if which == "unrolled" else nested_profile
    parts = [*cp.lines, cp.outside]
    assert sum(c.eqns for c in parts) == cp.totals.eqns
    assert sum(c.hlo_ops for c in parts) == cp.totals.hlo_ops
    assert sum(c.stablehlo_ops for c in parts) == cp.totals.stablehlo_ops
    assert sum(c.constant_bytes for c in parts) == cp.totals.constant_bytes
    trace = sum(c.trace_seconds for c in parts)
    assert trace == pytest.approx(cp.stages.trace, rel=0.1)
    compile_estimate = sum(c.compile_seconds_estimate for c in parts)
    assert compile_estimate == pytest.approx(cp.stages.compile, rel=1e-6)


def test_trace_time_goes_to_the_line_that_traces(unrolled_profile, line_of):
    cp = unrolled_profile
    line = cp.line(line_of(unrolled, "UNROLLED"))
    assert cp.trace_samples > 0
    assert line.trace_seconds > 0.5 * cp.stages.trace


def test_nested_bodies_count_once_and_are_marked(nested_profile, line_of):
    cp = nested_profile
    inner_line = cp.line(line_of(inner.__wrapped__, "INNER"))
    # inner is called twice with the same shapes: JAX keeps one jaxpr, counted once
    assert inner_line.eqns == 2
    loop = cp.line(line_of(nested, "LOOP"))
    assert set(loop.bodies) & {"scan body", "while body"}  # fori_loop: a scan
    remat = cp.line(line_of(nested, "REMAT"))
    assert "remat body" in remat.bodies
    call = cp.line(line_of(nested, "CALLS INNER"))
    assert call.eqns_cumulative >= call.eqns + inner_line.eqns
    assert any(f.name == "inner" for f in cp.functions)


# ------------------------------------------------- agreement with eqn_count_pprof


@pytest.mark.parametrize("program", [nested, unrolled], ids=["nested", "unrolled"])
def test_equations_per_line_agree_with_jax_eqn_count_pprof(program, tmp_path):
    x = jnp.ones(8) if program is nested else jnp.ones(3)
    fn = jax.jit(program)
    before = {k: jax.config.values[k] for k in ("jax_dump_ir_to", "jax_dump_ir_modes")}
    try:
        jax.config.update("jax_dump_ir_to", str(tmp_path))
        jax.config.update("jax_dump_ir_modes", "eqn_count_pprof")
        fn.lower(x)
    finally:
        for key, value in before.items():
            jax.config.update(key, value)
    [dump] = sorted(tmp_path.glob(f"*{program.__name__}*.eqn_count_pprof"))
    theirs = read_eqn_counts(dump)
    cp = js.compile_profile(program)(x)
    ours = Counter({c.source.key: c.eqns for c in cp.lines if c.eqns})
    theirs = Counter(
        {
            (display_filename(f), n): v
            for (f, n), v in (k for k in theirs.items() if k[0])
        }
    )
    assert ours == theirs
    assert sum(theirs.values()) == cp.totals.eqns


# ------------------------------------------------------------ baked constants


def test_large_closed_over_constant_is_named_with_its_fix(line_of):
    cp = js.compile_profile(baked)(jnp.ones((4, 1024)))
    [d] = [d for d in cp.diagnoses if d.kind == "baked_constant"]
    assert d.source.line == line_of(baked, "BAKED")
    assert "W_BIG" in d.message and "2 MiB" in d.message
    assert "pass W_BIG as an argument: def baked(..., W_BIG)" in d.fix
    assert cp.line(line_of(baked, "BAKED")).constant_bytes == W_BIG.nbytes


def test_constant_passed_as_argument_as_the_fix_says_is_not_diagnosed():
    cp = js.compile_profile(baked_fixed)(jnp.ones((4, 1024)), W_BIG)
    assert cp.diagnoses == ()
    assert cp.totals.constant_bytes == 0


def test_small_numpy_constant_is_not_diagnosed():
    table = np.arange(16, dtype=np.float32)
    cp = js.compile_profile(lambda x: x * table)(jnp.ones(16))
    # embedded (JAX 0.10) or written into the program as a literal (JAX 0.9)
    assert cp.totals.constant_bytes in (0, table.nbytes)
    assert cp.diagnoses == ()


# ------------------------------------------------------------ caches untouched


def test_users_next_call_still_hits_its_in_memory_cache():
    f = jax.jit(lambda x: jnp.sin(x) * 2)
    x = jnp.ones(5)
    f(x)
    size = f._cache_size()
    first = js.compile_profile(f)(x)
    traces = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, secs, **kw: (
            traces.append(event) if event.endswith("jaxpr_trace_duration") else None
        )
    )
    second = js.compile_profile(f)(x)
    # cold every time: the second profile traced again rather than reading a cache
    assert traces, "the second profile was served from JAX's trace cache"
    assert second.totals.eqns == first.totals.eqns
    assert first.compiles_so_far == second.compiles_so_far == 1
    with js.watch_recompiles() as log:
        f(x)
    assert f._cache_size() == size
    assert log.events == []


def test_static_arguments_of_a_jitted_function_are_kept():
    f = jax.jit(lambda x, n: x * n, static_argnums=1)
    cp = js.compile_profile(f)(jnp.ones(3), 4)
    assert cp.totals.eqns == 1


def test_bad_input_is_one_clear_line():
    with pytest.raises(js.InvalidCallError, match="expects a callable"):
        js.compile_profile(3)
    with pytest.raises(js.InvalidCallError, match="cannot trace"):
        js.compile_profile(lambda x: x)(object())


# ------------------------------------------------------------ rendering


def test_text_shows_stages_diagnosis_and_the_line_table(unrolled_profile):
    text = str(unrolled_profile)
    assert text.startswith("Compile profile of unrolled: ")
    assert "[unrolled_loop]" in text
    assert "Line #" in text and "x = jnp.sin(x) * 1.01" in text
    assert "estimate" in text


def test_html_shades_lines_and_escapes_source(unrolled_profile):
    page = unrolled_profile._repr_mimebundle_()["text/html"]
    assert 'class="jaxscope-compile"' in page
    assert "background:rgba(" in page
    assert "lax.fori_loop" in page
    assert "<script" not in page


def _timer_state():
    import signal

    return {
        name: (signal.getsignal(getattr(signal, name)), signal.getitimer(timer))
        for name, timer in (
            ("SIGALRM", signal.ITIMER_REAL),
            ("SIGPROF", signal.ITIMER_PROF),
        )
    }


def _free(state):
    import signal

    handler, running = state
    return handler in (signal.SIG_DFL, None) and running == (0.0, 0.0)


def test_the_sampling_timer_and_signal_handler_are_restored():
    before = _timer_state()
    cp = js.compile_profile(unrolled)(jnp.ones(3))
    wall, cpu = _free(before["SIGALRM"]), _free(before["SIGPROF"])
    assert ("(a timer signal)" in cp.trace_sampling) is wall
    assert ("of CPU time" in cp.trace_sampling) is (cpu and not wall)
    after = _timer_state()
    for name in before:
        assert after[name][0] == before[name][0]
        assert (after[name][1] == (0.0, 0.0)) is (before[name][1] == (0.0, 0.0))


def test_a_profile_made_on_another_thread_samples_from_a_second_thread():
    import threading

    out = []
    worker = threading.Thread(
        target=lambda: out.append(js.compile_profile(unrolled)(jnp.ones(3)))
    )
    worker.start()
    worker.join()
    [cp] = out
    assert "second thread" in cp.trace_sampling
    assert cp.totals.eqns == 4000
    parts = [*cp.lines, cp.outside]
    assert sum(c.trace_seconds for c in parts) == pytest.approx(cp.stages.trace)


def test_text_lists_the_jitted_functions_inside(nested_profile):
    text = str(nested_profile)
    assert "Jitted functions inside" in text
    assert "inner: 2 eqns called at" in text


@pytest.fixture
def alarm_taken():
    """SIGALRM held as pytest-timeout holds it for every test: a handler and a
    running real-time timer (one that fails the test should it fire)."""
    import signal

    def on_alarm(signum, frame):
        raise AssertionError("the user's alarm must not fire in this test")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    timer = signal.setitimer(signal.ITIMER_REAL, 600)
    try:
        yield on_alarm
    finally:
        signal.setitimer(signal.ITIMER_REAL, *timer)
        signal.signal(signal.SIGALRM, previous)


def test_an_alarm_the_user_set_is_left_alone_and_the_cpu_timer_samples(
    alarm_taken, line_of
):
    import signal

    cp = js.compile_profile(unrolled)(jnp.ones(3))
    assert signal.getsignal(signal.SIGALRM) is alarm_taken
    assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 600
    assert signal.getsignal(signal.SIGPROF) in (signal.SIG_DFL, None)
    assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    assert "of CPU time" in cp.trace_sampling
    assert cp.totals.eqns == 4000
    # the samples are in the loop's line, not in JAX's frames around it
    assert cp.trace_samples > 0
    line = cp.line(line_of(unrolled, "UNROLLED"))
    assert line.trace_seconds > 0.5 * cp.stages.trace


def test_with_both_timers_in_use_a_thread_samples_and_both_are_left_alone(
    alarm_taken,
):
    import signal

    def on_prof(signum, frame):
        raise AssertionError("the user's profiling timer must not fire here")

    previous = signal.signal(signal.SIGPROF, on_prof)
    try:
        cp = js.compile_profile(unrolled)(jnp.ones(3))
        assert signal.getsignal(signal.SIGPROF) is on_prof
        assert signal.getitimer(signal.ITIMER_PROF) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGPROF, previous)
    assert signal.getsignal(signal.SIGALRM) is alarm_taken
    assert "second thread" in cp.trace_sampling
    assert cp.totals.eqns == 4000


def test_jax_own_jitted_helpers_are_not_listed_as_functions():
    cp = js.compile_profile(lambda x: inner(jnp.where(x > 0, x, 0.0)))(jnp.ones(3))
    assert [f.name for f in cp.functions] == ["inner"]
