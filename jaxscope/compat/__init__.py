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


class MissingSymbolError(JaxscopeCompatError, AttributeError):
    """A private JAX symbol is gone; also an ``AttributeError``, so feature detection
    with ``getattr(module, name, default)`` keeps working."""


class PrivateModule:
    """A private JAX module imported at its first attribute access, not at import.

    ``_core = PrivateModule("jax._src.core", "compat.leaks")`` reads like the module;
    a missing module or attribute raises ``MissingSymbolError`` naming both, and
    setting an attribute (installing a hook) sets it on the real module.
    """

    def __init__(self, module: str, needed_by: str) -> None:
        object.__setattr__(self, "_name", module)
        object.__setattr__(self, "_needed_by", needed_by)
        object.__setattr__(self, "_module", None)

    def _load(self) -> ModuleType:
        module = object.__getattribute__(self, "_module")
        if module is None:
            name = object.__getattribute__(self, "_name")
            module = private(name, object.__getattribute__(self, "_needed_by"))
            object.__setattr__(self, "_module", module)
        return module

    def __getattr__(self, attr: str) -> Any:
        module = self._load()
        try:
            return getattr(module, attr)
        except AttributeError:
            needed_by = object.__getattribute__(self, "_needed_by")
            raise MissingSymbolError(
                f"jaxscope.{needed_by} needs {module.__name__}.{attr}, absent in "
                f"{_version_of(module.__name__)}; {_FIX}"
            ) from None

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._load(), attr, value)


def changed(symbol: str, needed_by: str, exc: BaseException) -> JaxscopeCompatError:
    """The error for a private JAX function that is there but fails as a changed
    one does (``TypeError``, ``NameError`` or ``AttributeError`` from inside it)."""
    return JaxscopeCompatError(
        f"jaxscope.{needed_by} needs {symbol}, which failed in "
        f"{_version_of(symbol)} ({type(exc).__name__}: {exc}); {_FIX}"
    )


def call_private(
    symbol: str, needed_by: str, function: Any, *args: Any, **kwargs: Any
) -> Any:
    """``function(*args, **kwargs)`` for a private JAX function named ``symbol``;
    a failure that says the function (or a name it uses) changed raises
    ``JaxscopeCompatError`` naming it."""
    if not callable(function):
        raise changed(
            symbol, needed_by, TypeError(f"{type(function).__name__} is not callable")
        )
    try:
        return function(*args, **kwargs)
    except (TypeError, NameError, AttributeError) as exc:
        raise changed(symbol, needed_by, exc) from exc


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
