"""The staging transform ``graph(f)(*args)``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from jaxscope._jaxpr.api import jaxpr


def graph(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., Any]:
    """The dataflow graph of ``fun``'s jaxpr on example arguments (a ``GraphView``)."""
    to_jaxpr = jaxpr(
        fun, static_argnums=static_argnums, static_argnames=static_argnames
    )

    @functools.wraps(fun)
    def traced(*args: Any, **kwargs: Any) -> Any:
        return to_jaxpr(*args, **kwargs).graph()

    return traced
