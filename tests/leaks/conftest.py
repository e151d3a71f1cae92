"""Fixtures for the tracer-leak tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_leak_hooks_left():
    """Every test must leave JAX's leak hooks uninstalled (no block left active)."""
    from jaxscope._leaks.checker import hooks_installed

    yield
    assert not hooks_installed(), "a check_leaks block was left active"
