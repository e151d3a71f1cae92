"""Which wrapper the user's failing call went through (``jax.jit``, ``nnx.jit``,
``eqx.filter_jit``, ``jax.vmap``, ...), so that messages and fixes name it; and the
Equinox Module fields behind a traced value, in the user's names.

The wrapper is read from the library frames left in the traceback just outside the
traced function (Flax and Equinox frames stay; JAX removes its own), else from the
called object or the call's text. Nothing is called or traced.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import types
from dataclasses import dataclass
from typing import Any

import jax

from jaxscope._explain.evaluate import (
    MISSING,
    code_params,
    has_star_params,
    safe_eval,
)
from jaxscope._explain.frames import Entry, is_own_code
from jaxscope._explain.site import Site
from jaxscope.compat import libraries as _clib

# Library files whose frames sit between the user's call and the function a wrapper
# traces, and the wrapper they belong to ("" for a name read off the code's name).
_WRAPPER_FILES = (
    ("/flax/nnx/transforms/compilation.py", "nnx.jit"),
    ("/flax/nnx/transforms/", ""),
    ("/equinox/_jit.py", "eqx.filter_jit"),
    ("/equinox/_vmap_pmap.py", ""),
    ("/equinox/_ad.py", ""),
)
_EQX_CODE_NAMES = (
    ("_PmapWrapper", "eqx.filter_pmap"),
    ("_VmapWrapper", "eqx.filter_vmap"),
    ("_ValueAndGradWrapper", "eqx.filter_value_and_grad"),
    ("_GradWrapper", "eqx.filter_grad"),
)
# The last name of a wrapper called as `wrapper(f)(...)`.
TRANSFORM_NAMES = frozenset(
    {
        "jit",
        "pmap",
        "vmap",
        "grad",
        "value_and_grad",
        "jacfwd",
        "jacrev",
        "hessian",
        "checkpoint",
        "remat",
        "shard_map",
        "filter_jit",
        "filter_vmap",
        "filter_pmap",
        "filter_grad",
        "filter_value_and_grad",
    }
)
# Equinox's filter_jit traces ``(dynamic_donate, dynamic_nodonate, static)``: the array
# leaves of the first argument under "first", of ``(other args, kwargs)`` under "rest".
# Relies on: equinox._jit._preprocess (tested with equinox 0.13.8).
_EQX_PATH = re.compile(
    r"^dynamic_(?:no)?donate\[['\"](?P<part>first|rest)['\"]\]\[(?P<leaf>\d+)\]$"
)


def _posix(filename: str) -> str:
    return filename.replace(os.sep, "/")


def _wrapper_of_frame(entry: Entry, transform: str | None) -> str | None:
    """The wrapper a library frame belongs to; None for any other frame."""
    path = _posix(entry.filename)
    for part, name in _WRAPPER_FILES:
        if part not in path:
            continue
        if name:
            return name
        if "/flax/nnx/" in part:
            return f"nnx.{transform}" if transform else "an nnx transform"
        qualname = getattr(entry.frame.f_code, "co_qualname", "")
        return next((n for key, n in _EQX_CODE_NAMES if key in qualname), None)
    return None


def wrapper_in_frames(
    found: list[Entry], code: types.CodeType | None, transform: str | None
) -> str:
    """The library wrapper whose frames lead into the traced function (``code``):
    ``"nnx.jit"``, ``"eqx.filter_jit"``, ...; "" when none does."""
    if code is None:
        return ""
    index = max((i for i, e in enumerate(found) if e.frame.f_code is code), default=-1)
    for entry in reversed(found[:index] if index > 0 else []):
        if is_own_code(entry):
            break
        name = _wrapper_of_frame(entry, transform)
        if name:
            return name
    return ""


def wrapper_of_callee(value: Any) -> str:
    """``"nnx.jit"``, ``"eqx.filter_jit"`` or ``"jax.jit"`` for such a wrapper object
    ("" for anything else)."""
    if _clib.is_nnx_jit(value):
        return "nnx.jit"
    if _clib.is_equinox_filter_jit(value):
        return "eqx.filter_jit"
    if isinstance(value, jax.stages.Wrapped):
        return "jax.jit"
    return ""


def wrapper_of_call(node: ast.AST | None, site: Site, frame: types.FrameType) -> str:
    """The wrapper the call ``node`` goes through: ``jax.vmap`` for
    ``jax.vmap(f)(x)`` (as written), else the called object's (``wrapper_of_callee``)."""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    if isinstance(func, ast.Call):
        name = site.text(func.func)
        if name.rsplit(".", 1)[-1] in TRANSFORM_NAMES:
            return name
        return ""
    return wrapper_of_callee(safe_eval(func, frame))


def library_of(wrapper: str) -> str:
    """``"nnx"``, ``"eqx"`` or ``"jax"``: the library a wrapper name comes from."""
    if wrapper.startswith(("nnx.", "an nnx")):
        return "nnx"
    if wrapper.startswith("eqx."):
        return "eqx"
    return "jax"


# ------------------------------------------------------------------ Equinox arguments


def equinox_arguments(
    args: tuple[str, ...], code: types.CodeType | None, frame: types.FrameType | None
) -> tuple[str, ...]:
    """``eqx.filter_jit``'s argument paths (``dynamic_nodonate['first'][1]``) in the
    user's names (``model.flag``), read off the traced function's parameters in its
    live frame. A path that cannot be mapped for certain is left out."""
    if code is None or frame is None or has_star_params(code):
        return tuple(a for a in args if not _EQX_PATH.match(a))
    positional, kwonly = code_params(code)
    values = frame.f_locals
    if not positional or any(p not in values for p in positional + kwonly):
        return tuple(a for a in args if not _EQX_PATH.match(a))
    first = values[positional[0]]
    rest = (
        (*(values[p] for p in positional[1:]), None),
        {k: values[k] for k in kwonly},
    )
    out: list[str] = []
    for arg in args:
        match = _EQX_PATH.match(arg)
        if match is None:
            out.append(arg)
            continue
        tree = first if match.group("part") == "first" else rest
        name = _leaf_name(tree, int(match.group("leaf")))
        if name is None:
            continue
        if match.group("part") == "first":
            name = positional[0] + name
        else:
            name = _rest_name(name, positional[1:])
        if name and name not in out:
            out.append(name)
    return tuple(out)


def _leaf_name(tree: Any, index: int) -> str | None:
    """The key path of leaf ``index`` of ``tree`` (``.flag``), if that leaf is traced."""
    try:
        leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
    except Exception:
        return None
    if index >= len(leaves) or not type(leaves[index][1]).__name__.endswith("Tracer"):
        return None
    return jax.tree_util.keystr(leaves[index][0])


def _rest_name(path: str, positional: list[str]) -> str:
    """``[0][1]['k']`` (in ``(other args, kwargs)``) → ``c['k']`` for the second of
    the other positional parameters; ``[1]['n']...`` → ``n...`` for keyword ``n``."""
    args = re.match(r"^\[0\]\[(\d+)\]", path)
    if args and int(args.group(1)) < len(positional):
        return positional[int(args.group(1))] + path[args.end() :]
    kwarg = re.match(r"^\[1\]\['(\w+)'\]", path)
    if kwarg:
        return kwarg.group(1) + path[kwarg.end() :]
    return ""


# ----------------------------------------------------------------- static fields


@dataclass(frozen=True, slots=True)
class FieldFix:
    """A Module field behind an argument path, and how to declare it static.

    Attributes:
        path: the argument path (``model.flag``).
        library: ``"eqx"`` for an ``eqx.Module``.
        cls: the Module's class name.
        field: the field's name.
        declaration: the static declaration (``flag: bool = eqx.field(static=True)``).
    """

    path: str
    library: str
    cls: str
    field: str
    declaration: str


def is_equinox_module(value: Any) -> bool:
    """Whether ``value`` is an ``eqx.Module`` (known by its class, never imported)."""
    return any(
        c.__name__ == "Module" and c.__module__.startswith("equinox.")
        for c in type(value).__mro__
    )


def field_fix(path: str, value: Any) -> FieldFix | None:
    """The static declaration of the field ``path`` names (``model.flag``: the field
    ``flag`` of ``value``, the value of ``model``), for an ``eqx.Module``."""
    match = re.match(r"^\w+\.(\w+)", path)
    if match is None or not is_equinox_module(value):
        return None
    name = match.group(1)
    field = next((f for f in dataclasses.fields(value) if f.name == name), None)
    if field is None:
        return None
    annotation = _annotation_text(field.type)
    decl = f"{name}: {annotation} = eqx.field(static=True)"
    return FieldFix(path, "eqx", type(value).__name__, name, decl)


def _annotation_text(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return re.sub(r"\b(?:typing|collections\.abc)\.", "", repr(annotation))


def argument_value(
    node: ast.AST | None, frame: types.FrameType, callee: Any, name: str
) -> Any:
    """The value the call ``node`` passes for ``callee``'s parameter ``name``, read
    without calling anything (MISSING when unsure)."""
    if not isinstance(node, ast.Call):
        return MISSING
    try:
        params = list(inspect.signature(callee).parameters)
    except (TypeError, ValueError):
        return MISSING
    for kw in node.keywords:
        if kw.arg == name:
            return safe_eval(kw.value, frame)
    if name not in params:
        return MISSING
    position = params.index(name)
    values: list[Any] = []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            spread = safe_eval(arg.value, frame)
            if not isinstance(spread, (list, tuple)):
                return MISSING
            values.extend(spread)
        else:
            values.append(arg)
        if len(values) > position:
            value = values[position]
            return safe_eval(value, frame) if isinstance(value, ast.AST) else value
    return MISSING
