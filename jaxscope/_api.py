"""The staging transforms: ``jaxpr(f)(*args)``, ``hlo(f)(*args)``, ``graph(f)(*args)``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from ._jaxpr import build_model
from ._staging import check_callable, function_name, trace
from ._views import JaxprView


def jaxpr(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., JaxprView]:
    """Trace ``fun`` on example arguments and return its jaxpr, source-mapped.

    The function is traced, never run. Example arguments may be arrays, Python
    scalars, pytrees or ``jax.ShapeDtypeStruct``.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> v = js.jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))
        >>> [e.primitive for e in v.eqns]
        ['sin', 'mul']
    """
    check_callable(fun, "js.jaxpr")

    @functools.wraps(fun)
    def traced(*args: Any, **kwargs: Any) -> JaxprView:
        tr = trace(
            fun,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            api_name="js.jaxpr",
        )
        return JaxprView(
            tr.jaxpr, build_model(tr.jaxpr), function_name=function_name(fun)
        )

    return traced


def hlo(
    fun: Callable[..., Any],
    *,
    stage: str = "hlo",
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., Any]:
    """Lower (and for ``stage="optimized"`` compile) ``fun``; return an ``HloView``.

    ``stage`` is ``"stablehlo"``, ``"hlo"`` or ``"optimized"`` (post-fusion HLO).
    """
    from ._hlo_view import hlo_transform

    return hlo_transform(
        fun, stage=stage, static_argnums=static_argnums, static_argnames=static_argnames
    )


def graph(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., Any]:
    """The dataflow graph of ``fun``'s jaxpr on example arguments (a ``GraphView``)."""
    to_jaxpr = jaxpr(fun, static_argnums=static_argnums, static_argnames=static_argnames)

    @functools.wraps(fun)
    def traced(*args: Any, **kwargs: Any) -> Any:
        return to_jaxpr(*args, **kwargs).graph()

    return traced
