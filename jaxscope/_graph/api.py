"""The staging transform ``graph(f)(*args)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxscope._jaxpr.api import jaxpr_view
from jaxscope._staging import staged


def graph(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., Any]:
    """The dataflow graph of ``fun``'s jaxpr on example arguments (a ``GraphView``)."""

    def build(
        fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        view = jaxpr_view(
            fun,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        )
        return view.graph()

    # Errors are worded as js.jaxpr's: the graph is drawn from its view.
    return staged(fun, "js.jaxpr", build)
