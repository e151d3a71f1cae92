"""Fixtures for the tracer-leak tests."""

from __future__ import annotations

import jax
import pytest


@pytest.fixture(autouse=True)
def fresh_jax_caches():
    """A block checks the code traced inside it, and these tests reuse functions
    (``leaky``) across tests: each starts with JAX's caches empty, as a fresh
    process would, so what it calls is traced in its block."""
    jax.clear_caches()


@pytest.fixture(autouse=True)
def no_leak_hooks_left():
    """Every test must leave JAX's leak hooks uninstalled (no block left active)."""
    from jaxscope._leaks.checker import hooks_installed

    yield
    assert not hooks_installed(), "a check_leaks block was left active"
