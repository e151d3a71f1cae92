"""Fixtures of the stepper tests: the programs module and scripted stdin/stdout."""

from __future__ import annotations

import importlib.util
import io
import pathlib

import pytest

_HERE = pathlib.Path(__file__).parent


def _load_programs():
    spec = importlib.util.spec_from_file_location(
        "stepper_programs", _HERE / "programs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def programs():
    """The real programs of ``programs.py``."""
    return _load_programs()


def make_fake_stdin_stdout(commands):
    """``(stdin, stdout)`` file objects: stdin yields ``commands`` one per line."""
    return io.StringIO("".join(c + "\n" for c in commands)), io.StringIO()


@pytest.fixture
def fake_io():
    return make_fake_stdin_stdout
