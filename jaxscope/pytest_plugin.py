"""The pytest plugin (entry point ``pytest11``), active whenever jaxscope is installed.

A thin front-end: each feature's hooks live in its folder's ``plugin.py``
(``jaxscope._<feature>.plugin``), registered here as a plugin of its own, so features
keep their state apart (in ``config.stash``) and their hooks do not collide.
"""

from __future__ import annotations

from typing import Any


def pytest_addoption(parser: Any, pluginmanager: Any) -> None:
    from ._features import feature_modules

    # Created first so the features' options share one help section.
    parser.getgroup("jaxscope", "jaxscope: JAX recompiles, tracer leaks, purity")
    for module in feature_modules("plugin"):
        if not pluginmanager.is_registered(module):
            # pytest_addoption is a historic hook: a plugin registered now still gets it.
            feature = module.__name__.split(".")[1].lstrip("_")
            pluginmanager.register(module, f"jaxscope-{feature}")
