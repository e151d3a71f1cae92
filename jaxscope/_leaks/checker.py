"""Tracer leaks: every leaked tracer, where it was created and what holds it.

``check_leaks()`` returns a ``LeakReport``; as a context manager the report turns on
JAX's leak checking for a block and takes over the moment JAX checks a finished
trace: instead of raising on the first leak with a raw referrer chain, each leaked
tracer becomes a ``Leak`` record (abstract value, transformation, the user's line that
created it, and the named place that holds it: ``global list `cache`[0]``,
``attribute `self.state` of a `Model` object``, ...). It also checks the traces JAX
never checks (``jax.jvp``, ``jax.grad``'s linearize trace, eager ``shard_map``), makes
every trace in the block miss JAX's caches (a cached trace would never rerun the
Python function, hiding its leak), and adds the same facts to the
``UnexpectedTracerError`` JAX raises when a leaked tracer is used.

Only tracers held by a user-visible place are reported: tracers kept alive by JAX's
own objects (the inputs of an equation that produced a leaked tracer) are not leaks
of their own.

This module holds the report; the parts live beside it: ``records`` (``Leak``, the
summary), ``holders`` (the referrer walk that names a holder) and ``session`` (the JAX
hooks shared by every active report).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import weakref
from collections.abc import Iterator
from typing import Any

from jaxscope._display import Renderable
from jaxscope._exceptions import InvalidCallError, TracerLeakError
from jaxscope._leaks.holders import NotAHolder, holder_of
from jaxscope._leaks.records import Leak, LeakSummary, LeakSummaryRow, headline
from jaxscope._leaks.session import SESSION

__all__ = [
    "Leak",
    "LeakReport",
    "LeakSummary",
    "LeakSummaryRow",
    "check_leaks",
    "holder_of",
    "hooks_installed",
]

_FIX = (
    "  fix: return values from the transformed function instead of storing "
    "them; keep only concrete values (outside the transformation) in "
    "globals, attributes and caches"
)


class LeakReport(NotAHolder, Renderable):
    """The leaks found while checking, in the order they were found; also the context
    manager that checks (``with js.check_leaks() as report:``).

    ``len(report)`` is the number of leaks; ``str(report)`` a table. A report may be
    entered again after its block ends (it accumulates), but not while active.

    Args:
        raise_on_leak: raise ``TracerLeakError`` at the end of a block that leaked.
        retrace: see ``check_leaks``.
    """

    __slots__ = ("_seen", "_stack", "leaks", "raise_on_leak", "retrace")

    def __init__(self, raise_on_leak: bool = True, *, retrace: bool = True) -> None:
        for name, value in (("raise_on_leak", raise_on_leak), ("retrace", retrace)):
            if not isinstance(value, bool):
                raise InvalidCallError(
                    f"check_leaks({name}=...) takes True or False, got {value!r}; "
                    "pass a bool"
                )
        self.leaks: list[Leak] = []
        self.raise_on_leak = raise_on_leak
        self.retrace = retrace
        # id(tracer) -> (weakref to it, index in leaks); ids are checked against the ref
        self._seen: dict[int, tuple[Any, int]] = {}
        self._stack: contextlib.ExitStack | None = None

    @property
    def active(self) -> bool:
        """Whether this report is checking right now (inside its block)."""
        return self._stack is not None

    def __enter__(self) -> LeakReport:
        if self._stack is not None:
            raise InvalidCallError(
                "this leak check is already active; use a new js.check_leaks()"
            )
        self._stack = _activate(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()
        if exc_type is None and self.raise_on_leak and self.leaks:
            err = TracerLeakError(self.message())
            err.report = self  # type: ignore[attr-defined]
            raise err

    def __len__(self) -> int:
        return len(self.leaks)

    def __iter__(self) -> Iterator[Leak]:
        return iter(list(self.leaks))

    def clear(self) -> None:
        """Forget the leaks found so far (keeps checking if active)."""
        self.leaks = []
        self._seen = {}

    def summary(self) -> LeakSummary:
        """Per traced function: leaks, transformations, where created and held;
        ``summary().headline`` is the one-line account."""
        return LeakSummary.of(list(self.leaks))

    def message(self) -> str:
        """The one-line account, then one line per leak and a hint."""
        if not self.leaks:
            return headline(self.leaks)
        lines = [headline(self.leaks)]
        lines += [f"  {i}. {leak.describe()}" for i, leak in enumerate(self.leaks, 1)]
        lines.append(_FIX)
        return "\n".join(lines)

    def _add(self, tracer: Any, leak: Leak) -> None:
        """Record ``leak`` of ``tracer``, or complete the record it already has."""
        entry = self._seen.get(id(tracer))
        if entry is not None and entry[0]() is tracer:
            old = self.leaks[entry[1]]
            merged = old
            if leak.used_at is not None and old.used_at is None:
                merged = dataclasses.replace(merged, used_at=leak.used_at)
            if not old.found_in and leak.found_in:
                merged = dataclasses.replace(merged, found_in=leak.found_in)
            self.leaks[entry[1]] = merged
            return
        try:
            ref = weakref.ref(tracer)
        except TypeError:
            ref = lambda: None  # noqa: E731
        self._seen[id(tracer)] = (ref, len(self.leaks))
        self.leaks.append(leak)

    def _holds(self, tracer: Any) -> bool:
        entry = self._seen.get(id(tracer))
        return entry is not None and entry[0]() is tracer

    def _record(self, tracer: Any) -> Leak | None:
        entry = self._seen.get(id(tracer))
        if entry is not None and entry[0]() is tracer:
            return self.leaks[entry[1]]
        return None

    def __repr__(self) -> str:
        return f"<LeakReport: {len(self.leaks)} leak(s)>"


def check_leaks(raise_on_leak: bool = True, *, retrace: bool = True) -> LeakReport:
    """Check a block for leaked tracers: ``with js.check_leaks() as report: ...``.

    Returns a ``LeakReport``, itself the context manager (``report =
    js.check_leaks(raise_on_leak=False); with report: ...`` works too). Every trace
    that ends inside the block is checked (jit, grad, vjp, jvp, vmap, scan/while/cond
    bodies, pmap, shard_map, custom_jvp/vjp, remat): each tracer a global, an
    attribute, a closure cell, a default argument or a generator still holds becomes
    a ``Leak``. Traces inside the block miss JAX's caches, so a function traced before
    still has its leaks found (it is traced and compiled again). JAX's config is
    restored on every exit.

    Args:
        raise_on_leak: raise ``TracerLeakError`` on exit when anything leaked.
        retrace: True (default): every function is traced again inside the block,
            so a trace cached before (or in an earlier block) cannot hide a leak;
            the price is one recompile per jitted function and eager op used in the
            block. False: share one cache with every other ``retrace=False`` block
            (functions traced before any checking block are still retraced).

    Raises:
        TracerLeakError: on exit, listing every leak (first line: a summary).

    Example:
        >>> import jax, jaxscope as js
        >>> saved = []
        >>> def f(x):
        ...     saved.append(x * 2)
        ...     return x
        >>> with js.check_leaks(raise_on_leak=False) as report:
        ...     _ = jax.jit(f)(1.0)
        >>> report.leaks[0].transformation
        'jit'
    """
    return LeakReport(raise_on_leak, retrace=retrace)


def hooks_installed() -> bool:
    """Whether a ``check_leaks`` block is active (its JAX hooks are installed)."""
    return bool(SESSION.undo)


# A JAX user context that is part of every jit and trace cache key; each retracing
# block enters it with a new value, so its traces miss every cache.
_SALT: list[Any] = []
_SALT_COUNTER = itertools.count(1)


def _activate(report: LeakReport) -> contextlib.ExitStack:
    """Turn checking on for ``report``; closing the returned stack turns it off."""
    import jax

    if not _SALT:
        _SALT.append(jax.make_user_context(None))
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(jax.checking_leaks())
        token = next(_SALT_COUNTER) if report.retrace else 0
        stack.enter_context(_SALT[0](("jaxscope.check_leaks", token)))
        SESSION.start(report)
        stack.callback(SESSION.stop, report)
    except BaseException:
        stack.close()
        raise
    return stack
