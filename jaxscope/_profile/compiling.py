"""Stage, lower and compile one call for ``js.profile`` / ``js.memory``, and call the
compiled executable with the values it was traced with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from jaxscope._exceptions import HloError, JaxscopeError
from jaxscope._hlo.model import HloCapture
from jaxscope._hlo.view import HloView
from jaxscope._staging import function_name, stage


def _first_line(exc: BaseException) -> str:
    for line in str(exc).splitlines():
        if line.strip():
            return line.strip()
    return type(exc).__name__


def lower(traced: Any) -> Any:
    """``traced.lower()``, a failure as a one-line ``HloError``."""
    try:
        return traced.lower()
    except JaxscopeError:
        raise
    except Exception as exc:
        raise HloError(
            f"JAX could not lower the program ({type(exc).__name__}: "
            f"{_first_line(exc)}); check the function with js.jaxpr first"
        ) from exc


def compile_lowered(lowered: Any, options: dict[str, Any] | None = None) -> Any:
    """``lowered.compile(compiler_options=options)``, a failure as an ``HloError``."""
    try:
        return (
            lowered.compile(compiler_options=options) if options else lowered.compile()
        )
    except Exception as exc:
        raise HloError(
            f"XLA could not compile the program ({type(exc).__name__}: "
            f"{_first_line(exc)})"
        ) from exc


def optimized_view(lowered: Any, compiled: Any, name: str = "") -> HloView:
    """The ``HloView`` (optimized stage) of an already compiled program."""
    return HloView(HloCapture(lowered, "optimized", compiled), function_name=name)


@dataclass(frozen=True)
class StagedCall:
    """A call traced and lowered, with what its executable is called with."""

    lowered: Any
    inputs: Any
    function_name: str
    input_names: tuple[str, ...] = ()


def stage_call(
    fun: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    api_name: str,
) -> StagedCall:
    """Trace (as ``js.hlo`` does: ``jax.jit``, ``nnx.jit``, ``eqx.filter_jit``) and lower."""
    staged = stage(
        fun,
        args,
        kwargs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        api_name=api_name,
    )
    return StagedCall(
        lower(staged.traced), staged.inputs, function_name(fun), staged.input_names
    )


def call_arguments(
    compiled: Any, inputs: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` for ``compiled(*args, **kwargs)`` from the staged inputs.

    ``inputs`` is ``(args, kwargs)`` for ``jax.jit`` and ``nnx.jit``, the single
    dynamic pytree for ``eqx.filter_jit``; the form that matches the executable's
    ``in_tree`` is used. NumPy arrays are put on the device once, here.
    """
    expected = getattr(compiled, "in_tree", None)
    candidates: list[tuple[tuple[Any, ...], dict[str, Any]]] = [((inputs,), {})]
    if isinstance(inputs, tuple) and len(inputs) == 2 and isinstance(inputs[1], dict):
        candidates.insert(0, (tuple(inputs[0]), dict(inputs[1])))
    chosen = candidates[0]
    for candidate in candidates:
        if expected is None or jax.tree.structure(candidate) == expected:
            chosen = candidate
            break
    return jax.tree.map(
        lambda x: jax.device_put(x) if isinstance(x, np.ndarray) else x, chosen
    )


class Runner:
    """Runs ``compiled`` on the staged inputs: ``runner(runner.prepare())``.

    ``prepare`` copies the donated arguments (the executable consumes them), so
    the call can be repeated and the copies stay outside the timed call.
    """

    def __init__(self, compiled: Any, inputs: Any) -> None:
        self.compiled = compiled
        args, kwargs = call_arguments(compiled, inputs)
        self._leaves, self._tree = jax.tree.flatten((args, kwargs))
        infos = getattr(compiled, "args_info", None)
        donated = (
            [bool(getattr(info, "donated", False)) for info in jax.tree.leaves(infos)]
            if infos is not None
            else []
        )
        if len(donated) != len(self._leaves):
            donated = [False] * len(self._leaves)
        self._donated = donated

    def prepare(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The arguments of one run (fresh copies of donated ones, ready)."""
        if not any(self._donated):
            return jax.tree.unflatten(self._tree, self._leaves)
        fresh = [
            jax.device_put(x, x.sharding, may_alias=False) if gives else x
            for x, gives in zip(self._leaves, self._donated, strict=True)
        ]
        jax.block_until_ready(fresh)
        return jax.tree.unflatten(self._tree, fresh)

    def __call__(self, prepared: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
        args, kwargs = prepared
        return self.compiled(*args, **kwargs)
