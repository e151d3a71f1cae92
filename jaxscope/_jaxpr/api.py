"""The staging transform ``jaxpr(f)(*args)``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from jaxscope._format import qualname
from jaxscope._jaxpr.model import build_model
from jaxscope._jaxpr.view import JaxprView
from jaxscope._staging import staged, trace


def jaxpr(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., JaxprView]:
    """Trace ``fun`` on example arguments and return its jaxpr, source-mapped.

    The function is traced, never run. Example arguments may be arrays, Python
    scalars, pytrees or ``jax.ShapeDtypeStruct``. Each call traces afresh, so Python
    side effects in ``fun`` run once per call (but never on device); a function
    already wrapped in ``jax.jit`` is traced through its own (cached) ``.trace``.

    Args:
        fun: any callable JAX can trace: a plain function, ``jax.jit(f)``,
            ``jax.grad(f)``, ``jax.vmap(f)``, ``jax.pmap(f)``, a ``shard_map``...
        static_argnums: positional arguments passed as Python values, not traced.
        static_argnames: keyword arguments passed as Python values, not traced.

    Returns:
        A function taking example arguments and returning a ``JaxprView``.

    Raises:
        InvalidCallError: an argument JAX cannot trace, or bad static arguments.
        TraceError: ``fun`` raised while being traced (the message names the line).

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> v = js.jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))
        >>> [e.primitive for e in v.eqns]
        ['sin', 'mul']
    """
    build = functools.partial(
        jaxpr_view, static_argnums=static_argnums, static_argnames=static_argnames
    )
    return staged(fun, "js.jaxpr", build)


def jaxpr_view(
    fun: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    api_name: str = "js.jaxpr",
) -> JaxprView:
    """The ``JaxprView`` of ``fun(*args, **kwargs)``; ``api_name`` words the errors.

    A plain function is traced afresh on every call (its Python side effects run
    again). A ``jax.jit``-wrapped function is traced through its own ``.trace``, which
    JAX caches: a second view of the same call reuses the first trace.
    """
    tr = trace(
        fun,
        args,
        kwargs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        api_name=api_name,
    )
    return JaxprView(tr.jaxpr, build_model(tr.jaxpr), function_name=qualname(fun))
