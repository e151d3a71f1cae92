"""The one exception hierarchy: every error jaxscope raises is a ``JaxscopeError``.

Each subclass also inherits the builtin it refines, so ``except ValueError`` in user
code keeps working. Messages are one line: what is wrong; what to do.
"""

from __future__ import annotations


class JaxscopeError(Exception):
    """Base class of every error jaxscope raises."""


class InvalidCallError(JaxscopeError, ValueError):
    """The function or its example arguments cannot be traced as given."""


class TraceError(JaxscopeError, RuntimeError):
    """The user's function raised while JAX traced it (the cause is chained)."""


class TracerLeakError(JaxscopeError, RuntimeError):
    """A tracer escaped the transformation that created it."""


class JaxscopeCompatError(JaxscopeError, RuntimeError):
    """A private JAX hook jaxscope relies on is missing in the installed JAX."""
