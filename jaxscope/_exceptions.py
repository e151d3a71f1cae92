"""The one exception hierarchy: every error jaxscope raises is a ``JaxscopeError``.

Each subclass also inherits the builtin it refines, so ``except ValueError`` in user
code keeps working. Messages are one line: what is wrong; what to do.
"""

from __future__ import annotations

from typing import Any

from jaxscope._format import printable


class JaxscopeError(Exception):
    """Base class of every error jaxscope raises.

    A message quotes user strings (function names, file names, the user's own error
    messages): their control characters are spelled out and very long words cut, so
    printing the error cannot drive the terminal or flood it.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*(printable(a) if isinstance(a, str) else a for a in args))


class InvalidCallError(JaxscopeError, ValueError):
    """The function or its example arguments cannot be traced as given."""


class TraceError(JaxscopeError, RuntimeError):
    """The user's function raised while JAX traced it (the cause is chained)."""


class TracerLeakError(JaxscopeError, RuntimeError):
    """A tracer escaped the transformation that created it."""


class JaxscopeCompatError(JaxscopeError, RuntimeError):
    """A private JAX hook jaxscope relies on is missing in the installed JAX."""


class ShardingInputError(JaxscopeError, TypeError):
    """``js.sharding`` was given something that has no sharding (not an array)."""


class ShardingValueError(JaxscopeError, ValueError):
    """An array, spec or mesh given to ``js.sharding`` cannot be laid out as asked."""


class RecompileWatchError(JaxscopeError, RuntimeError):
    """A recompile watcher was used in a way it does not support."""


class HloError(JaxscopeError, RuntimeError):
    """JAX could not lower or compile a traced call (the cause is chained)."""


class GraphvizMissingError(JaxscopeError, RuntimeError):
    """The Graphviz ``dot`` program is needed (``to_svg``) but not installed."""


class StepperFinishedError(JaxscopeError, RuntimeError):
    """A stepping command was given after the program ran to its end."""


class BreakpointError(JaxscopeError, ValueError):
    """A breakpoint or ``until`` target names no equation of the program."""


class StepError(JaxscopeError, RuntimeError):
    """An equation raised while the stepper ran it (the cause is chained)."""


class ProfileError(JaxscopeError, RuntimeError):
    """Profiling could not measure the program (a trace already running, no events)."""


class JaxRecompileWarning(UserWarning):
    """A test recompiled a jitted function more often than the policy allows."""
