"""Checks of the options users pass to views, the stepper and the transforms.

One spelling of each complaint: ``<where>: <name> must be <what>, got <value>; write
e.g. <example>``, raised as ``InvalidCallError`` (a ``ValueError``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from jaxscope._exceptions import InvalidCallError
from jaxscope._format import short_repr

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _fail(where: str, name: str, what: str, value: Any, example: str) -> None:
    raise InvalidCallError(
        f"{where}: {name} must be {what}, got {short_repr(value, 40)}; "
        f"write e.g. {example}"
    )


def is_int(value: Any) -> bool:
    """An int, not a bool (``True`` is an int to Python, never a count to a user)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_count(
    value: Any,
    name: str,
    *,
    low: int,
    where: str,
    example: str,
    none_ok: bool = False,
) -> None:
    """Raise unless ``value`` is an int >= ``low`` (or None, where that means "all").

    Example:
        >>> check_count(3, "n", low=0, where="v.top", example="v.top(5)")
        >>> check_count(-1, "n", low=0, where="v.top", example="v.top(5)")
        Traceback (most recent call last):
        ...
        jaxscope._exceptions.InvalidCallError: v.top: n must be an int >= 0, got -1; write e.g. v.top(5)
    """
    if value is None and none_ok:
        return
    if not is_int(value) or value < low:
        what = f"an int >= {low}" + (" or None" if none_ok else "")
        _fail(where, name, what, value, example)


def check_flag(
    value: Any, name: str, *, where: str, example: str, none_ok: bool = False
) -> None:
    """Raise unless ``value`` is True or False (or None, where that has a meaning)."""
    if value is None and none_ok:
        return
    if not isinstance(value, bool):
        what = "None, True or False" if none_ok else "True or False"
        _fail(where, name, what, value, example)


def takes_the_function_alone(api: Callable[_P, _R]) -> Callable[_P, _R]:
    """Mark a public ``js.<name>(fun, **options)`` that returns a function of the
    arguments: ``js.<name>(fun, *args)`` becomes a one-line error that writes the call.

    Example:
        >>> @takes_the_function_alone
        ... def jaxpr(fun, *, max_eqns=200):
        ...     return fun
        >>> def step(x):
        ...     return x
        >>> jaxpr(step, 1.0, max_eqns=5)
        Traceback (most recent call last):
        ...
        jaxscope._exceptions.InvalidCallError: js.jaxpr takes the function alone and returns a function of its arguments: write js.jaxpr(step, max_eqns=5)(*args), not js.jaxpr(step, *args)
    """
    name = f"js.{api.__name__}"

    @functools.wraps(api)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if len(args) > 1:
            fun = getattr(args[0], "__name__", None)
            fun = fun if isinstance(fun, str) and fun.isidentifier() else "f"
            options = "".join(f", {k}={short_repr(v, 40)}" for k, v in kwargs.items())
            raise InvalidCallError(
                f"{name} takes the function alone and returns a function of its "
                f"arguments: write {name}({fun}{options})(*args), not "
                f"{name}({fun}, *args)"
            )
        return api(*args, **kwargs)

    return checked
