"""Values a traced function reads: how each is remembered, and how its names resolve.

A ``Fingerprint`` remembers a value without keeping a user array alive: plain data
is copied, arrays and other objects are held by weak reference (small arrays also by
a digest of their bytes). ``lookup`` resolves a global or closure name of a
function's code now; ``resolve_attrs`` follows the attribute chain read after it.
"""

from __future__ import annotations

import builtins
import functools
import types
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxscope._format import short_repr
from jaxscope._purity.bytecode import Access

_MAX_VALUE_ELEMENTS = 100_000

# What ``lookup`` returns for a name that resolves to nothing.
MISSING: Any = object()

_SIMPLE = (bool, int, float, complex, str, bytes, type(None))


@dataclass(frozen=True, slots=True)
class Fingerprint:
    kind: str  # "value" | "array" | "object"
    value: Any = None  # a copy, for "value"
    ref: Any = None  # weakref (or None) for "array"/"object"
    ident: int = 0
    summary: str = ""
    digest: Any = None  # (shape, dtype, bytes hash) for small arrays


def is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (
        hasattr(value, "shape")
        and hasattr(value, "dtype")
        and hasattr(value, "__array__")
    )


def _freeze(value: Any, budget: list[int]) -> Any:
    """A comparable copy of plain data, or raise TypeError for anything else."""
    budget[0] -= 1
    if budget[0] < 0:
        raise TypeError("too large")
    if isinstance(value, (*_SIMPLE, np.generic)):
        return value
    if isinstance(value, tuple):
        return ("tuple", tuple(_freeze(v, budget) for v in value))
    if isinstance(value, list):
        return ("list", tuple(_freeze(v, budget) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(_freeze(v, budget) for v in value))
    if isinstance(value, dict):
        return (
            "dict",
            tuple((_freeze(k, budget), _freeze(v, budget)) for k, v in value.items()),
        )
    raise TypeError(type(value).__name__)


def _array_digest(value: Any) -> Any:
    try:
        size = int(np.prod(value.shape))
    except Exception:
        return None
    if size > _MAX_VALUE_ELEMENTS:
        return None
    try:
        host = np.asarray(value)
    except Exception:  # a tracer or a deleted array has no value to compare
        return None
    return (tuple(host.shape), str(host.dtype), hash(host.tobytes()))


def describe_value(value: Any) -> str:
    """A short readable value: an array's few elements or its type, dtype and shape;
    anything else's repr, cut to 60 characters."""
    if is_array(value):
        shape = "x".join(str(d) for d in getattr(value, "shape", ()))
        text = f"{type(value).__name__}({getattr(value, 'dtype', '?')}[{shape}])"
        try:
            if int(np.prod(value.shape)) <= 4:
                text = repr(np.asarray(value).tolist())
        except Exception:
            pass
        return text
    return short_repr(value, 60)


def fingerprint(value: Any) -> Fingerprint:
    if is_array(value):
        return Fingerprint(
            "array",
            ref=_weak(value),
            ident=id(value),
            summary=describe_value(value),
            digest=_array_digest(value),
        )
    try:
        return Fingerprint(
            "value", value=_freeze(value, [10_000]), summary=describe_value(value)
        )
    except TypeError:
        return Fingerprint(
            "object", ref=_weak(value), ident=id(value), summary=describe_value(value)
        )


def _weak(value: Any) -> Any:
    try:
        return weakref.ref(value)
    except TypeError:
        return None


def same(fp: Fingerprint, value: Any) -> bool:
    if fp.kind == "value":
        try:
            return fp.value == _freeze(value, [10_000])
        except TypeError:
            return False
    alive = fp.ref() if fp.ref is not None else None
    if fp.ref is not None and alive is value:
        return True
    if fp.ref is None and fp.ident == id(value):
        return True
    if fp.kind == "array" and fp.digest is not None and is_array(value):
        return _array_digest(value) == fp.digest
    return False


def mutable_state(value: Any) -> Any:
    """A shallow picture of an object's contents, to see whether tracing changed it."""
    try:
        if isinstance(value, (list, dict, set)):
            return _freeze(value, [10_000])
        state = getattr(value, "__dict__", None)
        if isinstance(state, dict):
            return tuple((k, id(v)) for k, v in state.items())
    except TypeError:
        return (
            "ids",
            tuple(
                id(v)
                for v in (value if isinstance(value, (list, set)) else value.values())
            ),
        )
    return None


def user_function(fn: Any) -> types.FunctionType | None:
    seen = 0
    while seen < 20:
        if isinstance(fn, types.FunctionType):
            return fn
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif isinstance(fn, functools.partial):
            fn = fn.func
        elif hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        else:
            return None
        seen += 1
    return None


def lookup(fn: types.FunctionType, code: types.CodeType, access: Access) -> Any:
    if access.scope == "global":
        value = fn.__globals__.get(access.name, MISSING)
        if value is MISSING:
            value = getattr(builtins, access.name, MISSING)
        return value
    if code is fn.__code__ and fn.__closure__ and access.name in code.co_freevars:
        cell = fn.__closure__[code.co_freevars.index(access.name)]
        try:
            return cell.cell_contents
        except ValueError:
            return MISSING
    return MISSING


def resolve_attrs(value: Any, attrs: tuple[str, ...]) -> Any:
    for attr in attrs:
        if isinstance(value, types.ModuleType):
            return MISSING
        try:
            value = getattr(value, attr)
        except Exception:
            return MISSING
    return value


def ignorable(value: Any) -> bool:
    """Modules, functions, classes and JAX/NumPy machinery: reading them is not a risk."""
    if value is MISSING or isinstance(
        value,
        (
            types.ModuleType,
            type,
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodType,
            functools.partial,
        ),
    ):
        return True
    if callable(value) and not is_array(value):
        return True
    module = getattr(type(value), "__module__", "") or ""
    return module.startswith(
        ("jax.", "jaxlib", "numpy.dtypes", "typing")
    ) and not is_array(value)
