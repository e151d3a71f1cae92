"""Shared by the magics: a Magics base class, error translation and output."""

from __future__ import annotations

import dis
import functools
import sys
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics
from IPython.core.magic_arguments import argument, parse_argstring

from jaxscope._display import printable
from jaxscope._exceptions import InvalidCallError, JaxscopeError


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


class HelpShown(Exception):
    """Raised after ``--help`` printed a magic's help; the magic then does nothing."""


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
            usage = UsageError(printable(str(exc)))
            usage.user_exception = exc.__cause__  # type: ignore[attr-defined]
            raise usage from None

    return wrapper


def exception_text(exc: BaseException) -> str:
    """``str(exc)``; ``<TypeName>`` when the exception's own ``__str__`` raises."""
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__}>"


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


def split_options(magic_fn: Any, line: str) -> tuple[str, str]:
    """Split a magic's line into its leading ``--options`` and the rest, verbatim.

    Options that take a value (``--depth 2``, ``--stage=hlo``) are read from the
    magic's ``magic_arguments`` parser. ``-h`` / ``--help`` prints the magic's help
    and raises ``HelpShown`` (which ``usage_errors`` turns into a quiet return). Everything from the first token that is not
    an option on is returned untouched (quotes, ``-1``, spaces and all).
    """
    parser = getattr(magic_fn, "parser", None)
    valued: set[str] = set()
    for action in getattr(parser, "_actions", ()):
        if action.nargs != 0 and action.option_strings:
            valued.update(action.option_strings)
    options: list[str] = []
    rest = line.strip()
    while rest.startswith("-"):
        token, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        if token in ("-h", "--help"):
            print(getattr(magic_fn, "__doc__", None) or "no help available")
            raise HelpShown
        options.append(token)
        if token in valued and rest:
            value, _, rest = rest.partition(" ")
            rest = rest.lstrip()
            options.append(value)
    return " ".join(options), rest


def call_argument(example: str = "f(x, y) or jax.grad(loss)(p, b)") -> Any:
    """The ``call`` positional (``nargs="*"``) of a magic that takes a call expression."""
    return argument("call", nargs="*", help=f"a call expression such as {example}")


def parse_magic_args(magic_fn: Any, line: str, verbatim: str | None = None) -> Any:
    """Parse a magic's ``line`` with its ``magic_arguments``; errors in one line.

    ``-h`` / ``--help`` among the leading options prints the magic's help and raises
    ``HelpShown`` (see ``split_options``); an argparse error becomes a one-line
    ``InvalidCallError``. With ``verbatim="call"`` only the leading options go
    through argparse and ``opts.call`` is ``[rest of the line]`` (or ``[]``),
    untouched: argparse would strip the quotes of string arguments and take ``-1``
    for an option.
    """
    # `%magic f(x);` reaches here with its `;`, which IPython reads as "show nothing"
    line = line.rstrip().removesuffix(";")
    options, rest = split_options(magic_fn, line)
    try:
        opts = parse_argstring(magic_fn, options if verbatim is not None else line)
    except Exception as exc:  # argparse errors are UsageErrors already; keep one line
        raise InvalidCallError(str(exc).splitlines()[0]) from None
    if verbatim is not None:
        setattr(opts, verbatim, [rest] if rest else [])
    return opts


def show(obj: Any) -> None:
    """Display ``obj`` through IPython's display machinery (HTML in Jupyter, text otherwise)."""
    from IPython.display import display

    display(obj)


# What the code that called ``run_line_magic`` does with the result, read from the
# instruction after its call: the displayhook shows it (the cell's last expression),
# it is stored (``v = %magic``), or it is dropped (a statement mid-cell).
_DISPLAYED = frozenset({"PRINT_EXPR"})
_DROPPED = frozenset({"POP_TOP"})


def _result_fate() -> str:
    """``"displayed"``, ``"dropped"`` or ``"kept"`` (also when it cannot be told)."""
    frame = sys._getframe(1)
    run_line_magic = InteractiveShell.run_line_magic.__code__
    while frame is not None and frame.f_code is not run_line_magic:
        frame = frame.f_back
    caller = frame.f_back if frame is not None else None
    if caller is None:
        return "kept"
    # f_lasti is the call, or (Python 3.11) one of its inline cache entries
    for instruction in dis.get_instructions(caller.f_code):
        if instruction.offset <= caller.f_lasti:
            continue
        if instruction.opname in _DISPLAYED or (
            instruction.opname == "CALL_INTRINSIC_1"
            and instruction.argrepr == "INTRINSIC_PRINT"
        ):
            return "displayed"
        return "dropped" if instruction.opname in _DROPPED else "kept"
    return "kept"


def present(view: Any, line: str) -> Any:
    """A view magic's result: returned, so ``v = %magic ...`` keeps the object.

    IPython's displayhook shows a result that ends a cell; a magic mid-cell, whose
    result is dropped, shows it here, so it is displayed exactly once either way. A
    trailing ``;`` on the magic's ``line`` hides it (IPython reads the ``;`` of a
    cell only, and a magic's line is a string to it).
    """
    fate = _result_fate()
    if line.rstrip().endswith(";"):
        return None if fate == "displayed" else view
    if fate == "dropped":
        show(view)
    return view
