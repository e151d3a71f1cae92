"""The base of every jaxscope ``Magics`` class, and how their errors reach the user.

``usage_errors`` turns a ``JaxscopeError`` into IPython's one-line ``UsageError``;
``keep_user_exception`` keeps the user's own exception for ``%debug`` and ``%tb``.
How a magic's line is read: ``options``; how its result is shown: ``results``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics

from jaxscope._display import printable
from jaxscope._exceptions import InvalidCallError, JaxscopeError
from jaxscope._ipython.callparse import parse_call
from jaxscope._ipython.options import HelpShown, magic_call, static_options

T = TypeVar("T")


class JaxscopeMagics(Magics):
    """Base of every jaxscope ``Magics`` class; keeps the extension state."""

    def __init__(self, shell: Any = None, state: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.state = state

    @property
    def running_shell(self) -> Any:
        """The shell these magics are registered with (never None once loaded)."""
        if self.shell is None:
            raise InvalidCallError("jaxscope's magics run only in an IPython shell")
        return self.shell

    @property
    def user_ns(self) -> dict[str, Any]:
        """The user's namespace, where call expressions are evaluated."""
        return self.running_shell.user_ns

    def traced_call(
        self,
        magic: str,
        opts: Any,
        wrap: Callable[..., Callable[..., T]],
        text: str | None = None,
        **options: Any,
    ) -> T:
        """What a call magic shows of the call ``text`` (default: the magic's CALL):
        ``wrap(fn, static_argnums=, static_argnames=, **options)`` is the API wrapper
        (``js.graph``; ``from_builder`` makes one), given the magic's ``--static-arg*``
        options and called on the evaluated arguments; hints in its errors are worded
        as this magic's command."""
        statics = static_options(opts)
        call = " ".join(opts.call) if text is None else text
        parsed = parse_call(call, self.user_ns, magic)
        transform = wrap(
            parsed.function,
            static_argnums=statics[0],
            static_argnames=statics[1],
            **options,
        )
        with magic_call(magic, opts, parsed.source, statics):
            return transform(*parsed.args, **parsed.kwargs)


def from_builder(build: Callable[..., T]) -> Callable[..., Callable[..., T]]:
    """An API wrapper (as ``traced_call`` takes) from a view builder
    ``build(fn, args, kwargs, **options)``."""

    def wrap(fn: Any, **options: Any) -> Callable[..., T]:
        from jaxscope._source import program, program_scope  # imports JAX

        def call(*args: Any, **kwargs: Any) -> T:
            with program(program_scope(fn)):
                return build(fn, args, kwargs, **options)

        return call

    return wrap


def usage_errors(method: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a ``JaxscopeError`` (and argument parse exits) into a one-line ``UsageError``.

    When the error wraps the user's own exception (their function raised while being
    traced), that exception rides along as ``user_exception`` so the extension can
    hand it to ``%debug`` and ``%tb`` (see ``keep_user_exception``).
    """

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except HelpShown:
            return None
        except JaxscopeError as exc:
            # The message quotes the user's names and values: no control codes.
            usage = UsageError(printable(str(exc) + _sharding_hint(exc.__cause__)))
            usage.user_exception = exc.__cause__  # type: ignore[attr-defined]
            raise usage from None

    return wrapper


def _sharding_hint(cause: BaseException | None) -> str:
    """``"; hint: ..."`` for a sharding error of the user's program (the one-line
    error of any call magic then says what ``js.explain`` says), "" otherwise."""
    if cause is None:
        return ""
    try:
        from jaxscope._explain.explainer import explain
        from jaxscope._explain.report import ErrorKind

        report = explain(cause)
    except Exception:
        return ""
    if report.category != ErrorKind.SHARDING or not report.hint:
        return ""
    return f"; hint: {' '.join(report.hint.split())}"


def keep_user_exception(result: Any) -> None:
    """``post_run_cell`` hook: after a magic's one-line error, make the user's own
    exception the "last" one, so ``%debug`` opens in the user's frame and ``%tb``
    shows their traceback rather than jaxscope's wrapper."""
    user = getattr(getattr(result, "error_in_exec", None), "user_exception", None)
    if isinstance(user, BaseException):
        sys.last_type, sys.last_value = type(user), user
        sys.last_traceback = user.__traceback__
        if sys.version_info >= (3, 12):
            sys.last_exc = user
