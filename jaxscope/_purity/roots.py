"""Whose trace JAX is starting, and which user code it will run.

JAX's tracing hook sees only the callable it traces. Behind ``jax.jit`` that is the
user's function; behind ``eqx.filter_jit`` it is Equinox's own wrapper (the user's
function travels as a static argument); behind ``nnx.jit`` the user's function,
whose NNX modules arrive as split state. The Python frames between the hook and the
user's call site hold what is missing: the library's jit wrapper and the arguments as
the user passed them. So ``trace_roots`` reads those frames' locals (only while a
watcher is active, only on a trace, never the user's own frames) for a jit wrapper of
a library, and for instances of the user's own classes (NNX / Equinox modules) whose
``__call__`` the trace will run.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jaxscope._purity.values import in_scope, user_function
from jaxscope.compat.libraries import is_equinox_filter_jit, is_nnx_jit
from jaxscope.compat.source import is_jax_file

_JAXSCOPE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_MAX_FRAMES = 200
_MAX_OBJECTS = 200
_MAX_DEPTH = 3


@dataclass(frozen=True, slots=True)
class TraceRoots:
    """The user function a trace is of and the user code it reaches from outside it."""

    fn: Any  # types.FunctionType (so typed, a dataclass field reads as a method)
    methods: tuple[types.FunctionType, ...]  # __call__ of user modules passed to fn


def trace_roots(fun: Any) -> TraceRoots | None:
    """What a trace of ``fun`` runs of the user's code; None for JAX's and libraries'
    own functions (out of scope)."""
    fn = user_function(fun)
    if fn is not None and is_jax_file(fn.__code__.co_filename):
        return None  # JAX's own functions, traced on every eager op: the fast path
    frames = list(_frames_to_user_code())
    if fn is None or not in_scope(fn.__code__.co_filename):
        fn = _function_of_library_jit(frames)
        if fn is None:
            return None
    return TraceRoots(fn, _user_methods(frames))


def _frames_to_user_code() -> Iterator[types.FrameType]:
    """The frames from here out to (not including) the first one of user code."""
    frame: types.FrameType | None = sys._getframe(1)
    for _ in range(_MAX_FRAMES):
        if frame is None or in_scope(frame.f_code.co_filename):
            return
        yield frame
        frame = frame.f_back


def _locals_of(frames: list[types.FrameType]) -> Iterator[Any]:
    """Each local of ``frames`` and the items of those that are tuples, lists and
    dicts (the ``*args`` and ``**kwargs`` of a wrapper)."""
    for frame in frames:
        if frame.f_code.co_filename.startswith(_JAXSCOPE_DIR):
            continue
        for value in list(frame.f_locals.values()):
            yield value
            if isinstance(value, (tuple, list)):
                yield from value
            elif isinstance(value, dict):
                yield from value.values()


def _function_of_library_jit(
    frames: list[types.FrameType],
) -> types.FunctionType | None:
    """The user's function of the ``eqx.filter_jit`` / ``nnx.jit`` wrapper being
    called, found in its frames."""
    for value in _locals_of(frames):
        try:
            if is_equinox_filter_jit(value) or is_nnx_jit(value):
                fn = user_function(value)
                if fn is not None and in_scope(fn.__code__.co_filename):
                    return fn
        except Exception:  # a hostile object among the locals
            continue
    return None


def _user_methods(frames: list[types.FrameType]) -> tuple[types.FunctionType, ...]:
    """``__call__`` of the user's module objects (and of their submodules) among the
    arguments being passed to the traced function."""
    methods: dict[types.CodeType, types.FunctionType] = {}
    seen: set[int] = set()
    stack = [(value, 0) for value in _locals_of(frames)]
    while stack and len(seen) < _MAX_OBJECTS:
        obj, depth = stack.pop()
        if id(obj) in seen or isinstance(obj, _NOT_MODULES):
            continue
        seen.add(id(obj))
        method = _user_call(obj)
        if method is None:
            continue
        methods.setdefault(method.__code__, method)
        if depth < _MAX_DEPTH:
            stack.extend((child, depth + 1) for child in _children(obj))
    return tuple(methods.values())


_NOT_MODULES = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.FrameType,
    int,
    float,
    complex,
    str,
    bytes,
    bool,
    type(None),
)


def _user_call(obj: Any) -> types.FunctionType | None:
    """``type(obj).__call__`` when it is the user's own code."""
    try:
        call = next(
            (vars(k)["__call__"] for k in type(obj).__mro__ if "__call__" in vars(k)),
            None,
        )
        fn = user_function(call) if isinstance(call, types.FunctionType) else None
    except Exception:
        return None
    return fn if fn is not None and in_scope(fn.__code__.co_filename) else None


def _children(obj: Any) -> list[Any]:
    """An object's attribute values, and the items of those that are containers."""
    try:
        state = object.__getattribute__(obj, "__dict__")
    except Exception:
        return []
    children: list[Any] = []
    for value in list(state.values()):
        children.append(value)
        if isinstance(value, (tuple, list)):
            children.extend(value)
        elif isinstance(value, dict):
            children.extend(value.values())
    return children
