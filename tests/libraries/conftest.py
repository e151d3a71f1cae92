"""Flax, Equinox and Optax are dev dependencies: these tests need them installed."""

from __future__ import annotations

import pytest

for name in ("flax", "equinox", "optax"):
    pytest.importorskip(
        name, reason=f"{name} is a dev dependency: pip install -e '.[dev]'"
    )
