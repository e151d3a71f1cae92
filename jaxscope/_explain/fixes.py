"""Concrete fixes written in the user's own names, from the failing statement's AST:
``jax.jit(f, static_argnums=...)``, ``x = x.at[i].set(v)``, ``np.f → jnp.f``, ..."""

from __future__ import annotations

import ast
import linecache
import re
import types

from jaxscope._explain.evaluate import code_params
from jaxscope._explain.report import Operand
from jaxscope._explain.site import Site, contains

_NUMPY_NAMES = ("np", "numpy", "onp")
_AT_METHODS = {
    ast.Add: "add",
    ast.Mult: "multiply",
    ast.Div: "divide",
    ast.Pow: "power",
}
_NAN_GUARDS = {
    "log": "jnp.log(jnp.maximum(x, 1e-30))",
    "log1p": "jnp.log1p(jnp.maximum(x, -1 + 1e-7))",
    "sqrt": "jnp.sqrt(jnp.maximum(x, 0.0))",
    "rsqrt": "jax.lax.rsqrt(jnp.maximum(x, 1e-30))",
    "div": "a / jnp.where(b == 0, 1.0, b)",
    "pow": "jnp.power(jnp.abs(x), p)",
    "acos": "jnp.arccos(jnp.clip(x, -1.0, 1.0))",
    "asin": "jnp.arcsin(jnp.clip(x, -1.0, 1.0))",
}
_SHAPE_FIX = "reshape or transpose one operand, or fix the shape where it was created"


def names(args: tuple[str, ...]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    if not args:
        return ""
    if len(args) == 1:
        return args[0]
    return ", ".join(args[:-1]) + " and " + args[-1]


# `@jax.jit`, `@jit`, `@nnx.jit` alone on their line; `@partial(jax.jit, ...)` apart.
_PLAIN_JIT_DECORATOR = re.compile(r"@\s*(?:jax\.|nnx\.)?jit\s*(?:#.*)?$")
_PARTIAL_JIT_DECORATOR = re.compile(
    r"@\s*(?:functools\.)?partial\(\s*(?:jax\.|nnx\.)?jit\b"
)


def jit_decorator(code: types.CodeType | None) -> str:
    """How the function of ``code`` is jitted where it is defined: ``"plain"``
    (``@jax.jit``), ``"partial"`` (``@partial(jax.jit, ...)``) or ""."""
    if code is None:
        return ""
    # co_firstlineno of a decorated function is its first decorator's line
    for offset in range(16):
        line = linecache.getline(code.co_filename, code.co_firstlineno + offset)
        stripped = line.strip()
        if not stripped.startswith("@"):
            return ""
        if _PLAIN_JIT_DECORATOR.match(stripped):
            return "plain"
        if _PARTIAL_JIT_DECORATOR.match(stripped):
            return "partial"
    return ""


def static_hint(
    fn: str, args: tuple[str, ...], code: types.CodeType | None, jit: str = "jax.jit"
) -> str:
    """``jax.jit(fn, static_argnums=...) (or static_argnames=...)`` for the parameters
    behind ``args`` ("" when none of them is a parameter of ``code``); ``jit`` names
    the wrapper (``nnx.jit`` takes the same arguments).

    A function jitted by its decorator is jitted again to no effect (its arguments
    are traced by the inner jit all the same): the fix is then the decorator, and
    ``jax.jit(fn.__wrapped__, ...)`` the expression to try it."""
    if code is None or not args:
        return ""
    positional, kwonly = code_params(code)
    bases = []
    for arg in args:
        base = re.split(r"[\[.]", arg, maxsplit=1)[0]
        if base not in bases:
            bases.append(base)
    nums = [positional.index(b) for b in bases if b in positional]
    params = [b for b in bases if b in positional or b in kwonly]
    if not params:
        return ""
    short = fn.rsplit(".", 1)[-1]
    if len(params) == 1:
        by_name = f"static_argnames='{params[0]}'"
    else:
        by_name = "static_argnames=(" + ", ".join(f"'{n}'" for n in params) + ")"
    if nums and len(nums) == len(params):
        trailing = "," if len(nums) == 1 else ""
        tup = "(" + ", ".join(str(n) for n in nums) + trailing + ")"
        static, alternative = f"static_argnums={tup}", f" (or {by_name})"
    else:
        static, alternative = by_name, ""
    decorator = jit_decorator(code)
    if decorator == "partial":
        return (
            f"add {static}{alternative} to the @partial({jit}, ...) decorator of "
            f"{short}"
        )
    if decorator == "plain":
        return (
            f"decorate {short} with @functools.partial({jit}, {static}) instead of "
            f"@{jit}{alternative}; to try it first: {jit}({short}.__wrapped__, "
            f"{static})"
        )
    return f"{jit}({short}, {static}){alternative}"


def np_calls(site: Site) -> list[tuple[str, str]]:
    """``(np text, jnp replacement)`` for ``np.f(...)`` calls in the failing statement
    (replacement "" where jax.numpy has no ``f``)."""
    import jax.numpy as jnp

    root = site.stmt if site.stmt is not None else site.node
    out: list[tuple[str, str]] = []
    if root is None:
        return out
    for node in ast.walk(root):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in _NUMPY_NAMES
        ):
            attr = node.func.attr
            text = site.text(node.func)
            replacement = f"jnp.{attr}" if hasattr(jnp, attr) else ""
            if (text, replacement) not in out:
                out.append((text, replacement))
    return out


def assignment_fix(site: Site) -> str:
    """``x = x.at[i].set(v)`` for the failing ``x[i] = v`` (``.add`` etc. for
    ``x[i] += v``); "" for any other statement."""
    stmt = site.stmt
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript):
            arr = site.text(target.value)
            idx = site.text(target.slice)
            return f"{arr} = {arr}.at[{idx}].set({site.text(stmt.value)})"
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript):
        arr = site.text(stmt.target.value)
        idx = site.text(stmt.target.slice)
        value = site.text(stmt.value)
        if isinstance(stmt.op, ast.Sub):
            return f"{arr} = {arr}.at[{idx}].add(-({value}))"
        method = _AT_METHODS.get(type(stmt.op))
        if method is not None:
            return f"{arr} = {arr}.at[{idx}].{method}({value})"
    return ""


def condition_text(site: Site) -> tuple[str, str]:
    """The branching construct (``if``, ``while``, ...) and its condition's text."""
    stmt = site.stmt
    node = site.node
    if isinstance(stmt, ast.If) and (node is None or contains(stmt.test, node)):
        return "if", site.text(stmt.test)
    if isinstance(stmt, ast.While):
        return "while", site.text(stmt.test)
    if isinstance(stmt, ast.Assert):
        return "assert", site.text(stmt.test)
    if node is not None:
        return "bool()", site.text(node)
    return "bool()", ""


def nan_guard(prim: str) -> str:
    """A guarded version of the primitive ``prim`` that cannot produce a NaN."""
    return _NAN_GUARDS.get(prim, "jnp.where(valid, x, safe_value) around the operation")


def _dims(aval: str) -> list[int] | None:
    match = re.fullmatch(r"\w+\[([\d,]*)\]", aval)
    if match is None:
        return None
    return [int(d) for d in match.group(1).split(",") if d]


def _is_matmul(node: ast.AST | None) -> bool:
    return (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)) or (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("dot", "matmul")
    )


def shape_hint(site: Site, operands: tuple[Operand, ...]) -> str:
    """The operands' shapes and a fix; for a 2-D matmul, the transpose that fits."""
    known = [o for o in operands if o.aval]
    if len(known) < 2:
        return _SHAPE_FIX[0].upper() + _SHAPE_FIX[1:]
    a, b = known[0], known[1]
    facts = f"{a.expr} is {a.aval} and {b.expr} is {b.aval}"
    da, db = _dims(a.aval), _dims(b.aval)
    if (
        _is_matmul(site.node)
        and da is not None
        and db is not None
        and len(da) == len(db) == 2
    ):
        differ = f"{facts}: the inner dimensions differ ({da[1]} vs {db[0]})"
        if da[0] == db[0] and da[1] != db[0]:
            return f"{differ}; did you mean {a.expr}.T @ {b.expr}?"
        if da[1] == db[1] and da[1] != db[0]:
            return f"{differ}; did you mean {a.expr} @ {b.expr}.T?"
        return f"{differ}; {_SHAPE_FIX}"
    return f"{facts}: {_SHAPE_FIX}"
