"""The only place in jaxscope that touches private JAX internals.

Everything under ``jaxscope.compat`` may import ``jax._src``, ``jax.interpreters`` or
private ``jax.core`` names; no other module may (``tests/test_layering.py`` enforces
it). Each function is small, returns jaxscope terms (str, int, tuples, records) rather
than JAX objects where it can, and names what it relies on in a ``Relies on:`` line.
Features are detected (``hasattr``), not version strings, and a missing symbol raises
``JaxscopeCompatError`` at first use, never at import, so a JAX upgrade breaks one
function of one file with a message that says which.

This package is internal: it is not part of jaxscope's public API.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from jaxscope._exceptions import JaxscopeCompatError

_FIX = (
    "install a version jaxscope supports (see the README) or report this at the "
    "jaxscope issue tracker"
)


def _version_of(module: str) -> str:
    """``"jax 0.10.2"`` / ``"flax 0.12.8"``: the distribution that owns ``module``."""
    from importlib import metadata

    package = module.split(".", 1)[0]
    try:
        return f"{package} {metadata.version(package)}"
    except metadata.PackageNotFoundError:
        return package


def private(module: str, needed_by: str) -> ModuleType:
    """Import the private JAX module ``module`` (``"jax._src.pjit"``) at first use.

    Compat modules call this inside functions, never at import, so a module that a
    JAX release moves breaks the one jaxscope function that needs it, with a
    ``JaxscopeCompatError`` naming both, and ``import jaxscope`` keeps working.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise JaxscopeCompatError(
            f"jaxscope.{needed_by} needs {module}, absent in {_version_of(module)}; "
            f"{_FIX}"
        ) from None


def require(owner: Any, name: str, needed_by: str) -> Any:
    """Return ``owner.name`` or raise a ``JaxscopeCompatError`` naming the JAX version."""
    try:
        return getattr(owner, name)
    except AttributeError:
        owner_name = getattr(owner, "__name__", type(owner).__name__)
        owner_module = getattr(owner, "__name__", type(owner).__module__)
        raise JaxscopeCompatError(
            f"jaxscope.{needed_by} needs {owner_name}.{name}, absent in "
            f"{_version_of(owner_module)}; {_FIX}"
        ) from None
