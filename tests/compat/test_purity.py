"""compat.purity: the trace hook around jit's tracing, on real programs."""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp

from jaxscope.compat import purity as cpurity


def test_trace_listener_sees_each_trace_of_a_user_function_once():
    seen = []

    def body(x):
        return x * 2

    remove = cpurity.add_trace_listener(
        lambda fun: seen.append(fun) or fun, lambda tok, ok: None
    )
    try:
        fn = jax.jit(body)
        fn(jnp.ones(3))
        fn(jnp.ones(3))  # C++ cache hit: the hook is not reached
        fn(jnp.ones(4))  # a new shape traces again
    finally:
        remove()
    assert seen.count(body) == 2
    assert not cpurity.trace_hook_installed()


def test_exit_callback_reports_whether_the_trace_completed():
    exits = []

    def bad(x):
        raise ValueError("inside")

    remove = cpurity.add_trace_listener(
        lambda fun: fun, lambda tok, ok: exits.append((tok, ok))
    )
    try:
        with contextlib.suppress(ValueError):
            jax.jit(bad)(1.0)
    finally:
        remove()
    assert (bad, False) in exits


def test_a_failing_listener_never_reaches_the_traced_program():
    def broken_enter(fun):
        raise RuntimeError("listener bug on enter")

    def broken_exit(token, ok):
        raise RuntimeError("listener bug on exit")

    def bad(x):
        raise ValueError("the user's own error")

    remove = cpurity.add_trace_listener(broken_enter, broken_exit)
    try:
        assert float(jax.jit(lambda x: x * 3)(jnp.float32(2.0))) == 6.0
        try:
            jax.jit(bad)(1.0)
        except ValueError as exc:  # the user's error, not the listener's
            assert "the user's own error" in str(exc)
        else:  # pragma: no cover
            raise AssertionError("the user's error was swallowed")
    finally:
        remove()
    assert not cpurity.trace_hook_installed()
