"""Ctrl-C: an interrupted equation runs again on resume; the prompt survives it."""

from __future__ import annotations

import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxscope as js
from jaxscope._stepper.magic import StepperPrompt


def _interrupting_program():
    """A program whose callback raises KeyboardInterrupt on its first call only, as a
    Ctrl-C arriving while that equation runs would."""
    calls = []

    def callback(value):
        calls.append(np.asarray(value))
        if len(calls) == 1:
            raise KeyboardInterrupt

    def f(x):
        y = jnp.sin(x)
        jax.debug.callback(callback, y)
        return y * 2.0

    return f, calls


def test_an_interrupted_run_pauses_before_the_equation_and_resumes():
    f, calls = _interrupting_program()
    x = jnp.arange(3.0)
    s = js.step(f)(x)
    with pytest.raises(KeyboardInterrupt):
        s.run()
    assert s.reason == "interrupted" and not s.done
    assert s.current is not None and s.current.primitive == "debug_callback"
    s.run()
    assert s.done and len(calls) == 2
    np.testing.assert_array_equal(s.result, jnp.sin(x) * 2.0)


@pytest.fixture
def ctrl_c_reaches_python():
    """Python's own SIGINT handler, as in a terminal. A test run started in the
    background by a non-interactive shell (`cmd &`) ignores SIGINT: there Python
    never hears a Ctrl-C, and the stepper rightly leaves that alone."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _ctrl_c_caught_under_the_equation(then):
    """A program whose callback gets a real Ctrl-C (SIGINT) on its first call, which
    the code under it catches, as JAX 0.9's ``Primitive.bind`` catches everything
    around its type check: ``then`` is what that code does next, "swallow" it and
    go on, or "convert" it into another error."""
    import os
    import signal
    import time

    calls = []

    def callback(value):
        calls.append(np.asarray(value))
        if len(calls) == 1:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(10)  # the handler interrupts the sleep at once
            except KeyboardInterrupt:
                if then == "convert":
                    raise RuntimeError("couldn't apply typeof to args") from None

    def f(x):
        y = jnp.sin(x)
        jax.debug.callback(callback, y)
        return y * 2.0

    return f, calls


@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_a_ctrl_c_that_code_under_the_equation_swallows_still_pauses_the_run():
    f, calls = _ctrl_c_caught_under_the_equation("swallow")
    x = jnp.arange(3.0)
    s = js.step(f)(x)
    with pytest.raises(KeyboardInterrupt):
        s.run()
    # the equation finished: paused after it, before the next one
    assert s.reason == "interrupted" and not s.done and len(calls) == 1
    assert s.current is not None and s.current.primitive == "mul"
    s.run()
    assert s.done and len(calls) == 1
    np.testing.assert_array_equal(s.result, jnp.sin(x) * 2.0)


@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_a_ctrl_c_that_code_under_the_equation_turns_into_an_error_pauses_before_it():
    f, calls = _ctrl_c_caught_under_the_equation("convert")
    x = jnp.arange(3.0)
    s = js.step(f)(x)
    with pytest.raises(KeyboardInterrupt):
        s.run()
    # not a failed program: paused before the equation, which runs again on resume
    assert s.reason == "interrupted" and not s.done
    assert s.current is not None and s.current.primitive == "debug_callback"
    s.run()
    assert s.done and len(calls) == 2
    np.testing.assert_array_equal(s.result, jnp.sin(x) * 2.0)


def test_an_equation_that_fails_without_a_ctrl_c_still_fails():
    def callback(value):
        raise RuntimeError("the callback's own error")

    def f(x):
        jax.debug.callback(callback, x)
        return x + 1.0

    s = js.step(f)(jnp.arange(3.0))
    with pytest.raises(js.StepError, match="the callback's own error"):
        s.run()
    assert s.reason == "error" and s.done


def test_ctrl_c_while_a_command_runs_returns_to_the_prompt(fake_io):
    f, _ = _interrupting_program()
    s = js.step(f)(jnp.arange(3.0))
    stdin, stdout = fake_io(["c", "p y", "c"])
    StepperPrompt(s, stdin, stdout).run()
    out = stdout.getvalue()
    assert "Traceback" not in out
    first, rest = out.split("(jaxstep) c\n", 1)[1].split("(jaxstep) p y\n", 1)
    assert first.startswith("*** interrupted\n> ")
    assert "debug_callback" in first
    assert rest.startswith("y = Array([0.")
    assert "program finished (f); result: Array([0." in rest
    assert s.done


class _CtrlCStdin(io.StringIO):
    """stdin on which the user presses Ctrl-C at the prompt after ``lines``."""

    def readline(self, size: int | None = -1) -> str:
        line = super().readline()
        if not line:
            raise KeyboardInterrupt
        return line


def test_ctrl_c_at_the_prompt_leaves_it_cleanly():
    s = js.step(lambda x: jnp.cos(x) + 1.0)(jnp.ones(2))
    stdout = io.StringIO()
    assert StepperPrompt(s, _CtrlCStdin("n\n"), stdout).run() is s
    out = stdout.getvalue()
    assert out.rstrip().endswith("(jaxstep)")
    assert "Traceback" not in out and "KeyboardInterrupt" not in out
    assert not s.done and s.current is not None and s.current.primitive == "add"


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:os.fork():RuntimeWarning")
def test_ctrl_c_in_a_real_terminal_ipython_quits_the_prompt(tmp_path):
    pexpect = pytest.importorskip("pexpect")  # an IPython dependency on POSIX
    import os
    import pathlib
    import sys

    root = pathlib.Path(js.__file__).resolve().parent.parent
    env = dict(
        os.environ,
        PYTHONPATH=str(root),
        JAX_PLATFORMS="cpu",
        IPYTHONDIR=str(tmp_path),
        TERM="dumb",
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor"],
        env=env,
        encoding="utf-8",
        timeout=120,
        # A terminal's IPython takes Ctrl-C. A test run started in the background by
        # a non-interactive shell (`cmd &`) ignores SIGINT, and the child would
        # inherit that: the prompt would never hear the Ctrl-C.
        preexec_fn=_default_sigint,
    )
    try:
        child.expect(r"In \[1\]: ")
        child.sendline("%load_ext jaxscope")
        child.expect(r"In \[2\]: ")
        child.sendline("import jax.numpy as jnp; f = lambda x: jnp.cos(x) + 1.0")
        child.expect(r"In \[3\]: ")
        child.sendline("%jaxstep f(jnp.ones(2))")
        child.expect_exact("(jaxstep) ")
        child.sendline("n")
        child.expect_exact("(jaxstep) ")
        child.sendintr()  # Ctrl-C at the prompt
        child.expect(r"In \[4\]: ")
        seen = child.before
        child.sendline("print(_jaxstep.current.primitive, _jaxstep.done)")
        child.expect(r"In \[5\]: ")
        assert "add False" in child.before
        assert "Traceback" not in seen and "KeyboardInterrupt" not in seen
    finally:
        child.terminate(force=True)


def _rnn(wh, wx, xs):
    def cell(h, x):
        h = jnp.tanh(h @ wh + x @ wx)
        return h, h.sum()

    return jax.lax.scan(cell, jnp.zeros(8), xs)


def _rnn_args(steps):
    return jnp.eye(8) * 0.5, jnp.ones((4, 8)) * 0.1, jnp.ones((steps, 4)) * 0.01


def _sigint_after(seconds):
    import os
    import signal
    import threading

    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def _interrupted_run(stepper, seconds):
    timer = _sigint_after(seconds)
    try:
        with pytest.raises(KeyboardInterrupt):
            stepper.run()
    finally:
        timer.cancel()


@pytest.mark.slow
@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_a_sigint_during_run_pauses_inside_the_loop_iteration_and_resumes():
    import signal

    wh, wx, xs = _rnn_args(200_000)  # long enough that no run ends in 0.5 s
    s = js.step(_rnn)(wh, wx, xs)
    s.run(until="tanh")  # inside the body: the progress to keep is the iterations
    handler = signal.getsignal(signal.SIGINT)
    _interrupted_run(s, 0.5)
    assert signal.getsignal(signal.SIGINT) is handler  # restored
    assert s.reason == "interrupted" and not s.done
    frame = s.frames[-1]
    assert frame.label == "scan body" and frame.length == 200_000
    first = frame.iteration
    assert 0 < first < 200_000
    # the carry it reached is the loop's after that many iterations
    s.run(until=lambda eqn, values: eqn.primitive == "dot_general")
    assert s.frames[-1].iteration == first + 1 or s.frames[-1].iteration == first
    iteration = s.frames[-1].iteration
    want, _ = _rnn(wh, wx, xs[:iteration])
    np.testing.assert_allclose(s.namespace()["h"], want, rtol=1e-5)
    _interrupted_run(s, 0.5)  # resumes from there, not from the loop's start
    assert s.frames[-1].label == "scan body"
    assert s.frames[-1].iteration > iteration


@pytest.mark.slow
@pytest.mark.usefixtures("ctrl_c_reaches_python")
def test_a_sigint_while_a_long_scan_sets_up_pauses_inside_it_not_before_it():
    # Entering a 100,000-step scan splits its inputs into rows first (a second or
    # so): a Ctrl-C then pauses in the body's first iteration, the split kept,
    # rather than before the scan with the work thrown away.
    s = js.step(_rnn)(*_rnn_args(100_000))
    s.run(until="scan")
    _interrupted_run(s, 0.3)
    assert s.reason == "interrupted" and not s.done
    assert [f.label for f in s.frames] == ["_rnn", "scan body"]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:os.fork():RuntimeWarning")
def test_ctrl_c_in_a_real_terminal_keeps_the_scan_iteration_and_c_resumes(tmp_path):
    pexpect = pytest.importorskip("pexpect")
    import os
    import pathlib
    import re
    import sys
    import time

    root = pathlib.Path(js.__file__).resolve().parent.parent
    env = dict(
        os.environ,
        PYTHONPATH=str(root),
        JAX_PLATFORMS="cpu",
        IPYTHONDIR=str(tmp_path),
        TERM="dumb",
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor"],
        env=env,
        encoding="utf-8",
        timeout=120,
        preexec_fn=_default_sigint,
    )
    program = (
        "def rnn(wh, wx, xs):\n"
        "    def cell(h, x):\n"
        "        h = jnp.tanh(h @ wh + x @ wx)\n"
        "        return h, h.sum()\n"
        "    return lax.scan(cell, jnp.zeros(8), xs)\n"
    )
    try:
        child.expect(r"In \[1\]: ")
        child.sendline("%load_ext jaxscope")
        child.expect(r"In \[2\]: ")
        child.sendline("import jax.numpy as jnp; from jax import lax")
        child.expect(r"In \[3\]: ")
        child.send(program + "\n")
        child.expect(r"In \[4\]: ")
        child.sendline(
            "%jaxstep rnn(jnp.eye(8) * 0.5, jnp.ones((4, 8)), jnp.ones((200000, 4)))"
        )
        child.expect_exact("(jaxstep) ")
        child.sendline("u tanh")
        child.expect_exact("(jaxstep) ")
        iterations = []
        for _ in range(2):
            child.sendline("c")
            time.sleep(0.5)
            child.sendintr()
            child.expect_exact("*** interrupted")
            child.expect_exact("(jaxstep) ")
            found = re.search(r"scan body\[(\d+)/200000\]", child.before)
            assert found is not None, child.before
            iterations.append(int(found.group(1)))
        child.sendline("w")
        child.expect_exact("(jaxstep) ")
        assert f"scan body [iteration {iterations[-1]}/200000]" in child.before
        child.sendline("p h.shape")
        child.expect_exact("(jaxstep) ")
        assert "(8,)" in child.before
        child.sendline("q")
        child.expect(r"In \[5\]: ")
        assert 0 < iterations[0] < iterations[1]  # c resumed where it was
    finally:
        child.terminate(force=True)
