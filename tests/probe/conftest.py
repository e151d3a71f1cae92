"""Fixtures of the probe tests: the library train steps of ``programs.py``."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

_HERE = pathlib.Path(__file__).parent


@pytest.fixture(scope="session")
def libs():
    """``programs.py``: NNX, Linen and Equinox train steps with a NaN switch."""
    for name in ("flax", "equinox", "optax"):
        pytest.importorskip(name, reason=f"{name} is a dev dependency")
    spec = importlib.util.spec_from_file_location(
        "probe_programs", _HERE / "programs.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # Flax and Equinox modules are dataclasses
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def stepper_programs():
    """The stepper tests' real programs (scan, while, cond, custom rules, ...)."""
    spec = importlib.util.spec_from_file_location(
        "stepper_programs_for_probe", _HERE.parent / "stepper" / "programs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
