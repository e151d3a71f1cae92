"""Flax NNX objects used across trace levels (``TraceContextError``, "Cannot extract
graph node from different trace level"): which NNX object the traced function
captured from outside its trace (a global or a closure variable, read from the live
frames), and which transform traced it."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from jaxscope._explain.evaluate import code_params
from jaxscope._explain.frames import Entry, is_own_code
from jaxscope._explain.site import function_node, site_at
from jaxscope._explain.wrappers import wrapper_in_frames, wrapper_of_call

_NNX_BASES = ("Module", "Pytree", "Object", "Variable")
_EXTRACT = (
    "Cannot extract graph node from different trace level",
    "Trying to extract graph node from different trace level",
)


def is_trace_level_error(exc: BaseException, first: str) -> bool:
    """Whether ``exc`` is Flax's error for an NNX object used across trace levels
    (``first``: its message's first line)."""
    cls = type(exc)
    if cls.__name__ == "TraceContextError" and cls.__module__.startswith("flax."):
        return True
    return first.startswith(_EXTRACT)


def passed_to_transform(first: str) -> bool:
    """Whether the message says an outer object was passed to an nnx transform."""
    return first.startswith(_EXTRACT)


def is_nnx_object(value: Any) -> bool:
    """Whether ``value`` is an NNX Module, Pytree or Variable (known by its class)."""
    return any(
        c.__name__ in _NNX_BASES and c.__module__.startswith("flax.nnx")
        for c in type(value).__mro__
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Capture:
    """The NNX object a traced function captured from outside its trace.

    Attributes:
        name: the global or closure variable (``model``).
        type_name: its class name.
        function: the function that captured it (``step``).
        params: that function's parameters.
        wrapper: the transform that traced the function (``jax.jit``, ``nnx.jit``,
            ``jax.vmap``, ...; "" when not known).
    """

    name: str
    type_name: str
    function: str
    params: tuple[str, ...]
    wrapper: str


def captured_object(found: list[Entry]) -> Capture | None:
    """The innermost function on the stack that reads an NNX object from a global or
    closure variable, and the transform it runs under."""
    for index in range(len(found) - 1, -1, -1):
        entry = found[index]
        code = entry.frame.f_code
        if code.co_name == "<module>" or not is_own_code(entry):
            continue
        for name in _outer_names(entry):
            value = _outer_value(entry, name)
            if not is_nnx_object(value):
                continue
            positional, kwonly = code_params(code)
            return Capture(
                name=name,
                type_name=type(value).__name__,
                function=code.co_name,
                params=tuple(positional + kwonly),
                wrapper=_wrapper_into(found, index),
            )
    return None


def _outer_names(entry: Entry) -> list[str]:
    """The global and closure names the entry's function reads as plain names."""
    code = entry.frame.f_code
    candidates = set(code.co_freevars) | set(code.co_names)
    scope = function_node(entry.filename, code)
    if scope is None:
        return []
    read = {
        n.id
        for n in ast.walk(scope)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return sorted(candidates & read)


def _outer_value(entry: Entry, name: str) -> Any:
    frame = entry.frame
    if name in frame.f_code.co_freevars:
        return frame.f_locals.get(name)
    return frame.f_globals.get(name)


def _wrapper_into(found: list[Entry], index: int) -> str:
    """The transform the function of ``found[index]`` was called through."""
    wrapper = wrapper_in_frames(found, found[index].frame.f_code, None)
    if wrapper:
        return wrapper
    for entry in reversed(found[:index]):
        if is_own_code(entry):
            site = site_at(entry.filename, entry.line, entry.col, entry.end_col)
            return wrapper_of_call(site.node, site, entry.frame)
    return ""
