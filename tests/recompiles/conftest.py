"""Fixtures for the recompile tests."""

from __future__ import annotations

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
    from jaxscope._recompiles import hooks_installed

    yield
    assert not hooks_installed(), "a recompile watcher was left running"
