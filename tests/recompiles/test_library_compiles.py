"""Every compile the process makes is an event: jits of JAX's transformations and
libraries' loops run outside jit included, at the user's line that called into them.

Checked against JAX's own account of its misses (``jax_explain_cache_misses``).
"""

from __future__ import annotations

import logging
import re
import sys

import jax
import jax.numpy as jnp
import optax
import pytest

import jaxscope as js

_MISS = re.compile(
    r"TRACING CACHE MISS at (?P<site>\S+):(?P<line>\d+):\d+ \((?P<caller>[^)]*)\):\n"
    r"  (?:never seen function:\n    |for )(?P<fn>\S+)"
)


class _Misses(logging.Handler):
    """The cache misses JAX explains: ``(function, call file, line, caller)``."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.misses: list[tuple[str, str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        match = _MISS.match(record.getMessage())
        if match:
            site, line = match.group("site"), int(match.group("line"))
            self.misses.append((match.group("fn"), site, line, match.group("caller")))


def _watched_with_jax_explaining(loop):
    """``(log, misses)``: the watcher's events and JAX's explained misses of ``loop``."""
    handler = _Misses()
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.explain_cache_misses(True), js.watch_recompiles() as log:
            loop()
    finally:
        logger.removeHandler(handler)
    return log, handler.misses


def loss(w, x):
    return jnp.sum((x @ w) ** 2)


def test_jit_of_grad_is_watched_beside_the_jit_of_the_function():
    # JAX's shard_map notebook idiom: jax.jit(jax.grad(loss)) next to jax.jit(loss)
    step = jax.jit(jax.grad(loss))
    direct = jax.jit(loss)
    w = jnp.ones(3)
    batches = [jnp.ones((bs, 3)) for bs in (32, 32, 24)]

    def loop():
        for x in batches:
            step(w, x)
            direct(w, x)

    log, misses = _watched_with_jax_explaining(loop)
    assert len(misses) == 4  # two XLA compiles named jit(loss) for each
    assert len(log.events) == len(misses)  # every miss JAX explains is an event
    assert [e.function for e in log.events] == ["grad(loss)", "loss"] * 2
    assert [e.kinds for e in log.events] == [["first_call"]] * 2 + [["shape"]] * 2
    assert {e.call_site and e.call_site.line for e in log.events} == {
        m[2] for m in misses
    }
    assert log.events[0].defined_at == log.events[1].defined_at  # loss's own line
    assert log.internal_compiles == 0  # neither is filed as JAX's own


def _lbfgs_steps(n: int):
    """Optax's L-BFGS as its docs write it, not jitted: the line search runs
    ``lax.while_loop``/``cond``/``scan`` on functions optax defines on each call."""

    def f(x):
        return jnp.sum((x - 1.0) ** 2) + jnp.sum(x**4)

    params = jnp.zeros(3)
    opt = optax.lbfgs()
    opt_state = opt.init(params)
    value_and_grad = optax.value_and_grad_from_state(f)

    def loop():
        nonlocal params, opt_state
        for _ in range(n):
            value, grad = value_and_grad(params, state=opt_state)
            updates, opt_state = opt.update(
                grad, opt_state, params, value=value, grad=grad, value_fn=f
            )
            params = optax.apply_updates(params, updates)

    return loop


def test_library_loops_run_outside_jit_are_events_at_the_users_line():
    log, misses = _watched_with_jax_explaining(_lbfgs_steps(2))
    assert misses and log.events
    here = __file__
    assert all(e.call_site is not None for e in log.events)
    assert {e.call_site and e.call_site.file for e in log.events} == {js_file(here)}
    # every function JAX retraced is an event's, or traced inside one's function
    # (optax's step_fn calls _zoom_into_interval)
    covered = {name for e in log.events for name in _functions(e.function)}
    for fn, _site, _line, caller in misses:
        assert fn in covered or caller.rsplit(".", 1)[-1] in covered, (fn, caller)
    first, second = (
        log.events[: len(log.events) // 2],
        log.events[len(log.events) // 2 :],
    )
    assert [e.function for e in first] == [e.function for e in second]
    assert all(e.kinds == ["first_call"] for e in first)
    # the second step compiles everything again: optax made new functions
    for e in second:
        (cause,) = e.causes
        assert cause.kind == "redefined_function"
        assert cause.before != cause.after
        assert "new function object" in cause.hint and "optax" in cause.hint
        assert f"{e.call_site}" in cause.hint  # the user's line to jit
    assert any(e.function == "lax.while_loop(step_cond_fn, step_fn)" for e in second)


def test_a_loop_outside_jit_on_functions_defined_once_compiles_once():
    def cond(c):
        return c < 3.0

    def body(c):
        return c + 1.0

    def mse(w, x):
        return jnp.mean((x @ w) ** 2)

    step = jax.jit(jax.grad(mse))
    w, x = jnp.ones(3), jnp.ones((4, 3))

    def loop():
        for _ in range(3):
            jax.lax.while_loop(cond, body, 0.0)
            step(w, x)

    log, misses = _watched_with_jax_explaining(loop)
    assert [e.function for e in log.events] == [
        "lax.while_loop(cond, body)",
        "grad(test_a_loop_outside_jit_on_functions_defined_once_compiles_once"
        ".<locals>.mse)",
    ]
    assert [e.kinds for e in log.events] == [["first_call"], ["first_call"]]
    assert len(misses) == 3  # cond, body and mse traced once each


def js_file(path: str):
    from jaxscope._source import display_filename

    return display_filename(path)


def _functions(name: str) -> list[str]:
    """``"lax.while_loop(step_cond_fn, step_fn)"`` -> its function names."""
    inside = name[name.index("(") + 1 : -1] if name.endswith(")") else name
    return [part.strip() for part in inside.split(",")]


@pytest.mark.slow
def test_the_pytest_marker_counts_library_and_transformed_compiles(pytester):
    pytester.makepyfile(
        test_grad="""
        import jax, jax.numpy as jnp, pytest

        def loss(w, x):
            return jnp.sum((x @ w) ** 2)

        @pytest.mark.jax_max_compiles(1)
        def test_grad_batches():
            step = jax.jit(jax.grad(loss))
            for bs in (32, 24):
                step(jnp.ones(3), jnp.ones((bs, 3)))
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "jax_max_compiles(1) exceeded: grad(loss) compiled 2 times*",
            "  grad(loss) at test_grad.py:10: shape x: f32?32,3? → f32?24,3? *",
        ]
    )
    assert sys.executable


def test_a_library_jitting_a_new_function_per_call_says_to_jit_the_callers_code(
    tmp_path, monkeypatch
):
    lib = tmp_path / "steplib"
    lib.mkdir()
    (lib / "__init__.py").write_text(
        "import jax\n\ndef scale(x):\n    return jax.jit(lambda v: v * 2.0)(x)\n"
    )
    monkeypatch.setenv("JAXSCOPE_LIBRARY_PATHS", str(lib))
    monkeypatch.syspath_prepend(str(tmp_path))
    import steplib

    def loop():
        for _ in range(2):
            steplib.scale(jnp.ones(3))

    log, misses = _watched_with_jax_explaining(loop)
    assert len(log.events) == len(misses) == 2
    cause = log.events[1].causes[0]
    assert cause.kind == "redefined_function"
    assert "jit your code that calls it" in cause.hint and "hoist" not in cause.hint
    assert log.events[1].call_site is not None
    assert log.events[1].call_site.file == js_file(__file__)
