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
