"""The feature folders (``jaxscope._<feature>/``) and their file-role modules.

A feature takes part in a front-end by having the module of that role: ``magic.py``
for IPython, ``plugin.py`` for pytest, ``render.py`` for display. Discovery replaces
hand-kept lists of module names; a module that exists but fails to import raises.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path
from types import ModuleType

_PACKAGE_DIR = Path(__file__).resolve().parent
_NOT_FEATURES = frozenset({"_ipython", "_static"})


def feature_names() -> list[str]:
    """The feature packages, e.g. ``["_explain", "_graph", ...]``, in sorted order."""
    return sorted(
        info.name
        for info in pkgutil.iter_modules([str(_PACKAGE_DIR)])
        if info.ispkg and info.name.startswith("_") and info.name not in _NOT_FEATURES
    )


def feature_modules(role: str) -> list[ModuleType]:
    """Every feature's ``role`` module (``"magic"``, ``"plugin"``, ...), imported."""
    modules: list[ModuleType] = []
    for name in feature_names():
        qualified = f"jaxscope.{name}.{role}"
        if importlib.util.find_spec(qualified) is not None:
            modules.append(importlib.import_module(qualified))
    return modules
