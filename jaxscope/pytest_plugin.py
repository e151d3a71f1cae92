"""The pytest plugin (entry point ``pytest11``), active whenever jaxscope is installed.

A thin front-end: each feature's hooks live in a module of ``jaxscope._pytest`` that is
registered here as a plugin of its own, so features keep their state apart (in
``config.stash``) and their hooks do not collide.
"""

from __future__ import annotations

import importlib
from typing import Any

_FEATURE_PLUGINS = [
    "jaxscope._pytest.recompiles",
    "jaxscope._pytest.leaks",
    "jaxscope._pytest.purity",
    "jaxscope._pytest.errors",
]


def pytest_addoption(parser: Any, pluginmanager: Any) -> None:
    group = parser.getgroup("jaxscope", "jaxscope: JAX recompiles, tracer leaks, purity")
    del group  # created first so the features' options share one help section
    for name in _FEATURE_PLUGINS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        if not pluginmanager.is_registered(module):
            # pytest_addoption is a historic hook: a plugin registered now still gets it.
            pluginmanager.register(module, f"jaxscope-{name.rsplit('.', 1)[1]}")
