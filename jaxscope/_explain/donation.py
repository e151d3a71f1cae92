"""A deleted array used again ("Array has been deleted", "Buffer has been deleted or
donated"): which operand of the failing line is deleted, read from the live frame, and
the last call above it in the same code that took it (where a donating jitted function
deleted it, or an explicit ``x.delete()``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

import jax

from jaxscope._explain.evaluate import MISSING, safe_eval
from jaxscope._explain.frames import Entry
from jaxscope._explain.site import Site, contains
from jaxscope._explain.wrappers import wrapper_of_call

_MAX_LEAVES = 10_000
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True, slots=True, kw_only=True)
class Deleted:
    """The deleted operand of the failing line and the last call that took it.

    Attributes:
        expr: the operand's text (``params``).
        call: the text of the last call above that took it ("" if none was found).
        line: that call's line.
        by_hand: whether that call is ``expr.delete()``.
        wrapper: the wrapper the call goes through (``jax.jit``, ``nnx.jit``,
            ``eqx.filter_jit``; "" when not known).
        callee: the text of the called function (``sgd``).
        result: the name the call's result was assigned to ("" if none).
        discarded: whether the call's result was dropped (a bare ``sgd(p, g)``).
    """

    expr: str
    call: str = ""
    line: int = 0
    by_hand: bool = False
    wrapper: str = ""
    callee: str = ""
    result: str = ""
    discarded: bool = False


def is_deleted(value: Any) -> bool:
    """Whether ``value`` is, or holds, a deleted ``jax.Array``."""
    try:
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:
        return False
    for leaf in leaves[:_MAX_LEAVES]:
        if isinstance(leaf, jax.Array):
            try:
                if leaf.is_deleted():
                    return True
            except Exception:
                continue
    return False


def deleted_operand(inner: Entry, site: Site) -> Deleted | None:
    """The deleted operand of the failing expression (statement) and where it went."""
    root = site.node if site.node is not None else site.stmt
    if root is None:
        return None
    for node in _loads(root):
        value = safe_eval(node, inner.frame)
        if value is not MISSING and is_deleted(value):
            expr = site.text(node)
            return _last_call(expr, inner, site) or Deleted(expr=expr)
    return None


def _loads(root: ast.AST) -> list[ast.expr]:
    """Names and attribute chains read in ``root``, in source order."""
    found = [
        n
        for n in ast.walk(root)
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load)
    ]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _walk_scope(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope`` outside the functions and classes defined in it."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _takes(call: ast.Call, expr: str, site: Site) -> bool:
    if isinstance(call.func, ast.Attribute) and call.func.attr == "delete":
        return not call.args and site.text(call.func.value) == expr
    values = [a.value if isinstance(a, ast.Starred) else a for a in call.args]
    values += [k.value for k in call.keywords]
    return any(site.text(v) == expr for v in values)


def _last_call(expr: str, inner: Entry, site: Site) -> Deleted | None:
    if site.scope is None:
        return None
    here = (inner.line, inner.col or 0)
    nodes = _walk_scope(site.scope)
    calls = [
        n
        for n in nodes
        if isinstance(n, ast.Call)
        and (n.lineno, n.col_offset) < here
        and not (site.node is not None and contains(n, site.node))
        and _takes(n, expr, site)
    ]
    if not calls:
        return None
    call = max(calls, key=lambda n: (n.lineno, n.col_offset))
    by_hand = isinstance(call.func, ast.Attribute) and call.func.attr == "delete"
    result, discarded = "", False
    for stmt in nodes:
        if isinstance(stmt, ast.Expr) and stmt.value is call:
            discarded = True
        elif (
            isinstance(stmt, ast.Assign)
            and stmt.value is call
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            result = stmt.targets[0].id
    return Deleted(
        expr=expr,
        call=site.text(call),
        line=call.lineno,
        by_hand=by_hand,
        wrapper="" if by_hand else wrapper_of_call(call, site, inner.frame),
        callee=site.text(call.func),
        result=result,
        discarded=discarded,
    )
