"""``python -m jaxscope``: bad command lines get one clear line on stderr and status 2."""

from __future__ import annotations

import subprocess
import sys

import pytest


def jaxscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jaxscope", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("argv", [["run"], ["run", "--leaks"]])
def test_run_without_a_script_names_the_missing_script(argv):
    proc = jaxscope(*argv)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "jaxscope run: no script given; usage: python -m jaxscope run script.py "
        "[script args...] [--recompiles] [--leaks]"
    ]


BOOL_OF_TRACER = """\
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    if x.sum() > 0:
        return x
    return -x


f(jnp.ones(3))
"""


def test_a_jax_error_in_the_script_gets_the_source_mapped_report(tmp_path):
    script = tmp_path / "bad_script.py"
    script.write_text(BOOL_OF_TRACER)
    proc = subprocess.run(
        [sys.executable, "-m", "jaxscope", "run", "bad_script.py", "--recompiles"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    err = proc.stderr
    # the traceback starts in the script, as python's own does
    assert "_cli.py" not in err and "<frozen runpy>" not in err and "runpy" not in err
    assert 'File "bad_script.py", line 12, in <module>' in err
    assert "TracerBoolConversionError" in err
    # then the report IPython and pytest show, on the user's line
    assert "jaxscope: source-mapped JAX error" in err
    assert "TracerBoolConversionError  at bad_script.py:7 in f" in err
    assert "→ 7 │     if x.sum() > 0:" in err
    assert "hint:" in err


def test_a_plain_python_error_keeps_pythons_traceback_only(tmp_path):
    script = tmp_path / "plain.py"
    script.write_text("def g():\n    raise ValueError('boom')\n\n\ng()\n")
    proc = subprocess.run(
        [sys.executable, "-m", "jaxscope", "run", "plain.py"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[1] == '  File "plain.py", line 5, in <module>'
    assert lines[-1] == "ValueError: boom"
    assert "source-mapped" not in proc.stderr


def test_ctrl_c_in_the_script_exits_130_as_the_shell_expects(tmp_path):
    import signal

    script = tmp_path / "slow.py"
    script.write_text("import sys, time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    # A test run started in the background by a non-interactive shell (`cmd &`)
    # ignores SIGINT, and the script would inherit that; a handler is not inherited.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jaxscope", "run", "slow.py", "--recompiles"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "KeyboardInterrupt" in err and "_cli.py" not in err
    assert "recompiles by function" in err or "no recompiles recorded" in err
