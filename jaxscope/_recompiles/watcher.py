"""Recompilation causes: one ``RecompileEvent`` per jit cache miss, with its causes and cost.

``watch_recompiles()`` hooks only the miss path of ``jax.jit`` (see
``jaxscope.compat.recompiles``): a cache hit runs in C++ and never reaches Python, so
watching costs nothing there. On each miss the watcher records what JAX will key its
caches on (argument types with their pytree paths, static values, shardings, devices,
donation, jit options, the trace-context config) and, when the miss really traced,
lowered or compiled, compares that with the closest earlier compile of the same Python
function to say why: ``Cause(kind, path, before, after, hint)``.

JAX's own eager op dispatch (``jnp.ones(4)`` outside jit compiles
``jit(broadcast_in_dim)``) and functions defined inside JAX are never user events; they
are only counted in ``RecompileLog.internal_compiles``. What JAX jits around a user's
function is the user's: ``jax.pmap`` (in jax 0.10 a jit of a JAX-made ``shard_map``
wrapper) is reported as ``pmap(<user function>)`` with the user's argument names,
``jax.jit(jax.grad(loss))`` as ``grad(loss)``, and a ``lax.while_loop``/``cond``/
``scan`` run outside jit on functions not JAX's own (a library's line search, say) as
``lax.while_loop(<its functions>)`` at the user's line that called into it. Explicit
ahead-of-time ``f.trace(...)``/``f.lower(...).compile()`` are not call misses and are
not recorded. Watchers are process-wide: a watcher sees the misses of every thread while
it is active, and the compile history used to explain a miss is shared by all watchers
(kept by weak reference to each function, so nothing user-owned is held alive).

This module holds the log; the parts live beside it: ``records`` (causes, events,
summaries), ``signature`` (what a call is keyed on), ``causes`` (two signatures
diffed), ``history`` (the shared compile history a miss is explained against) and
``state`` (the process-wide hooks and the misses in progress).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

from jaxscope._display import Renderable
from jaxscope._exceptions import InvalidCallError, RecompileWatchError
from jaxscope._format import plural, short_repr
from jaxscope._recompiles.records import (
    CAUSE_KINDS,
    Cause,
    FunctionKey,
    RecompileEvent,
    RecompileEvents,
    RecompileSummary,
    SummaryRow,
    describe_cause,
    describe_event,
    function_matches,
)
from jaxscope._recompiles.state import STATE as _STATE  # bench_recompiles reads it
from jaxscope._recompiles.state import hooks_installed

__all__ = [
    "CAUSE_KINDS",
    "Cause",
    "FunctionKey",
    "RecompileEvent",
    "RecompileEvents",
    "RecompileLog",
    "RecompileSummary",
    "RecompileWatchError",
    "SummaryRow",
    "describe_cause",
    "describe_event",
    "function_matches",
    "hooks_installed",
    "watch_recompiles",
]


class RecompileLog(Renderable):
    """Every jit cache miss that traced or compiled a user function while watching.

    A context manager (``with js.watch_recompiles() as log:``) and also
    ``log.start()`` / ``log.stop()``; it may be started and stopped repeatedly and
    accumulates. Watchers nest: each records what happens while it is active; one log
    cannot watch twice at once (``with log: with log:`` raises).

    jaxscope holds a started log only weakly: a log dropped without ``stop()`` (the
    notebook cell ``log = js.watch_recompiles(); log.start()`` run again rebinds
    ``log``) stops when it is garbage collected, and JAX is unpatched once no log
    watches. Keep a reference for as long as it should watch.
    """

    __slots__ = (
        "__weakref__",
        "_calls",
        "_lock",
        "active",
        "events",
        "internal_compiles",
    )

    def __init__(self) -> None:
        self.events: list[RecompileEvent] = []
        self.internal_compiles = 0
        self.active = False
        self._calls: Counter[FunctionKey] = Counter()
        self._lock = threading.Lock()

    def start(self) -> RecompileLog:
        """Start watching (raises if this log is already watching); watches until
        ``stop()`` or until the log is garbage collected."""
        with _STATE.lock:
            if self.active:
                raise RecompileWatchError(
                    "this recompile log is already watching; call stop() before "
                    "start(), or use a new js.watch_recompiles()"
                )
            self.active = True
            _STATE.attach(self)
        return self

    def stop(self) -> RecompileLog:
        """Stop watching (no-op when not watching); removes the hooks if last."""
        with _STATE.lock:
            if self.active:
                self.active = False
                _STATE.detach(self)
        return self

    def __enter__(self) -> RecompileLog:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def clear(self) -> None:
        """Forget the events recorded so far (keeps watching if active)."""
        with self._lock:
            self.events = []
            self._calls = Counter()
            self.internal_compiles = 0

    # What the miss hooks deliver (``state.RecompileSink``); the lock makes each
    # one atomic against ``clear()`` and ``summary()`` on another thread.

    def add(self, event: RecompileEvent) -> None:
        """Record ``event`` (the miss hooks call this while the log watches)."""
        with self._lock:
            self.events.append(event)
            self._calls[event.key] += 1

    def count_miss(self, key: FunctionKey) -> None:
        """Count a cache miss of ``key`` that neither traced nor compiled (a call
        in ``summary()``)."""
        with self._lock:
            self._calls[key] += 1

    def count_internal(self, compiles: int) -> None:
        """Count ``compiles`` compiles of JAX's own functions (``internal_compiles``)."""
        with self._lock:
            self.internal_compiles += compiles

    def compiles(self, function: str | None = None) -> int:
        """How many events compiled ``function`` (any user function if None)."""
        return sum(
            1
            for e in self.events
            if e.compiled
            and (function is None or function_matches(e.function, function))
        )

    def events_of(self, function: str) -> list[RecompileEvent]:
        """The events of the function named ``function`` (qualified or short name)."""
        if not isinstance(function, str):
            raise InvalidCallError(
                "RecompileLog.events_of: function must be a function's name, got "
                f"{short_repr(function, 40)}; write e.g. log.events_of('train_step')"
            )
        return [e for e in self.events if function_matches(e.function, function)]

    def summary(self) -> RecompileSummary:
        """Per function: calls (C++ cache misses), traces, compiles, seconds, causes."""
        with self._lock:
            events, calls = list(self.events), Counter(self._calls)
        return RecompileSummary.of(events, calls, self.internal_compiles)

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[RecompileEvent]:
        return iter(list(self.events))

    def __repr__(self) -> str:
        state = "watching" if self.active else "stopped"
        return f"<RecompileLog ({state}): {plural(len(self.events), 'event')}>"


def watch_recompiles() -> RecompileLog:
    """Watch jit cache misses: ``with js.watch_recompiles() as log: ...``.

    Returns a ``RecompileLog``; as a context manager it watches inside the block
    (and stops on every exit path); ``log.start()`` / ``log.stop()`` do the same by hand.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> f = jax.jit(lambda x: x * 2)
        >>> with js.watch_recompiles() as log:
        ...     _ = f(jnp.ones(3)); _ = f(jnp.ones(4))
        >>> [e.causes[0].kind for e in log.events]
        ['first_call', 'shape']
    """
    return RecompileLog()
