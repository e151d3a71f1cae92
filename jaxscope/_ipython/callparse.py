"""Parse ``%magic f(x, y=2)``: the call is evaluated piecewise in the user namespace.

The callee and each argument are evaluated; the call itself is never executed, so a
magic can trace it instead.
"""

from __future__ import annotations

import ast
import builtins
import difflib
from dataclasses import dataclass
from typing import Any

from jaxscope._exceptions import InvalidCallError
from jaxscope._format import a_an, exception_text


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """A call expression split into its evaluated parts."""

    source: str
    callee_source: str
    function: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def cell_filename(source: str) -> str:
    """The file name IPython gives the running cell's code, registered with the
    shell's compiler so a lambda typed in a magic maps to ``In [N]`` like any cell."""
    from jaxscope._source import running_cell_number, running_shell  # imports JAX

    cache = getattr(getattr(running_shell(), "compile", None), "cache", None)
    number = running_cell_number()
    if cache is None or number is None:
        return "<jaxscope-call>"
    try:
        return str(cache(source, number))
    except Exception:  # an unusual shell: the call still works, unmapped
        return "<jaxscope-call>"


def undefined_name(
    exc: NameError, namespace: dict[str, Any], what: str = "", segment: str = ""
) -> str:
    """One line for a name a magic's expression uses and the namespace lacks, with
    the closest defined name where one is close (a typo: ``train_stepp``)."""
    name = getattr(exc, "name", None)
    if not isinstance(name, str) or not name:
        return f"{exception_text(exc)} in {what} `{segment}`; define it in a cell first"
    candidates = [
        n
        for n in [*namespace, *dir(builtins)]
        if isinstance(n, str) and (name.startswith("_") or not n.startswith("_"))
    ]
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.75)
    # "the function `f`" says nothing "name 'f'" does not
    plain = segment == name and what == "the function"
    where = "" if plain or not segment else f" in {what} `{segment}`"
    if close:
        return (
            f"name '{name}' is not defined{where}; did you mean `{close[0]}`? (or "
            "define it in a cell first)"
        )
    return f"name '{name}' is not defined{where}; define it in a cell first"


def _eval(
    node: ast.expr, source: str, namespace: dict[str, Any], what: str, filename: str
) -> Any:
    code = compile(ast.Expression(body=node), filename, "eval")
    try:
        return eval(code, namespace)
    except NameError as exc:
        segment = ast.get_source_segment(source, node) or "?"
        raise InvalidCallError(undefined_name(exc, namespace, what, segment)) from None
    except Exception as exc:
        raise InvalidCallError(
            f"evaluating {what} `{ast.get_source_segment(source, node) or '?'}` raised "
            f"{type(exc).__name__}: {exception_text(exc)}"
        ) from None


def parse_call(source: str, namespace: dict[str, Any], magic: str) -> ParsedCall:
    """Split ``source`` (``f(x, *xs, k=v, **kw)``) into callee, args and kwargs."""
    text = source.strip()
    if not text:
        raise InvalidCallError(
            f"%{magic} needs a call expression: write e.g. `%{magic} f(x, y)`"
        )
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise InvalidCallError(
            f"%{magic}: syntax error in `{text}` ({exc.msg}); write a call such as "
            f"`%{magic} f(x, y)`"
        ) from None
    call = tree.body
    if isinstance(call, (ast.Name, ast.Attribute)):
        raise InvalidCallError(
            f"%{magic} needs a call expression, got `{text}`; write e.g. "
            f"`%{magic} {text}(x)` with example arguments"
        )
    if not isinstance(call, ast.Call):
        raise InvalidCallError(
            f"%{magic} needs one call such as `f(x, y)`, got `{text}`; to see this "
            f"expression, wrap it in a function: `%{magic} (lambda: {text})()` "
            "(its arrays then appear as constants)"
        )
    filename = cell_filename(text + "\n")
    function = _eval(call.func, text, namespace, "the function", filename)
    if not callable(function):
        raise InvalidCallError(
            f"`{ast.get_source_segment(text, call.func)}` is "
            f"{a_an(type(function).__name__)}, not a function; %{magic} needs `f(args)`"
        )
    args: list[Any] = []
    for node in call.args:
        if isinstance(node, ast.Starred):
            value = _eval(node.value, text, namespace, "the argument", filename)
            try:
                args.extend(value)
            except TypeError:
                raise InvalidCallError(
                    f"`*{ast.get_source_segment(text, node.value)}` is "
                    f"{a_an(type(value).__name__)}, not an iterable; unpack a list or tuple"
                ) from None
        else:
            args.append(_eval(node, text, namespace, "the argument", filename))
    kwargs: dict[str, Any] = {}
    for keyword in call.keywords:
        value = _eval(keyword.value, text, namespace, "the argument", filename)
        if keyword.arg is None:
            if not hasattr(value, "keys"):
                raise InvalidCallError(
                    f"`**{ast.get_source_segment(text, keyword.value)}` is "
                    f"{a_an(type(value).__name__)}, not a mapping; unpack a dict"
                )
            items = {str(k): value[k] for k in value.keys()}  # noqa: SIM118 (any mapping)
        else:
            items = {keyword.arg: value}
        for key, item in items.items():
            if key in kwargs:
                raise InvalidCallError(
                    f"keyword argument {key!r} is given twice in `{text}`; pass it once"
                )
            kwargs[key] = item
    return ParsedCall(
        source=text,
        callee_source=ast.get_source_segment(text, call.func) or "",
        function=function,
        args=tuple(args),
        kwargs=kwargs,
    )
