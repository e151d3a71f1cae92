"""Values of the failing expression's parts, read from the live frame without running
the user's code: names, plain attributes, constant subscripts, and the arguments and
callee of the failing call."""

from __future__ import annotations

import ast
import gc
import types
from typing import Any

MISSING: Any = object()
"""What an evaluation gives when the value cannot be read safely."""

_TRANSFORMS = (
    "jit",
    "grad",
    "value_and_grad",
    "vmap",
    "jacfwd",
    "jacrev",
    "hessian",
    "checkpoint",
    "remat",
)
_VARARGS = 0x04
_VARKEYWORDS = 0x08


def safe_eval(node: ast.AST, frame: types.FrameType) -> Any:
    """Evaluate a name, ``a.b`` on plain objects, or ``a[const]``; never call anything."""
    if isinstance(node, ast.Name):
        if node.id in frame.f_locals:
            return frame.f_locals[node.id]
        return frame.f_globals.get(node.id, MISSING)
    if isinstance(node, ast.Attribute):
        base = safe_eval(node.value, frame)
        if base is MISSING:
            return MISSING
        if isinstance(base, types.ModuleType):
            return getattr(base, node.attr, MISSING)
        attrs = getattr(base, "__dict__", None)
        if isinstance(attrs, dict) and node.attr in attrs:
            return attrs[node.attr]
        return MISSING
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = safe_eval(node.value, frame)
        key: Any = node.slice.value
        if isinstance(base, (dict, list, tuple)):
            try:
                return base[key]
            except (KeyError, IndexError, TypeError):
                return MISSING
    return MISSING


def code_params(code: types.CodeType) -> tuple[list[str], list[str]]:
    """The positional and the keyword-only parameter names of a code object."""
    n = code.co_argcount
    k = code.co_kwonlyargcount
    names = list(code.co_varnames[: n + k])
    return names[:n], names[n:]


def has_star_params(code: types.CodeType) -> bool:
    """Whether the code takes ``*args`` or ``**kwargs``."""
    return bool(code.co_flags & (_VARARGS | _VARKEYWORDS))


def eval_call_args(
    node: ast.Call, frame: types.FrameType
) -> tuple[list[Any], dict[str, Any]] | None:
    """The arguments of the failing call, or None when one cannot be read safely."""
    args: list[Any] = []
    for arg in node.args:
        if isinstance(arg, ast.Constant):
            args.append(arg.value)
            continue
        target = arg.value if isinstance(arg, ast.Starred) else arg
        value = safe_eval(target, frame)
        if value is MISSING:
            return None
        if isinstance(arg, ast.Starred):
            if not isinstance(value, (list, tuple)):
                return None
            args.extend(value)
        else:
            args.append(value)
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        value = (
            kw.value.value
            if isinstance(kw.value, ast.Constant)
            else safe_eval(kw.value, frame)
        )
        if value is MISSING or kw.arg is None:
            return None
        kwargs[kw.arg] = value
    return args, kwargs


def eval_callee(node: ast.expr, frame: types.FrameType) -> Any:
    """The callee of the failing call; ``jax.jit(jax.grad(f))`` is rebuilt (pure wrappers)."""
    if not isinstance(node, ast.Call):
        return safe_eval(node, frame)
    import jax

    wrapper = safe_eval(node.func, frame)
    allowed = [getattr(jax, name, None) for name in _TRANSFORMS]
    if wrapper is MISSING or not any(wrapper is a for a in allowed if a is not None):
        return MISSING
    if len(node.args) != 1:
        return MISSING
    inner = eval_callee(node.args[0], frame)
    if inner is MISSING or not callable(inner):
        return MISSING
    kwargs = {}
    for kw in node.keywords:
        if kw.arg is None or not isinstance(kw.value, (ast.Constant, ast.Tuple)):
            return MISSING
        try:
            kwargs[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            return MISSING
    try:
        return wrapper(inner, **kwargs)
    except Exception:
        return MISSING


def function_of(frame: types.FrameType) -> types.FunctionType | None:
    """The function object running in ``frame``, found through its code object."""
    code = frame.f_code
    for ref in gc.get_referrers(code):
        if isinstance(ref, types.FunctionType) and ref.__code__ is code:
            return ref
    return None
