"""The staging transform ``hlo(f, stage=...)(*args)``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxscope._checks import takes_the_function_alone
from jaxscope._hlo.model import capture, check_stage
from jaxscope._hlo.view import HloView
from jaxscope._staging import function_name, library_lowered, staged, trace


@takes_the_function_alone
def hlo(
    fun: Callable[..., Any],
    *,
    stage: str = "hlo",
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., HloView]:
    """Lower (and for ``stage="optimized"`` compile) ``fun``; return an ``HloView``.

    ``stage`` is ``"stablehlo"``, ``"hlo"`` or ``"optimized"`` (post-fusion HLO). The
    callable and the stage are checked here, before anything is traced.
    """

    def build(
        fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> HloView:
        traced = trace(
            fn,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            api_name="js.hlo",
        )
        lowered = library_lowered(
            fn,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            api_name="js.hlo",
        )
        return HloView(
            capture(traced, stage, lowered=lowered), function_name=function_name(fn)
        )

    transform = staged(fun, "js.hlo", build)
    check_stage(stage, "js.hlo")
    return transform
