"""Concrete fixes written in the user's own names, from the failing statement's AST:
``jax.jit(f, static_argnums=...)``, ``x = x.at[i].set(v)``, ``np.f → jnp.f``, ..."""

from __future__ import annotations

import ast
import contextlib
import linecache
import re
import types
from dataclasses import dataclass

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
            f"add `{static}`{alternative} to the @partial({jit}, ...) decorator of "
            f"{short}"
        )
    if decorator == "plain":
        return (
            f"decorate {short} with `@functools.partial({jit}, {static})` instead of "
            f"`@{jit}`{alternative}; to try it first: `{jit}({short}.__wrapped__, "
            f"{static})`"
        )
    return f"`{jit}({short}, {static})`{alternative}"


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


def nan_guard(prim: str, site: Site | None = None) -> str:
    """A guarded version of the primitive ``prim`` that cannot produce a NaN, in
    backticks with the user's operand where the failing call is ``jnp.<prim>(x)``."""
    guard = _NAN_GUARDS.get(prim)
    if guard is None:
        return "jnp.where(valid, x, safe_value) around the operation"
    call = _prim_call(prim, site)
    if call is not None and "x" in guard and "(x" in guard:
        return f"`{guard.replace('(x', '(' + call, 1)}` in place of `{_call_text(prim, site, call)}`"
    return guard


def _prim_call(prim: str, site: Site | None) -> str | None:
    """The text of the one argument of the failing ``jnp.<prim>(arg)`` call."""
    node = site.node if site is not None else None
    if site is None or not isinstance(node, ast.Call) or len(node.args) != 1:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name != prim:
        return None
    return site.text(node.args[0])


def _call_text(prim: str, site: Site | None, arg: str) -> str:
    return site.text(site.node) if site is not None else f"{prim}({arg})"


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
        if da[1] == db[0]:
            return ""  # the shapes fit: whatever failed, it was not them
        differ = f"{facts}: the inner dimensions differ ({da[1]} vs {db[0]})"
        if da[0] == db[0] and da[1] != db[0]:
            return f"{differ}; did you mean {a.expr}.T @ {b.expr}?"
        if da[1] == db[1] and da[1] != db[0]:
            return f"{differ}; did you mean {a.expr} @ {b.expr}.T?"
        return f"{differ}; {_SHAPE_FIX}"
    if (
        isinstance(site.node, ast.BinOp)
        and not _is_matmul(site.node)
        and da is not None
        and db is not None
        and _broadcastable(da, db)
    ):
        return ""  # elementwise operands whose shapes broadcast
    return f"{facts}: {_SHAPE_FIX}"


def _broadcastable(a: list[int], b: list[int]) -> bool:
    return all(x == y or 1 in (x, y) for x, y in zip(a[::-1], b[::-1], strict=False))


_EXTREMES = {  # (comparison, picks the left side) -> the jnp function it is
    (ast.Gt, False): "minimum",
    (ast.GtE, False): "minimum",
    (ast.Lt, True): "minimum",
    (ast.LtE, True): "minimum",
    (ast.Gt, True): "maximum",
    (ast.GtE, True): "maximum",
    (ast.Lt, False): "maximum",
    (ast.LtE, False): "maximum",
}


@dataclass(frozen=True, slots=True)
class BranchFix:
    """A Python branch on a traced value, rewritten as array code in the user's names.

    Attributes:
        where: the statement with ``jnp.where`` (``return jnp.where(c, a, b)``).
        cond: the same with ``jax.lax.cond`` (``return jax.lax.cond(c, lambda: a,
            lambda: b)``).
        extreme: ``jnp.minimum(a, b)`` / ``jnp.maximum(a, b)`` when the branch is one.
    """

    where: str
    cond: str
    extreme: str = ""


def branch_fix(site: Site) -> BranchFix | None:
    """The array form of the failing ``if`` (or ``a if c else b``): ``if c: return a``
    followed by ``return b``, ``if c: t = a else: t = b``, ``if c: t = a``,
    ``if c: t += a``; None for any other shape of code."""
    stmt = site.stmt
    if isinstance(site.node, ast.IfExp) or (
        not isinstance(stmt, ast.If) and isinstance(_if_exp(stmt), ast.IfExp)
    ):
        return _if_exp_fix(site)
    if not isinstance(stmt, ast.If) or len(stmt.body) != 1:
        return None
    cond = site.text(stmt.test)
    body = stmt.body[0]
    other = stmt.orelse[0] if len(stmt.orelse) == 1 else None
    if stmt.orelse and other is None:
        return None
    if isinstance(body, ast.Return) and body.value is not None:
        if other is None:
            other = _next_statement(site.scope, stmt)
        if not isinstance(other, ast.Return) or other.value is None:
            return None
        return _fix(site, stmt.test, body.value, other.value, "return ", cond)
    target = _single_target(body)
    if target is None:
        return None
    if other is not None and _single_target(other) != target:
        return None
    value = _assigned(site, body, target)
    if value is None:
        return None
    if other is None:
        return _fix_text(site, stmt.test, value, target, f"{target} = ", cond)
    other_value = _assigned(site, other, target)
    if other_value is None:
        return None
    return _fix_text(site, stmt.test, value, other_value, f"{target} = ", cond)


def _if_exp(stmt: ast.stmt | None) -> ast.AST | None:
    if isinstance(stmt, (ast.Return, ast.Assign)) and stmt.value is not None:
        return stmt.value
    return None


def _if_exp_fix(site: Site) -> BranchFix | None:
    stmt = site.stmt
    node = site.node if isinstance(site.node, ast.IfExp) else _if_exp(stmt)
    if not isinstance(node, ast.IfExp) or stmt is None:
        return None
    whole = site.text(stmt).strip()
    expr = site.text(node)
    if not whole or expr not in whole:
        return None
    cond = site.text(node.test)
    a, b = site.text(node.body), site.text(node.orelse)
    where = whole.replace(expr, f"jnp.where({cond}, {a}, {b})", 1)
    lax = whole.replace(expr, f"jax.lax.cond({cond}, lambda: {a}, lambda: {b})", 1)
    extreme = _extreme(node.test, node.body, node.orelse, site)
    return BranchFix(where, lax, whole.replace(expr, extreme, 1) if extreme else "")


def _fix(
    site: Site, test: ast.expr, a: ast.expr, b: ast.expr, prefix: str, cond: str
) -> BranchFix:
    extreme = _extreme(test, a, b, site)
    return BranchFix(
        f"{prefix}jnp.where({cond}, {site.text(a)}, {site.text(b)})",
        f"{prefix}jax.lax.cond({cond}, lambda: {site.text(a)}, lambda: {site.text(b)})",
        f"{prefix}{extreme}" if extreme else "",
    )


def _fix_text(
    site: Site, test: ast.expr, a: str, b: str, prefix: str, cond: str
) -> BranchFix:
    extreme = ""
    with contextlib.suppress(SyntaxError):
        extreme = _extreme(
            test, ast.parse(a, mode="eval").body, ast.parse(b, mode="eval").body, site
        )
    return BranchFix(
        f"{prefix}jnp.where({cond}, {a}, {b})",
        f"{prefix}jax.lax.cond({cond}, lambda: {a}, lambda: {b})",
        f"{prefix}{extreme}" if extreme else "",
    )


def _extreme(test: ast.expr, a: ast.AST, b: ast.AST, site: Site) -> str:
    """``jnp.minimum(x, y)`` when ``where(test, a, b)`` picks the smaller of the two
    compared values (``maximum`` for the larger); "" otherwise."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return ""
    left, right = test.left, test.comparators[0]
    same = ast.dump(a) == ast.dump(left) and ast.dump(b) == ast.dump(right)
    swapped = ast.dump(a) == ast.dump(right) and ast.dump(b) == ast.dump(left)
    if not (same or swapped):
        return ""
    name = _EXTREMES.get((type(test.ops[0]), same))
    if name is None:
        return ""
    return f"jnp.{name}({site.text(left)}, {site.text(right)})"


def _single_target(stmt: ast.stmt) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AugAssign):
        target = stmt.target
    else:
        return None
    return target.id if isinstance(target, ast.Name) else None


def _assigned(site: Site, stmt: ast.stmt, target: str) -> str | None:
    """The value ``stmt`` gives ``target`` (``t + a`` for ``t += a``)."""
    if isinstance(stmt, ast.Assign):
        return site.text(stmt.value)
    if isinstance(stmt, ast.AugAssign):
        op = _OPERATORS.get(type(stmt.op))
        if op is None:
            return None
        value = site.text(stmt.value)
        if not isinstance(stmt.value, _ATOMS):
            value = f"({value})"
        return f"{target} {op} {value}"
    return None


_ATOMS = (ast.Name, ast.Constant, ast.Call, ast.Attribute, ast.Subscript)
_OPERATORS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Pow: "**",
}


def _next_statement(scope: ast.AST | None, stmt: ast.stmt) -> ast.stmt | None:
    """The statement right after ``stmt`` in the block that holds it."""
    if scope is None:
        return None
    for node in ast.walk(scope):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and stmt in block:
                index = block.index(stmt)
                following = block[index + 1 : index + 2]
                return following[0] if following else None
    return None
