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
