"""Purity checks: values baked into a trace that have since changed, and side effects
that ran only while JAX traced a function.

Everything is recorded while JAX traces (already slow, and only on a cache miss):
the function's bytecode says which globals, closure cells, defaults and attributes it
reads and which outer objects it writes; their values are fingerprinted before the
trace and compared after it (side effects) or on demand (stale values). A compiled
call's cache-hit path is never touched.

This module holds the log; the parts live beside it: ``records`` (findings and the
summary), ``bytecode`` (what code reads and writes), ``values`` (fingerprints, name
resolution), ``roots`` (whose trace it is: through ``eqx.filter_jit``/``nnx.jit``, and
the user's module methods it runs), ``tracing`` (the hook around JAX's tracing and
what it records), ``effects`` (trace-time side effects: writes, print, clocks, random
draws), ``stale`` (captured values compared with the values now) and ``cells`` (what
a notebook cell can have changed, for ``%purity on``).
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Collection
from typing import Any

from jaxscope._display import Renderable
from jaxscope._exceptions import InvalidCallError
from jaxscope._format import plural, qualname
from jaxscope._purity import stale as _stale
from jaxscope._purity import tracing
from jaxscope._purity.records import PurityFinding, PuritySummary, PuritySummaryRow
from jaxscope._purity.values import user_function

__all__ = [
    "PurityFinding",
    "PurityLog",
    "PuritySummary",
    "PuritySummaryRow",
    "stale",
    "watch_purity",
]


def stale(fun: Any) -> list[PurityFinding]:
    """The captured values of a jitted function that differ now from its last trace.

    Values are recorded while a purity watcher (``js.watch_purity()`` or ``%purity
    on``) is active when the function is traced.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> shift = -1.0
        >>> with js.watch_purity():
        ...     fn = jax.jit(lambda x: x + shift)
        ...     _ = fn(jnp.ones(2))
        >>> shift = 1.0
        >>> [f.name for f in js.stale(fn)]
        ['shift']
    """
    fn = user_function(fun)
    if fn is None:
        raise InvalidCallError(
            f"js.stale expects a (jitted) Python function, got {type(fun).__name__}; "
            "pass the function itself, e.g. js.stale(f)"
        )
    if not _stale.traced(fn):
        raise InvalidCallError(
            f"no trace of {qualname(fn)} was recorded: start js.watch_purity() "
            "(or %purity on) before its first call, then call js.stale again"
        )
    return _stale.stale_of(fn)


class PurityLog(Renderable):
    """Trace-time side effects and stale captured values seen while active.

    Use as a context manager or with ``start()``/``stop()``; it may be started and
    stopped repeatedly and accumulates, but cannot watch twice at once (``with log:
    with log:`` raises). ``findings`` lists side effects recorded during traces, then
    values that are stale right now.

    A started log is held weakly: one the program drops without ``stop()`` (the
    notebook cell ``log = js.watch_purity(); log.start()`` run again) stops when
    Python collects it, and JAX is unhooked with the last log. Keep a reference for
    as long as it should watch.
    """

    def __init__(self) -> None:
        self._effects: list[PurityFinding] = []
        self._traced: weakref.WeakSet[types.FunctionType] = weakref.WeakSet()
        self._active = False
        self._lock = threading.Lock()

    def start(self) -> PurityLog:
        """Start watching (raises if this log is already watching); watching ends
        with ``stop()``, or when the log is collected."""
        if self._active:
            raise InvalidCallError(
                "this purity log is already watching; call stop() before start(), "
                "or use a new js.watch_purity()"
            )
        tracing.attach(self)
        self._active = True
        return self

    def stop(self) -> PurityLog:
        """Stop watching (no-op when not watching); unhooks JAX if last."""
        if self._active:
            tracing.detach(self)
            self._active = False
        return self

    @property
    def active(self) -> bool:
        return self._active

    def __enter__(self) -> PurityLog:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def add_trace(self, fn: Any, effects: list[PurityFinding]) -> None:
        """Record a trace of ``fn`` and its side effects (the tracing hook calls
        this while the log watches; ``tracing.PuritySink``)."""
        with self._lock:
            self._traced.add(fn)
            self._effects.extend(effects)

    @property
    def side_effects(self) -> list[PurityFinding]:
        with self._lock:
            return list(self._effects)

    def stale_values(self) -> list[PurityFinding]:
        """Captured values of the functions traced while watching that differ now."""
        return _stale.stale_among(self._traced, None)

    def _stale_after_cell(self, names: Collection[str] | None) -> list[PurityFinding]:
        """What a notebook cell mentioning ``names`` can have made stale (None: all)."""
        return _stale.stale_among(self._traced, names)

    @property
    def findings(self) -> list[PurityFinding]:
        return self.side_effects + self.stale_values()

    def summary(self) -> PuritySummary:
        """Per function: side effects, stale values (as of now) and their names."""
        return PuritySummary.of(self.findings)

    def clear(self) -> None:
        """Forget the side effects and traced functions recorded so far (keeps
        watching if active)."""
        with self._lock:
            self._effects.clear()
            self._traced = weakref.WeakSet()

    reset = clear  # its earlier name, kept for code that calls it

    def __repr__(self) -> str:
        return f"<PurityLog: {plural(len(self.findings), 'finding')}>"


def watch_purity() -> PurityLog:
    """Watch traces for stale captured values and trace-time side effects.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> with js.watch_purity() as plog:
        ...     @jax.jit
        ...     def g(x):
        ...         print("tracing")
        ...         return x * 2
        ...     _ = g(jnp.ones(2))
        tracing
        >>> [f.name for f in plog.findings]
        ['print']
    """
    return PurityLog()
