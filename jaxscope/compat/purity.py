"""A hook around JAX's tracing of a user's Python function for ``jit``.

Relies on: ``jax._src.interpreters.partial_eval.trace_to_jaxpr`` (a
``weakref_lru_cache``d function that ``jit`` calls, through the module attribute, with
the user's Python callable first; present with that call shape in jax 0.9.0 to 0.10.2).
It is reached only on a miss of jit's C++ fast path, so the hook costs nothing on a
compiled call's cache hit. A listener that raises is skipped: the trace goes on.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from jaxscope.compat import PrivateModule, require

_pe = PrivateModule("jax._src.interpreters.partial_eval", "compat.purity")

# (on_enter(fun) -> token, on_exit(token, completed: bool)) pairs, in install order.
_listeners: list[tuple[Callable[[Any], Any], Callable[[Any, bool], None]]] = []
# re-entrant: a listener may be removed from a garbage-collection callback that runs
# on a thread holding the lock (its owner was collected)
_lock = threading.RLock()


class _TraceHook:
    """Stands in for ``pe.trace_to_jaxpr``; delegates everything else to the original."""

    def __init__(self, original: Any) -> None:
        self._original = original

    def __call__(self, fun: Any, *args: Any, **kwargs: Any) -> Any:
        listeners = list(_listeners)
        if not listeners:
            return self._original(fun, *args, **kwargs)
        tokens = []
        for on_enter, on_exit in listeners:
            try:
                tokens.append((on_exit, on_enter(fun)))
            except Exception:  # a listener's failure never reaches the traced program
                continue
        completed = False
        try:
            result = self._original(fun, *args, **kwargs)
            completed = True
            return result
        finally:
            for on_exit, token in reversed(tokens):
                with contextlib.suppress(Exception):
                    on_exit(token, completed)

    def __getattr__(self, name: str) -> Any:
        # cache_clear, evict_weakref, cache_info: JAX calls these on the attribute.
        return getattr(self._original, name)


def add_trace_listener(
    on_enter: Callable[[Any], Any], on_exit: Callable[[Any, bool], None]
) -> Callable[[], None]:
    """Call ``on_enter(fun)`` before and ``on_exit(token, completed)`` after each trace.

    ``fun`` is the Python callable JAX is about to trace (the user's function for
    ``jit``, ``make_jaxpr``, ``grad`` of a jitted call; JAX's own functions for eager
    ops). The cached function may return without running ``fun`` (a trace-cache hit).
    Returns a function that removes the listener.

    Relies on: ``partial_eval.trace_to_jaxpr`` looked up as a module attribute by jit.
    """
    current = require(_pe, "trace_to_jaxpr", "compat.purity.add_trace_listener")
    entry = (on_enter, on_exit)
    with _lock:
        _listeners.append(entry)  # first: a removal run meanwhile keeps the hook
        current = _pe.trace_to_jaxpr
        if not isinstance(current, _TraceHook):
            _pe.trace_to_jaxpr = _TraceHook(current)

    def remove() -> None:
        with _lock:
            if entry in _listeners:
                _listeners.remove(entry)
            hook = _pe.trace_to_jaxpr
            if not _listeners and isinstance(hook, _TraceHook):
                _pe.trace_to_jaxpr = hook._original

    return remove


def trace_hook_installed() -> bool:
    """Whether the hook currently stands in for ``trace_to_jaxpr``."""
    return isinstance(getattr(_pe, "trace_to_jaxpr", None), _TraceHook)
