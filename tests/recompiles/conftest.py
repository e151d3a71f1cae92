"""Fixtures for the recompile tests."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import pytest


@pytest.fixture
def x64():
    """A context manager that turns jax_enable_x64 on (and restores it)."""
    if hasattr(jax, "enable_x64"):
        return lambda: jax.enable_x64(True)
    from jax.experimental import enable_x64

    return enable_x64


@pytest.fixture(autouse=True)
def no_hooks_left():
    """Every test must leave the miss hooks uninstalled (no watcher left running)."""
    from jaxscope._recompiles.watcher import hooks_installed

    yield
    assert not hooks_installed(), "a recompile watcher was left running"


class PytestRun:
    """A scratch directory where a real pytest runs in a subprocess.

    pytester's ``runpytest_subprocess`` without the ``pytester`` plugin, which only a
    rootdir conftest may enable (``pytest_plugins`` in a sub-directory conftest is an
    error when the whole suite runs).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        (path / "pytest.ini").write_text("[pytest]\n")

    def makepyfile(self, **files: str) -> None:
        for name, text in files.items():
            (self.path / f"{name}.py").write_text(textwrap.dedent(text).lstrip("\n"))

    def makeini(self, text: str) -> None:
        (self.path / "pytest.ini").write_text(textwrap.dedent(text))

    def runpytest_subprocess(self, *args: str) -> pytest.RunResult:
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                f"--basetemp={self.path / '.basetemp'}",
                *args,
            ],
            cwd=self.path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return pytest.RunResult(
            proc.returncode,
            proc.stdout.splitlines(),
            proc.stderr.splitlines(),
            time.perf_counter() - start,
        )


@pytest.fixture
def pytester(tmp_path):
    """A ``PytestRun`` in a fresh directory (the subset of pytester these tests use)."""
    return PytestRun(tmp_path)
