"""Flax and Equinox: recognising their jit wrappers and unwrapping their stage objects.

Both libraries are optional: nothing here imports them; objects are recognised by
their type's module and name. Relies on (tested with flax 0.12.8, equinox 0.13.8):
``flax.nnx.transforms.compilation.JitWrapped`` (``nnx.jit``) whose ``.trace()`` returns
a ``Traced`` holding JAX's own as ``.traced`` (``Lowered.lowered``,
``Compiled.compiled`` likewise), and whose ``_get_pure_args_kwargs`` gives the pure
arguments its inner ``jax.jit`` is traced with; ``equinox._jit._JitWrapper``
(``eqx.filter_jit``) and ``equinox._vmap_pmap._PmapWrapper`` (``eqx.filter_pmap``),
whose ``__wrapped__`` is the user's function.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxscope.compat import private, require

_JAX_STAGES = (jax.stages.Traced, jax.stages.Lowered, jax.stages.Compiled)


def _type_is(obj: Any, module: str, name: str) -> bool:
    cls = type(obj)
    return cls.__module__ == module and cls.__name__ == name


def jax_stage(obj: Any) -> Any:
    """JAX's ``Traced``/``Lowered``/``Compiled`` inside a library's own stage object
    (``nnx.jit(f).trace(...)`` returns Flax's wrapper); ``obj`` itself otherwise.

    Relies on: the ``traced`` / ``lowered`` / ``compiled`` attribute of Flax's stages.
    """
    for _ in range(4):
        if isinstance(obj, _JAX_STAGES):
            return obj
        inner = None
        for attr in ("traced", "lowered", "compiled"):
            candidate = getattr(obj, attr, None)
            if isinstance(candidate, _JAX_STAGES) or hasattr(candidate, "jaxpr"):
                inner = candidate
                break
        if inner is None:
            return obj
        obj = inner
    return obj


def is_equinox_filter_jit(fn: Any) -> bool:
    """Whether ``fn`` is an ``eqx.filter_jit`` wrapper (non-array leaves are static).

    Relies on: the class ``equinox._jit._JitWrapper``.
    """
    return _type_is(fn, "equinox._jit", "_JitWrapper")


def is_equinox_filter_pmap(fn: Any) -> bool:
    """Whether ``fn`` is an ``eqx.filter_pmap`` wrapper (array leaves are mapped,
    every other leaf is static, as for ``eqx.filter_jit``).

    Relies on: the class ``equinox._vmap_pmap._PmapWrapper``.
    """
    return _type_is(fn, "equinox._vmap_pmap", "_PmapWrapper")


def is_nnx_jit(fn: Any) -> bool:
    """Whether ``fn`` is an ``nnx.jit`` wrapper (graph nodes are split into state).

    Relies on: the class ``flax.nnx.transforms.compilation.JitWrapped``.
    """
    return _type_is(fn, "flax.nnx.transforms.compilation", "JitWrapped")


def fresh_nnx_jit(fn: Any) -> Any:
    """A new ``nnx.jit`` wrapper of the function ``fn`` wraps, with its shardings
    and static arguments: its trace misses JAX's caches (which are keyed on the
    wrapper's inner function) and fills none of ``fn``'s. ``fn`` itself where the
    wrapper cannot be rebuilt.

    Relies on: ``JitWrapped(fun, in_shardings, out_shardings, static_argnums=,
    static_argnames=)`` and its ``fun`` / ``in_shardings`` / ``out_shardings`` /
    ``jitted_fn`` attributes (flax 0.12.8).
    """
    try:
        nums, names = nnx_static_args(fn)
        in_shardings = fn.in_shardings
        if isinstance(in_shardings, tuple) and nums:
            # the constructor puts a None back for each static argument
            kept = [s for i, s in enumerate(in_shardings) if i not in nums]
            in_shardings = tuple(kept)
        return type(fn)(
            fn.fun,
            in_shardings,
            fn.out_shardings,
            static_argnums=nums or None,
            static_argnames=names or None,
        )
    except Exception:
        return fn


def nnx_pure_arguments(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``(pure_args, pure_kwargs)``: what ``nnx.jit``'s inner ``jax.jit`` is traced
    with, so their leaves line up with the jaxpr's inputs.

    Relies on: ``JitWrapped._get_pure_args_kwargs`` and
    ``flax.nnx.graphlib.update_context``.
    """
    needed_by = "compat.libraries.nnx_pure_arguments"
    graphlib = private("flax.nnx.graphlib", needed_by)
    with require(graphlib, "update_context", needed_by)(fn):
        return require(fn, "_get_pure_args_kwargs", needed_by)(args, kwargs)


def nnx_static_args(fn: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The resolved ``(static_argnums, static_argnames)`` of an ``nnx.jit`` wrapper:
    those arguments are in its pure arguments but are no inputs of its jaxpr.

    Relies on: ``JitWrapped.jitted_fn``, the ``jax.jit`` it traces (flax 0.12.8).
    """
    from jaxscope.compat.jaxpr import jit_static_args

    needed_by = "compat.libraries.nnx_static_args"
    return jit_static_args(require(fn, "jitted_fn", needed_by)) or ((), ())


def nnx_state_paths(node: Any, seen: set[int] | None = None) -> list[str] | None:
    """Dotted paths (``"linear1.kernel"``) of an NNX graph node's state leaves, in
    the order ``nnx.jit`` passes them to its inner ``jax.jit``; None for a value
    that is not an NNX graph node.

    ``seen``: ids of the Variables an earlier argument of the same call holds, which
    ``nnx.jit`` passes only there (an ``nnx.ModelAndOptimizer`` holds its model);
    they are left out, and this node's are added.

    Relies on: the public ``flax.nnx.state`` / ``flax.nnx.to_flat_state`` (whose
    leaves are the node's own Variables) and ``flax.nnx.graphlib.is_graph_node``.
    """
    from flax import nnx

    graphlib = private("flax.nnx.graphlib", "compat.libraries.nnx_state_paths")
    if not require(graphlib, "is_graph_node", "compat.libraries.nnx_state_paths")(node):
        return None
    seen = set() if seen is None else seen
    paths: list[str] = []
    for path, variable in nnx.to_flat_state(nnx.state(node)):
        if id(variable) in seen:
            continue
        seen.add(id(variable))
        paths.append(".".join(str(part) for part in path))
    return paths


# ----------------------------------------------------------------------------------
# Recompile watching (jaxscope._recompiles): the user's call behind a library's jit.
# A cache miss of eqx.filter_jit / nnx.jit is a miss of the library's inner jax.jit,
# whose arguments are the library's (``dynamic_nodonate['rest'][13]``, graph states);
# these find the user's function and arguments of the call in progress on the stack.

import inspect  # noqa: E402 - this block's own imports, kept with it
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class LibraryJitCall:
    """The user's side of a library jit call in progress: ``api`` is
    ``"eqx.filter_jit"`` or ``"nnx.jit"``; ``static_argnums`` index ``args``."""

    api: str
    user_fn: Any
    signature: Any  # inspect.Signature of user_fn, or None
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    static_argnums: tuple[int, ...] = ()


_STACK_LIMIT = 40  # frames searched for the library's wrapper call


def library_jit_call(fun: Any) -> LibraryJitCall | None:
    """When ``fun`` (the function of a ``jax.jit`` cache miss in progress) is the inner
    function of ``eqx.filter_jit`` or ``nnx.jit``, the user's call; else None.

    Relies on (flax 0.12.8, equinox 0.13.8): Equinox's inner function
    ``fun_wrapped`` in ``equinox._jit``, called under ``_call(jit_wrapper, is_lower,
    args, kwargs)`` whose ``jit_wrapper.__wrapped__`` is the user's function; Flax's
    ``JitFn`` (``.f``: the user's function, ``.ctxtag``: its ``JitWrapped``, with
    ``static_argnums``) called under ``JitWrapped.__call__(self, *args, **kwargs)``.
    """
    code = getattr(fun, "__code__", None)
    if code is not None and code.co_name == "fun_wrapped":
        if getattr(fun, "__module__", "") == "equinox._jit":
            return _equinox_call()
        return None
    if _type_is(fun, "flax.nnx.transforms.compilation", "JitFn"):
        return _nnx_call(fun)
    return None


def pmap_call(user: Any, fun: Any, flat_args: tuple[Any, ...]) -> LibraryJitCall | None:
    """The user's call behind a ``jax.pmap`` or ``eqx.filter_pmap`` miss, with its
    arguments as the user passed them; ``user``: the function ``pmap`` maps (what
    ``recompiles.pmap_user_function`` found), ``fun``: the jitted function,
    ``flat_args``: its flat arguments. None where they cannot be rebuilt.

    Relies on (equinox 0.13.8): ``eqx.filter_pmap`` mapping Equinox's
    ``fun_wrapped`` (module ``equinox._vmap_pmap``), called under
    ``_PmapWrapper._call(self, is_lower, args, kwargs)`` whose ``self.__wrapped__``
    is the user's function (``kwargs`` deleted there after use); for ``nnx.pmap``,
    ``_nnx_pmap_call``; for ``jax.pmap``, ``recompiles.pmap_in_tree``.
    """
    nnx_call = _nnx_pmap_call(user)
    if nnx_call is not None:
        return nnx_call
    code = getattr(user, "__code__", None)
    if code is not None and code.co_name == "fun_wrapped":
        if getattr(user, "__module__", "") != "equinox._vmap_pmap":
            return None
        for frame in _frames():
            if frame.f_code.co_name != "_call":
                continue
            if frame.f_globals.get("__name__") != "equinox._vmap_pmap":
                continue
            local = frame.f_locals
            wrapper, args = local.get("self"), local.get("args")
            kwargs = local.get("kwargs", {})  # _call deletes it once read
            inner = getattr(wrapper, "__wrapped__", None)
            if not isinstance(args, tuple) or not isinstance(kwargs, dict):
                return None
            return LibraryJitCall(
                "eqx.filter_pmap", inner, _signature(inner), args, dict(kwargs)
            )
        return None
    from jaxscope.compat.recompiles import pmap_in_tree

    in_tree = pmap_in_tree(fun)
    if in_tree is None or in_tree.num_leaves != len(flat_args):
        return None
    try:
        args, kwargs = jax.tree_util.tree_unflatten(in_tree, list(flat_args))
    except Exception:  # a structure that will not rebuild
        return None
    if not isinstance(args, (tuple, list)) or not isinstance(kwargs, dict):
        return None
    return LibraryJitCall("jax.pmap", user, _signature(user), tuple(args), kwargs)


_NNX_ITERATION = "flax.nnx.transforms.iteration"
# nnx.pmap's wrappers around jax.pmap: graph mode, and the simple (graph_updates=False)
_NNX_PMAP_WRAPPERS = frozenset({"vmap_wrapper", "simple_pmap_wrapper"})


def _nnx_pmap_call(user: Any) -> LibraryJitCall | None:
    """``nnx.pmap`` of ``user``: the arguments of the wrapper call in progress.

    Relies on (flax 0.12.8): ``vmap_wrapper(*args)`` / ``simple_pmap_wrapper(*args,
    **kwargs)`` in ``flax.nnx.transforms.iteration`` calling the closed-over
    ``pmapped_fn = jax.pmap(PmapFn(f, ...))`` (``__wrapped__``: the ``PmapFn``,
    whose ``.f`` is the user's function).
    """
    for frame in _frames():
        if frame.f_code.co_name not in _NNX_PMAP_WRAPPERS:
            continue
        if frame.f_globals.get("__name__") != _NNX_ITERATION:
            continue
        local = frame.f_locals
        mapped = getattr(
            getattr(local.get("pmapped_fn"), "__wrapped__", None), "f", None
        )
        if mapped is not user:
            return None
        args, kwargs = local.get("args"), local.get("kwargs", {})
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            return None
        return LibraryJitCall("nnx.pmap", user, _signature(user), args, dict(kwargs))
    return None


def _frames() -> Any:
    frame = sys._getframe(2)
    for _ in range(_STACK_LIMIT):
        if frame is None:
            return
        yield frame
        frame = frame.f_back


def _equinox_call() -> LibraryJitCall | None:
    for frame in _frames():
        if frame.f_code.co_name != "_call":
            continue
        if frame.f_globals.get("__name__") != "equinox._jit":
            continue
        local = frame.f_locals
        wrapper, args, kwargs = (
            local.get(k) for k in ("jit_wrapper", "args", "kwargs")
        )
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            return None
        user = getattr(wrapper, "__wrapped__", None)
        return LibraryJitCall(
            "eqx.filter_jit", user, _signature(user), args, dict(kwargs)
        )
    return None


def _nnx_call(jit_fn: Any) -> LibraryJitCall | None:
    wrapped = getattr(jit_fn, "ctxtag", None)
    for frame in _frames():
        if frame.f_code.co_name != "__call__":
            continue
        local = frame.f_locals
        if local.get("self") is not wrapped:
            continue
        args, kwargs = local.get("args"), local.get("kwargs")
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            return None
        user = getattr(jit_fn, "f", None)
        nums = getattr(wrapped, "static_argnums", ()) or ()
        return LibraryJitCall(
            "nnx.jit", user, _signature(user), args, dict(kwargs), tuple(nums)
        )
    return None


def _signature(fn: Any) -> Any:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def is_nnx_variable(x: Any) -> bool:
    """Whether ``x`` is a Flax NNX ``Variable`` (``nnx.Param``, ``nnx.BatchStat``...).

    Relies on: the class ``flax.nnx.variablelib.Variable`` in ``x``'s type's MRO.
    """
    return any(
        c.__name__ == "Variable" and c.__module__ == "flax.nnx.variablelib"
        for c in type(x).__mro__
    )


def nnx_variable_value(x: Any) -> Any:
    """The value an NNX ``Variable`` holds (``get_value()``; ``.value`` before it)."""
    get = getattr(x, "get_value", None)
    return get() if get is not None else getattr(x, "value", x)


def is_equinox_filtered_transform(fn: Any) -> bool:
    """Whether ``fn`` is an Equinox filtered transform other than ``filter_jit``
    (``eqx.filter_value_and_grad``, ``eqx.filter_grad``): it takes Modules whose
    non-array leaves (activation functions) must not be traced.

    Relies on: the classes ``_ValueAndGradWrapper`` / ``_GradWrapper`` of
    ``equinox._ad`` (equinox 0.13.8).
    """
    return _type_is(fn, "equinox._ad", "_ValueAndGradWrapper") or _type_is(
        fn, "equinox._ad", "_GradWrapper"
    )


def nnx_call_output(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], pure_outputs: Any
) -> tuple[Any, list[tuple[int, str]]]:
    """What the ``nnx.jit`` call returns, from its inner ``jax.jit``'s outputs
    ``(pure_args_out, pure_kwargs_out, pure_out)``, and the state it would write
    back: ``[(argument position, "linear.kernel"), ...]`` whose value changes.
    The write-back goes to copies (``nnx.clone``): the user's objects stay as
    they are.

    Relies on: ``JitWrapped._get_pure_args_kwargs`` and ``_get_non_pure_out``
    under ``flax.nnx.graphlib.update_context`` (flax 0.12.8), as
    ``JitWrapped.__call__`` runs them.
    """
    from flax import nnx

    needed_by = "compat.libraries.nnx_call_output"
    graphlib = private("flax.nnx.graphlib", needed_by)
    copies, copied_kwargs = nnx.clone((args, kwargs))
    with require(graphlib, "update_context", needed_by)(fn):
        require(fn, "_get_pure_args_kwargs", needed_by)(copies, copied_kwargs)
        out = require(fn, "_get_non_pure_out", needed_by)(*pure_outputs)
    is_node = require(graphlib, "is_graph_node", needed_by)
    updated: list[tuple[int, str]] = []
    for position, (before, after) in enumerate(zip(args, copies, strict=True)):
        if not is_node(before):
            continue
        old = dict(nnx.to_flat_state(nnx.state(before)))
        for path, variable in nnx.to_flat_state(nnx.state(after)):
            previous = old.get(path)
            new_value = nnx_variable_value(variable)
            old_value = nnx_variable_value(previous) if previous is not None else None
            if old_value is None or not _same_array(old_value, new_value):
                updated.append((position, ".".join(str(p) for p in path)))
    return out, updated


def _same_array(a: Any, b: Any) -> bool:
    import numpy as np

    if a is b:
        return True
    try:
        x, y = np.asarray(a), np.asarray(b)
    except Exception:
        return False
    return x.shape == y.shape and x.dtype == y.dtype and bool(np.array_equal(x, y))
