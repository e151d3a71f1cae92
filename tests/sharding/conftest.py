"""Fixtures for the sharding tests: meshes over the 8 fake CPU devices."""

from __future__ import annotations

import jax
import pytest


@pytest.fixture(scope="session")
def devices():
    devs = jax.devices()
    if len(devs) < 8:
        pytest.fail(
            "the sharding tests need 8 devices: XLA_FLAGS="
            "--xla_force_host_platform_device_count=8 must be set before jax imports"
        )
    return devs


@pytest.fixture(scope="session")
def mesh(devices):
    """A 4x2 ('data', 'model') mesh with Auto axes (XLA chooses intermediate layouts)."""
    auto = jax.sharding.AxisType.Auto
    return jax.make_mesh((4, 2), ("data", "model"), axis_types=(auto, auto))


@pytest.fixture(scope="session")
def mesh1d(devices):
    return jax.make_mesh((8,), ("i",))


@pytest.fixture(scope="session")
def mesh3d(devices):
    return jax.make_mesh((2, 2, 2), ("a", "b", "c"))
