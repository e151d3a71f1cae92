"""The staging transform ``hlo(f, stage=...)(*args)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxscope._hlo.view import hlo_transform


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
    return hlo_transform(
        fun, stage=stage, static_argnums=static_argnums, static_argnames=static_argnames
    )
