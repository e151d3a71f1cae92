"""Tracer leaks: every leaked tracer, where it was created and what holds it.

``check_leaks()`` returns a ``LeakReport``; as a context manager the report checks the
traces that run inside its block, on its thread: instead of JAX raising on the first
leak with a raw referrer chain, each leaked tracer becomes a ``Leak`` record
(abstract value, transformation, the user's line that created it, and the named
place that holds it: ``global list `cache`[0]``, ``attribute `self.state` of a
`Model` object``, ...). It also checks the traces JAX never checks (``jax.jvp``,
``jax.grad``'s linearize trace, eager ``shard_map``), and adds the same facts to the
``UnexpectedTracerError`` JAX raises when a leaked tracer is used. JAX's config and
caches are left as they are.

Only tracers held by a user-visible place are reported: tracers kept alive by JAX's
own objects (the inputs of an equation that produced a leaked tracer) are not leaks
of their own.

This module holds the report; the parts live beside it: ``records`` (``Leak``, the
summary), ``holders`` (the referrer walk that names a holder) and ``session`` (the JAX
hooks shared by every active report, imported when a block starts: a report is plain
data until then, and ``import jaxscope._leaks.checker`` loads no JAX).
"""

from __future__ import annotations

import dataclasses
import sys
import weakref
from collections.abc import Iterator
from typing import Any

from jaxscope._display import Renderable
from jaxscope._exceptions import InvalidCallError, TracerLeakError
from jaxscope._leaks.holders import NotAHolder, holder_of
from jaxscope._leaks.records import Leak, LeakSummary, LeakSummaryRow, headline

__all__ = [
    "Leak",
    "LeakReport",
    "LeakSummary",
    "LeakSummaryRow",
    "check_leaks",
    "holder_of",
    "hooks_installed",
]

_NO_RETRACE = (
    "check_leaks(retrace=True) is no longer supported (it recompiled every function "
    "in every block and grew JAX's caches without bound): a block checks the code "
    "traced inside it; call f.clear_cache() (or jax.clear_caches()) before the block "
    "to check a function traced before it"
)

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
        retrace: see ``check_leaks`` (only False).
    """

    __slots__ = ("_seen", "_thread", "leaks", "raise_on_leak")

    def __init__(self, raise_on_leak: bool = True, *, retrace: bool = False) -> None:
        for name, value in (("raise_on_leak", raise_on_leak), ("retrace", retrace)):
            if not isinstance(value, bool):
                raise InvalidCallError(
                    f"check_leaks({name}=...) takes True or False, got {value!r}; "
                    "pass a bool"
                )
        if retrace:
            raise InvalidCallError(_NO_RETRACE)
        self.leaks: list[Leak] = []
        self.raise_on_leak = raise_on_leak
        # id(tracer) -> (weakref to it, index in leaks); ids are checked against the ref
        self._seen: dict[int, tuple[Any, int]] = {}
        self._thread: int | None = None  # the thread that entered the active block

    @property
    def active(self) -> bool:
        """Whether this report is checking right now (inside its block)."""
        return self._thread is not None

    def __enter__(self) -> LeakReport:
        if self._thread is not None:
            raise InvalidCallError(
                "this leak check is already active; use a new js.check_leaks()"
            )
        from jaxscope._leaks.session import SESSION  # JAX's hooks: loads JAX

        self._thread = SESSION.start(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            from jaxscope._leaks.session import SESSION

            SESSION.stop(self, thread)
        if exc_type is None and self.raise_on_leak and self.leaks:
            err = TracerLeakError(self.message(short=True))
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

    def message(self, *, short: bool = False) -> str:
        """The one-line account, then one line per leak (when more than one) and a
        hint. Control characters of user strings are spelled out. ``short=True``
        shows files as views do (for terminals: the pytest plugin, the CLI)."""
        if not self.leaks:
            return headline(self.leaks, short=short)
        lines = [headline(self.leaks, short=short)]
        if len(self.leaks) > 1:
            lines += [
                f"  {i}. {leak.describe(short=short)}"
                for i, leak in enumerate(self.leaks, 1)
            ]
        lines.append(_FIX)
        return "\n".join(lines)

    def add(self, tracer: Any, leak: Leak) -> Leak:
        """Record ``leak`` of ``tracer``, or complete the record already held of it
        (where it was used, what holds it); returns the record as now held. The
        block's hooks call this (``session.LeakSink``)."""
        entry = self._seen.get(id(tracer))
        if entry is not None and entry[0]() is tracer:
            old = self.leaks[entry[1]]
            merged = old
            if leak.used_at is not None and old.used_at is None:
                merged = dataclasses.replace(merged, used_at=leak.used_at)
            if not old.found_in and leak.found_in:
                merged = dataclasses.replace(merged, found_in=leak.found_in)
            self.leaks[entry[1]] = merged
            return merged
        try:
            ref = weakref.ref(tracer)
        except TypeError:
            ref = lambda: None  # noqa: E731
        self._seen[id(tracer)] = (ref, len(self.leaks))
        self.leaks.append(leak)
        return leak

    def knows(self, tracer: Any) -> bool:
        """Whether a leak of ``tracer`` is recorded (and not cleared)."""
        entry = self._seen.get(id(tracer))
        return entry is not None and entry[0]() is tracer

    def __repr__(self) -> str:
        return f"<LeakReport: {len(self.leaks)} leak(s)>"


def check_leaks(raise_on_leak: bool = True, *, retrace: bool = False) -> LeakReport:
    """Check a block for leaked tracers: ``with js.check_leaks() as report: ...``.

    Returns a ``LeakReport``, itself the context manager (``report =
    js.check_leaks(raise_on_leak=False); with report: ...`` works too).

    What is checked: every trace that runs inside the block, on the block's thread
    (jit, grad, vjp, jvp, vmap, scan/while/cond bodies, pmap, shard_map,
    custom_jvp/vjp, remat): each of its tracers that a global, an attribute, a
    closure cell, a default argument or a generator still holds becomes a ``Leak``.
    A call that JAX serves from its caches (a jitted function traced before the
    block, with the same argument types) runs no trace, so it creates no new leak
    and is not checked; to check such a function again, clear its cache first
    (``f.clear_cache()``, or ``jax.clear_caches()``). This is what
    ``jax.checking_leaks()`` checks too, and nothing is recompiled: JAX's config and
    caches are left as they are.

    Threads: a block reports the leaks of the code run on its own thread (like
    JAX's thread-local leak checking); blocks may be open on several threads at
    once. A leak from another thread's traces is that thread's block's to report.

    Args:
        raise_on_leak: raise ``TracerLeakError`` on exit when anything leaked.
        retrace: only False. (``retrace=True`` recompiled every function in every
            block and grew JAX's caches without bound; it raises, naming the
            replacement.)

    Raises:
        TracerLeakError: on exit, listing every leak (first line: a summary).
        InvalidCallError: ``raise_on_leak`` not a bool, or ``retrace=True``.

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
    session = sys.modules.get("jaxscope._leaks.session")
    return session is not None and bool(session.SESSION.undo)
