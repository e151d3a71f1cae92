"""Shared by the magics: a Magics base class, error translation and output."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics

from .._exceptions import JaxscopeError


class JaxscopeMagics(Magics):
    """Base of every jaxscope ``Magics`` class; keeps the extension state."""

    def __init__(self, shell: Any = None, state: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.state = state


def usage_errors(method: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a ``JaxscopeError`` (and argument parse exits) into a one-line ``UsageError``."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except JaxscopeError as exc:
            raise UsageError(str(exc)) from None

    return wrapper


def show(obj: Any) -> None:
    """Display ``obj`` through IPython's display machinery (HTML in Jupyter, text otherwise)."""
    from IPython.display import display

    display(obj)
