"""The staging transform ``jaxpr(f)(*args)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxscope._checks import takes_the_function_alone
from jaxscope._exceptions import InvalidCallError
from jaxscope._format import qualname
from jaxscope._jaxpr.builder import build_model
from jaxscope._jaxpr.view import JaxprView
from jaxscope._staging import stage, staged


@takes_the_function_alone
def jaxpr(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    max_eqns: int | None = JaxprView.default_max_eqns,
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
        max_eqns: displays keep the first and last ``max_eqns // 2`` equations of
            longer jaxprs (None: every equation); ``.text`` always has them all.

    Returns:
        A function taking example arguments and returning a ``JaxprView``.

    Raises:
        InvalidCallError: an argument JAX cannot trace, bad static arguments, or a
            ``max_eqns`` below 2.
        TraceError: ``fun`` raised while being traced (the message names the line).

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> v = js.jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))
        >>> [e.primitive for e in v.eqns]
        ['sin', 'mul']
    """
    if max_eqns is not None and (
        not isinstance(max_eqns, int) or isinstance(max_eqns, bool) or max_eqns < 2
    ):
        raise InvalidCallError(
            f"js.jaxpr: max_eqns must be an int >= 2 or None, got {max_eqns!r}; "
            "use e.g. max_eqns=400, or max_eqns=None to show every equation"
        )

    def build(
        fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]
    ) -> JaxprView:
        view = jaxpr_view(
            fn,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        )
        return view.with_options(max_eqns=max_eqns)

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
    call = stage(
        fun,
        args,
        kwargs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        api_name=api_name,
    )
    closed = call.traced.jaxpr
    model = build_model(closed, call.input_names)
    return JaxprView(closed, model, function_name=qualname(fun))
