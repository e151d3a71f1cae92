# pyright: strict
"""``RecompileEvent.diff()``: the program a function compiled before against the one
a recompile compiled, read from the jaxprs JAX's caches still hold (the watcher keeps
weak references only, so nothing is computed or kept on the call path)."""

from __future__ import annotations

from typing import Any

from jaxscope._diff.facts import program_facts
from jaxscope._diff.model import ProgramDiff, compare
from jaxscope._exceptions import InvalidCallError
from jaxscope._jaxpr.builder import build_model
from jaxscope._jaxpr.view import JaxprView


def _view(ref: Any, name: str) -> JaxprView | None:
    closed = ref() if ref is not None else None
    if closed is None:
        return None
    return JaxprView(closed, build_model(closed, ()), function_name=name)


def event_diff(event: Any) -> ProgramDiff:
    """The ``ProgramDiff`` of the compile before ``event`` against ``event``'s."""
    name: str = event.function
    refs: tuple[Any, Any] | None = event.programs
    kinds: list[str] = event.kinds
    if refs is None or refs[0] is None:
        if "first_call" in kinds or refs is not None:
            raise InvalidCallError(
                f"{name}: this is its first compile seen by the watcher, so there is "
                "no earlier program to compare; use js.diff(f)(args_a, args_b)"
            )
        raise InvalidCallError(
            f"{name}: the watcher did not see the program of this compile; use "
            "js.diff(f)(args_a, args_b)"
        )
    before, after = _view(refs[0], name), _view(refs[1], name)
    if before is None or after is None:
        raise InvalidCallError(
            f"{name}: JAX's caches no longer hold the "
            f"{'earlier' if before is None else 'recompiled'} program (cleared, or "
            "the function was deleted); compare the calls with "
            "js.diff(f)(args_a, args_b)"
        )
    return compare(
        program_facts(before), program_facts(after), causes=list(event.causes)
    )
