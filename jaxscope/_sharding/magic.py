"""``%sharding EXPR``: an array's layout over devices, or a call's compiled program.

The rule is syntactic: a call expression (``%sharding f(x, w)``) shows the program
view of that call (compiled, never run; ``js.shardings``); anything else
(``%sharding x``, ``%sharding params['w']``, ``%sharding (x, y)``) is evaluated and
shown as an array / pytree view (``js.sharding``). ``--array`` evaluates a call
expression and shows the array it returns instead.
"""

from __future__ import annotations

import ast
from typing import Any

from IPython.core.magic import line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from jaxscope._exceptions import InvalidCallError
from jaxscope._ipython.callparse import undefined_name
from jaxscope._ipython.magics import JaxscopeMagics, usage_errors
from jaxscope._ipython.options import parse_magic_args, static_arguments
from jaxscope._ipython.results import present


def _dims(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(p) for p in text.replace(" ", "").split(",") if p)
    except ValueError:
        raise InvalidCallError(
            f"--dims {text!r} must be two integers separated by a comma, e.g. --dims 0,2"
        ) from None


def _evaluate(text: str, namespace: dict[str, Any]) -> Any:
    try:
        code = compile(text, "<jaxscope-sharding>", "eval")
    except SyntaxError as exc:
        raise InvalidCallError(
            f"%sharding: syntax error in `{text}` ({exc.msg}); write an array "
            "expression such as `x` or a call such as `f(x)`"
        ) from None
    try:
        return eval(code, namespace)
    except NameError as exc:
        raise InvalidCallError(
            undefined_name(exc, namespace, "the expression", text)
        ) from None
    except Exception as exc:
        raise InvalidCallError(
            f"evaluating `{text}` raised {type(exc).__name__}: {exc}"
        ) from None


def is_call(text: str) -> bool:
    """Whether ``text`` parses as a call expression."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return False
    return isinstance(tree.body, ast.Call)


@magics_class
class ShardingMagics(JaxscopeMagics):
    @magic_arguments()
    @argument(
        "--array",
        action="store_true",
        help="evaluate a call expression and show the array it returns",
    )
    @argument(
        "--all",
        action="store_true",
        help="list every op of a call's program, bookkeeping ops (copies) included",
    )
    @argument(
        "--dims",
        default=None,
        help="for arrays of rank > 2: the two dimensions to draw, e.g. 0,2",
    )
    @static_arguments
    @argument(
        "expr",
        nargs="*",
        help="an array / pytree expression (x, params['w']) or a call (f(x, w))",
    )
    @line_magic
    @usage_errors
    def sharding(self, line: str) -> Any:
        """Show how EXPR is laid out over devices, or what a call's program does.

        ``%sharding x`` draws an array's (or pytree's) shards over the devices;
        ``%sharding f(x, w)`` compiles the call (never runs it) and lists input and
        output shardings, each op's sharding, and every collective with its source
        line. ``--array`` shows the array a call returns instead.
        """
        opts = parse_magic_args(self.sharding, line, verbatim="expr")
        text = " ".join(opts.expr).strip()
        if not text:
            raise InvalidCallError(
                "%sharding needs an expression: `%sharding x` (an array) or "
                "`%sharding f(x)` (a call's program)"
            )
        dims = _dims(opts.dims)
        namespace = self.user_ns
        if is_call(text) and not opts.array:
            if dims is not None:
                raise InvalidCallError(
                    "--dims applies to array views; drop it, or add --array to show "
                    "the array the call returns"
                )
            from jaxscope._sharding.program import shardings

            view: Any = self.traced_call(
                "sharding", opts, shardings, text, all=bool(opts.all)
            )
        else:
            if opts.all:
                raise InvalidCallError(
                    "--all applies to a call's program (%sharding f(x)); drop it "
                    "for an array view"
                )
            from jaxscope._sharding.array import sharding_view

            value = _evaluate(text, namespace)
            view = sharding_view(value, name=text, dims=dims)
        return present(view, line)


MAGICS = ShardingMagics
