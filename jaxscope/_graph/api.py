"""The staging transform ``graph(f)(*args)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxscope._checks import takes_the_function_alone
from jaxscope._graph.view import GraphView
from jaxscope._jaxpr.api import jaxpr_view
from jaxscope._staging import staged


@takes_the_function_alone
def graph(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., GraphView]:
    """The dataflow graph of ``fun``'s jaxpr on example arguments (a ``GraphView``).

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> g = js.graph(lambda x: jnp.tanh(x) + 1.0)(jnp.ones(3))
        >>> [node.label for node in g.nodes if node.kind == "eqn"]
        ['tanh', 'add']
    """

    def build(
        fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> GraphView:
        view = jaxpr_view(
            fun,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            api_name="js.graph",
        )
        return view.graph()

    return staged(fun, "js.graph", build)
