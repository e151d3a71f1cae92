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

from typing import Any

from jaxscope._exceptions import JaxscopeCompatError


def require(owner: Any, name: str, needed_by: str) -> Any:
    """Return ``owner.name`` or raise a ``JaxscopeCompatError`` naming the JAX version."""
    try:
        return getattr(owner, name)
    except AttributeError:
        import jax

        owner_name = getattr(owner, "__name__", type(owner).__name__)
        raise JaxscopeCompatError(
            f"jaxscope.{needed_by} needs {owner_name}.{name}, absent in jax "
            f"{jax.__version__}; install a JAX version jaxscope supports "
            "(see pyproject.toml) or report this at the jaxscope issue tracker"
        ) from None
