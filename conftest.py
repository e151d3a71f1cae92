"""Root conftest: 8 fake CPU devices before JAX is imported, and the JAX config guard."""

from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# pytester runs real pytest sessions for the plugin tests; pytest accepts
# ``pytest_plugins`` only in the root conftest.
pytest_plugins = ["pytester"]
