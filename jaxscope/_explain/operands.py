"""The failing expression's operands: their text, their shapes (read from the live
frame) and where each came from (a parameter, an assignment above, a global)."""

from __future__ import annotations

import ast
import types
from typing import Any

from jaxscope._explain.evaluate import MISSING, code_params, safe_eval
from jaxscope._explain.frames import Entry, code_name
from jaxscope._explain.report import Operand
from jaxscope._explain.sharded import describe
from jaxscope._explain.site import Site
from jaxscope._records import SourceLoc
from jaxscope._source import display_filename
from jaxscope.compat.jaxpr import aval_str

MAX_OPERANDS = 4
_ARRAY_METHODS = frozenset(
    {"reshape", "astype", "transpose", "dot", "take", "swapaxes", "squeeze"}
)
_BINDINGS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For)
_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def operands(entry: Entry, site: Site) -> tuple[Operand, ...]:
    """The operands of ``site``'s expression, evaluated in ``entry``'s frame."""
    out = []
    for node in operand_nodes(site.node)[:MAX_OPERANDS]:
        value = safe_eval(node, entry.frame)
        if isinstance(value, types.ModuleType):
            continue  # jnp.dot(x, w): the module is the callee, not an operand
        aval = _describe_value(value) if value is not MISSING else ""
        origin, loc = ("", None)
        root: ast.expr = node
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if isinstance(root, ast.Name):
            origin, loc = _origin(root.id, entry, site)
        text = site.text(node)
        if aval or origin or text:
            out.append(Operand(expr=text, aval=aval, origin=origin, origin_loc=loc))
    return tuple(out)


def _describe_value(value: Any) -> str:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        try:
            return describe(value) or aval_str(value)
        except Exception:
            return ""
    if isinstance(value, (bool, int, float, complex)):
        return f"{type(value).__name__} {value!r}"
    return ""


def operand_nodes(node: ast.AST | None) -> list[ast.expr]:
    """The sub-expressions of ``node`` that are its operands."""
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.Call):
        return _call_operands(node)
    if isinstance(node, ast.Subscript):
        return [node.value]
    return []


def _call_operands(node: ast.Call) -> list[ast.expr]:
    args: list[ast.expr] = []
    for arg in node.args:
        if isinstance(arg, (ast.List, ast.Tuple)):
            args.extend(
                arg.elts
            )  # jnp.concatenate([a, b]): the arrays are the operands
        elif not isinstance(arg, (ast.Starred, ast.Constant)):
            args.append(arg)
    if not args and isinstance(node.func, ast.Attribute):
        return [node.func.value]  # x.reshape(5, 7): the array is the receiver
    if isinstance(node.func, ast.Attribute) and node.func.attr in _ARRAY_METHODS:
        return [node.func.value, *args]
    return args


def _origin(name: str, entry: Entry, site: Site) -> tuple[str, SourceLoc | None]:
    """Where ``name`` got its value: a parameter, the last assignment above, a global."""
    code = entry.frame.f_code
    positional, kwonly = code_params(code)
    func = code_name(code)
    if name in positional:
        return f"argument {name} of {func} (position {positional.index(name)})", None
    if name in kwonly:
        return f"keyword argument {name} of {func}", None
    best = _last_binding(name, site.scope, entry.line)
    if best is not None:
        text = (site.text(best) or "").splitlines()[0].strip()
        loc = SourceLoc(
            file=display_filename(entry.filename), line=best.lineno, function=func
        )
        return f"`{text}` at {loc}", loc
    if name in entry.frame.f_globals and name not in entry.frame.f_locals:
        return f"global {name}", None
    return "", None


def _last_binding(name: str, scope: ast.AST | None, line: int) -> ast.stmt | None:
    """The last statement of ``scope`` above ``line`` that assigns ``name``."""
    best: ast.stmt | None = None
    if scope is None:
        return None
    for node in _walk_scope(scope):
        if not isinstance(node, _BINDINGS) or node.lineno >= line:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(_binds(t, name) for t in targets) and (
            best is None or node.lineno > best.lineno
        ):
            best = node
    return best


def _walk_scope(scope: ast.AST) -> list[ast.AST]:
    """The nodes of ``scope``, not descending into nested functions and classes."""
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        if isinstance(node, _NESTED_SCOPES):
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def _binds(target: ast.AST, name: str) -> bool:
    if isinstance(target, ast.Name):
        return target.id == name
    if isinstance(target, (ast.Tuple, ast.List)):
        return any(_binds(t, name) for t in target.elts)
    if isinstance(target, ast.Starred):
        return _binds(target.value, name)
    return False
