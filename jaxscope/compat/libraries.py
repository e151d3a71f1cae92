"""Flax and Equinox: recognising their jit wrappers and unwrapping their stage objects.

Both libraries are optional: nothing here imports them; objects are recognised by
their type's module and name. Relies on (tested with flax 0.12.8, equinox 0.13.8):
``flax.nnx.transforms.compilation.JitWrapped`` (``nnx.jit``) whose ``.trace()`` returns
a ``Traced`` holding JAX's own as ``.traced`` (``Lowered.lowered``,
``Compiled.compiled`` likewise), and whose ``_get_pure_args_kwargs`` gives the pure
arguments its inner ``jax.jit`` is traced with; ``equinox._jit._JitWrapper``
(``eqx.filter_jit``), whose ``__wrapped__`` is the user's function.
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


def is_nnx_jit(fn: Any) -> bool:
    """Whether ``fn`` is an ``nnx.jit`` wrapper (graph nodes are split into state).

    Relies on: the class ``flax.nnx.transforms.compilation.JitWrapped``.
    """
    return _type_is(fn, "flax.nnx.transforms.compilation", "JitWrapped")


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


def nnx_state_paths(node: Any) -> list[str] | None:
    """Dotted paths (``"linear1.kernel"``) of an NNX graph node's state leaves, in
    the order ``nnx.jit`` passes them to its inner ``jax.jit``; None for a value
    that is not an NNX graph node.

    Relies on: the public ``flax.nnx.state`` / ``flax.nnx.to_flat_state`` and
    ``flax.nnx.graphlib.is_graph_node``.
    """
    from flax import nnx

    graphlib = private("flax.nnx.graphlib", "compat.libraries.nnx_state_paths")
    if not require(graphlib, "is_graph_node", "compat.libraries.nnx_state_paths")(node):
        return None
    flat = nnx.to_flat_state(nnx.state(node))
    return [".".join(str(part) for part in path) for path, _ in flat]
