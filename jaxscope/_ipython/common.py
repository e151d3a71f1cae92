"""Shared by the magics: a Magics base class, error translation and output."""

from __future__ import annotations

import ast
import dis
import functools
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics
from IPython.core.magic_arguments import argument, parse_argstring

from jaxscope._display import printable
from jaxscope._exceptions import InvalidCallError, JaxscopeError

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
        from jaxscope._ipython.callparse import parse_call  # it imports this module

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
    """Split a magic's line into its ``--options`` and the rest, verbatim.

    Options come before the rest (``%hlo --stage optimized f(x)``) or after it
    (``%hlo f(x) --stage optimized``); a trailing token is an option only where it
    is one of the magic's and what precedes it is a Python expression. Options
    that take a value (``--depth 2``, ``--stage=hlo``) are read from the magic's
    ``magic_arguments`` parser. ``-h`` / ``--help`` prints the magic's help and
    raises ``HelpShown`` (which ``usage_errors`` turns into a quiet return). The
    rest is returned untouched (quotes, ``-1``, spaces and all).
    """
    parser = getattr(magic_fn, "parser", None)
    known: set[str] = {"-h", "--help"}
    valued: dict[str, Any] = {}
    for action in getattr(parser, "_actions", ()):
        known.update(action.option_strings)
        if action.nargs != 0 and action.option_strings:
            valued.update(dict.fromkeys(action.option_strings, action))
    options, rest = _leading_options(magic_fn, line.strip(), valued)
    rest, trailing = _trailing_options(magic_fn, rest, known)
    if trailing:
        more, left = _leading_options(magic_fn, trailing, valued)
        if left:  # e.g. `f(x) --depth 1 extra`
            raise InvalidCallError(
                f"%{_magic_name(magic_fn)}: unexpected `{left}` after the options; "
                "write the options, then the call, e.g. "
                f"`%{_magic_name(magic_fn)} {more} {rest}`"
            )
        options = f"{options} {more}".strip()
    return options, rest


def _magic_name(magic_fn: Any) -> str:
    return str(getattr(getattr(magic_fn, "parser", None), "prog", "magic"))


def _leading_options(
    magic_fn: Any, text: str, valued: dict[str, Any]
) -> tuple[str, str]:
    options: list[str] = []
    rest = text
    while rest.startswith("-"):
        token, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        if token in ("-h", "--help"):
            print(getattr(magic_fn, "__doc__", None) or "no help available")
            raise HelpShown
        options.append(token)
        action = valued.get(token)
        if action is not None and rest:
            value, _, after = rest.partition(" ")
            if _is_the_call(value, after.strip()):
                if action.nargs == "?":  # its value is optional: none was given
                    continue
                name = _magic_name(magic_fn)
                raise InvalidCallError(
                    f"%{name}: {token} takes a value before the call, and `{value}` "
                    f"is the start of the call; write e.g. "
                    f"`%{name} {token} {_example_value(action)} {rest}`"
                )
            rest = after.lstrip()
            options.append(value)
    return " ".join(options), rest


def _example_value(action: Any) -> str:
    """A value to show for ``action`` in a hint: its first choice or its default,
    else one that fits its type or metavar (``FILE`` -> ``out.svg``), else a line
    number (``-b``)."""
    if action.choices:
        return str(next(iter(action.choices)))
    if isinstance(action.default, str) and action.default:
        return action.default
    if action.type is int:
        return "1"
    examples = {"FILE": "out.svg", "N": "1", "NUMS": "0", "NAMES": "n", "NAME": "r"}
    return examples.get(action.metavar or "", "12")


def _is_the_call(value: str, after: str) -> bool:
    """Whether the token an option would take as its value is the call itself: the
    start of it (``f(x,`` of ``f(x, y)``), or all of it with nothing after."""
    if _parses(value) is None:
        return isinstance(_parses(f"{value} {after}"), ast.Call)
    return not after and isinstance(_parses(value), ast.Call)


def _parses(text: str) -> ast.expr | None:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _trailing_options(magic_fn: Any, text: str, known: set[str]) -> tuple[str, str]:
    """``(expression, trailing options)``: ``f(x) --depth 1`` -> ``("f(x)",
    "--depth 1")``; ``text`` unchanged when it is a call as it stands."""
    whole = _parses(text)
    if not text or isinstance(whole, ast.Call):
        return text, ""
    for match in re.finditer(r"\s(-{1,2}[A-Za-z][\w-]*)", text):
        head = text[: match.start()].rstrip()
        if not head or _parses(head) is None:
            continue
        option = match.group(1)
        if option in known:
            return head, text[match.start() :].strip()
        if option.startswith("--") and whole is None:
            options = ", ".join(sorted(o for o in known if o.startswith("--")))
            raise InvalidCallError(
                f"%{_magic_name(magic_fn)} has no option {option}; its options are "
                f"{options} (before or after the call)"
            )
    return text, ""


def call_argument(example: str = "f(x, y) or jax.grad(loss)(p, b)") -> Any:
    """The ``call`` positional (``nargs="*"``) of a magic that takes a call expression."""
    return argument("call", nargs="*", help=f"a call expression such as {example}")


def static_arguments(func: Any) -> Any:
    """The ``--static-argnums`` / ``--static-argnames`` options of a call magic."""
    func = argument(
        "--static-argnames",
        default=None,
        metavar="NAMES",
        help="keyword arguments of CALL to treat as static, e.g. n,mode",
    )(func)
    return argument(
        "--static-argnums",
        default=None,
        metavar="NUMS",
        help="positions of CALL's arguments to treat as static, e.g. 0,2",
    )(func)


def static_options(opts: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``--static-argnums 0,2 --static-argnames n`` as ``((0, 2), ("n",))``."""
    nums: list[int] = []
    for part in (opts.static_argnums or "").replace(" ", "").split(","):
        if not part:
            continue
        try:
            nums.append(int(part))
        except ValueError:
            raise InvalidCallError(
                f"--static-argnums takes positions separated by commas, got "
                f"{opts.static_argnums!r}; use e.g. --static-argnums 0,2"
            ) from None
    names = [n for n in (opts.static_argnames or "").replace(" ", "").split(",") if n]
    for name in names:
        if not name.isidentifier():
            raise InvalidCallError(
                f"--static-argnames takes parameter names separated by commas, got "
                f"{opts.static_argnames!r}; use e.g. --static-argnames n,mode"
            )
    return tuple(nums), tuple(names)


def magic_call(
    magic: str,
    opts: Any,
    source: str,
    statics: tuple[tuple[int, ...], tuple[str, ...]],
) -> Any:
    """Context in which hints are worded as this magic's command, its other options
    kept (see ``_staging.static_example``)."""
    from jaxscope._staging import MagicCall
    from jaxscope._staging import magic_call as staging_magic_call

    kept: list[str] = []
    tokens = iter(getattr(opts, "option_tokens", ()))
    for token in tokens:
        if token in ("--static-argnums", "--static-argnames"):
            next(tokens, None)
        elif not token.startswith(("--static-argnums=", "--static-argnames=")):
            kept.append(token)
    command = " ".join([f"%{magic}", *kept])
    return staging_magic_call(MagicCall(command, source, *statics))


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
    opts.option_tokens = options.split()
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
