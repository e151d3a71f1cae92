"""Reading a magic's line: its ``--options`` (parsed by its ``magic_arguments``) and
the call expression, kept verbatim.

IPython's ``parse_argstring(..., partial=True)`` (as ``%time`` uses it) is not enough
for a call magic: it hands back the rest of the line as shell-split tokens, so a string
argument holding spaces is cut apart (``f(['a  -b'])`` becomes ``f(['a`` and
``-b'])``) and joining the tokens back changes the call. ``split_options`` finds where
the options end instead, whether they come before the call or after it
(``%hlo f(x) --stage optimized``); only the options go through argparse, and the call
stays as typed.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from IPython.core.magic_arguments import argument, parse_argstring

from jaxscope._exceptions import InvalidCallError


class HelpShown(Exception):
    """Raised after ``--help`` printed a magic's help; the magic then does nothing."""


def split_options(magic_fn: Any, line: str, call: bool = True) -> tuple[str, str]:
    """Split a magic's line into its ``--options`` and the rest, verbatim.

    Options come before the rest (``%hlo --stage optimized f(x)``) or after it
    (``%hlo f(x) --stage optimized``); a trailing token is an option only where it
    is one of the magic's and what precedes it is a Python expression. Options
    that take a value (``--depth 2``, ``--stage=hlo``) are read from the magic's
    ``magic_arguments`` parser. ``-h`` / ``--help`` prints the magic's help and
    raises ``HelpShown`` (which ``usage_errors`` turns into a quiet return). The
    rest is returned untouched (quotes, ``-1``, spaces and all). ``call=False``: the
    line holds no call (``%%leaks --as NAME``), so an option's value is never taken
    for the start of one.
    """
    parser = getattr(magic_fn, "parser", None)
    known: set[str] = {"-h", "--help"}
    valued: dict[str, Any] = {}
    for action in getattr(parser, "_actions", ()):
        known.update(action.option_strings)
        if action.nargs != 0 and action.option_strings:
            valued.update(dict.fromkeys(action.option_strings, action))
    options, rest = _leading_options(magic_fn, line.strip(), valued, call)
    rest, trailing = _trailing_options(magic_fn, rest, known)
    if trailing:
        more, left = _leading_options(magic_fn, trailing, valued, call)
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
    magic_fn: Any, text: str, valued: dict[str, Any], call: bool = True
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
            if call and _is_the_call(value, after.strip()):
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
    ``InvalidCallError``. Without ``verbatim`` the whole line is options (and at
    most an action, as in ``%recompiles on``). With ``verbatim="call"`` only the
    leading options go through argparse and ``opts.call`` is ``[rest of the line]``
    (or ``[]``), untouched: argparse would strip the quotes of string arguments and
    take ``-1`` for an option.
    """
    # `%magic f(x);` reaches here with its `;`, which IPython reads as "show nothing"
    line = line.rstrip().removesuffix(";")
    options, rest = split_options(magic_fn, line, call=verbatim is not None)
    try:
        opts = parse_argstring(magic_fn, options if verbatim is not None else line)
    except Exception as exc:  # argparse errors are UsageErrors already; keep one line
        raise InvalidCallError(str(exc).splitlines()[0]) from None
    if verbatim is not None:
        setattr(opts, verbatim, [rest] if rest else [])
    opts.option_tokens = options.split()
    return opts
