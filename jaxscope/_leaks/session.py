"""The process-wide session of tracer-leak checking: JAX hooks installed while at
least one ``check_leaks`` block is active on any thread, and the ``Leak`` records
they produce for the blocks of the thread the leak happened on.

A trace that ends while something still refers to it (where JAX itself would look
for leaks) is checked at once: each of its tracers held by a named, user-visible
place becomes a leak. A trace JAX never checks (JVP, top-level linearize, eager
shard_map) is only noted when its function returns (its outputs are still alive
then) and checked when the block ends, like a trace whose tracers were held only by
JAX's or a library's objects when it ended (they may reach the user's objects after
the transformation returns). A leaked tracer used later (``UnexpectedTracerError``,
``float(t)``) is reported with where it was used, and JAX's error gains our account.

The hooks deliver leaks to the active blocks through ``LeakSink``, which
``LeakReport`` implements; this module never imports the report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import Any, Protocol

from jaxscope._leaks.holders import NotAHolder, holder_of
from jaxscope._leaks.records import Leak
from jaxscope._source import loc_of_traceback, user_frame_of_stack
from jaxscope.compat import leaks as _cl
from jaxscope.compat import source as _csource


class LeakSink(Protocol):
    """Where the hooks deliver the leaks of an active block (``LeakReport``)."""

    def add(self, tracer: Any, leak: Leak) -> Leak:
        """Record ``leak`` of ``tracer``, or complete the record already held of it;
        returns the record as now held."""
        ...

    def knows(self, tracer: Any) -> bool:
        """Whether a leak of ``tracer`` is recorded."""
        ...


class _Thread(NotAHolder):
    """The active reports of one thread and the traces left to check at their end."""

    __slots__ = ("busy", "found", "pending", "reports")

    def __init__(self) -> None:
        self.reports: list[LeakSink] = []
        # id(trace) -> weak reference; an entry leaves when its trace dies
        self.pending: dict[int, Any] = {}
        # id(tracer) -> weak reference: the leaks already reported (once is enough,
        # even if a report forgot them with ``clear()``)
        self.found: dict[int, Any] = {}
        self.busy = False

    def was_found(self, tracer: Any) -> bool:
        ref = self.found.get(id(tracer))
        return ref is not None and ref() is tracer

    def note_found(self, tracer: Any) -> None:
        with contextlib.suppress(TypeError):
            self.found[id(tracer)] = weakref.ref(tracer)
        if len(self.found) > 10_000:
            self.found = {k: r for k, r in self.found.items() if r() is not None}

    def defer(self, trace: Any) -> None:
        key = id(trace)
        pending = self.pending
        pending[key] = weakref.ref(trace, lambda _ref: pending.pop(key, None))

    def alive_pending(self) -> list[Any]:
        return [t for ref in list(self.pending.values()) if (t := ref()) is not None]

    def record(self, tracer: Any, leak: Leak) -> Leak:
        """Add ``leak`` of ``tracer`` to every report of this thread; returns the
        record as the last report now holds it (merged with what it knew)."""
        for report in list(self.reports):
            leak = report.add(tracer, leak)
        return leak


class Session(NotAHolder):
    """Hooks shared by every active ``check_leaks`` block; leaks go to the blocks of
    the thread they happen on."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.threads: dict[int, _Thread] = {}
        self.undo: list[Any] = []
        self.provenance = _Provenance()

    # -- blocks -------------------------------------------------------------------

    def start(self, report: LeakSink) -> int:
        """Add ``report`` to the current thread's blocks; returns the thread's id."""
        ident = threading.get_ident()
        with self.lock:
            if not self.undo:
                self._install()
            self.threads.setdefault(ident, _Thread()).reports.append(report)
        return ident

    def stop(self, report: LeakSink, ident: int) -> None:
        """End ``report``'s block, entered on thread ``ident`` (this or another)."""
        with self.lock:
            state = self.threads.get(ident)
            if state is None or report not in state.reports:
                return
            try:
                _check_pending(state, self.provenance)
            finally:
                state.reports.remove(report)
                if not state.reports:
                    del self.threads[ident]
                if not self.threads:
                    self._uninstall()

    def _install(self) -> None:
        try:
            self.undo.append(
                _cl.install_trace_hooks(
                    self.active,
                    self.on_trace_end,
                    _cl.unchecked_trace_types(),
                    self.on_body_end,
                )
            )
            self.undo.append(_cl.install_uncached_closure_convert(self.active))
            self.undo.append(_cl.install_escape_hook(self.on_escape))
            self.undo.append(_cl.install_misuse_hook(self.on_misuse))
            self.undo.append(
                _cl.install_creation_hook(
                    _cl.tracer_types_without_line_info(), self.on_created
                )
            )
        except BaseException:
            self._uninstall()
            raise

    def _uninstall(self) -> None:
        while self.undo:
            self.undo.pop()()
        self.provenance.clear()

    # -- hooks (called on the thread that traces) ----------------------------------

    def _here(self) -> _Thread | None:
        """The current thread's state, if it has a block and is not analysing."""
        state = self.threads.get(threading.get_ident())
        if state is None or state.busy:
            return None
        return state

    def active(self) -> bool:
        return self._here() is not None

    @contextlib.contextmanager
    def _analysing(self, state: _Thread) -> Iterator[None]:
        state.busy = True
        try:
            yield
        except Exception as exc:  # the user's program must go on
            _warn(exc)
        finally:
            state.busy = False

    def on_created(self, tracer: Any) -> None:
        if self._here() is not None:
            self.provenance.note_created(tracer)

    def on_trace_end(self, trace: Any) -> None:
        state = self._here()
        if state is None:
            return
        with self._analysing(state):
            gc.collect()  # what only a garbage cycle holds is no leak
            hint = "pmap" if _cl.pmap_on_stack() else None
            if hint is None and _cl.is_partial_eval_trace(trace):
                hint = _cl.partial_eval_transformation_on_stack()
            if hint is not None:
                self.provenance.note_hint(trace, hint)
            if not _check(state, trace, self.provenance):
                state.defer(trace)

    def on_body_end(self, trace: Any) -> None:
        state = self._here()
        if state is None:
            return
        with self._analysing(state):
            hint = _cl.api_transformation_on_stack()
            if hint is not None:
                self.provenance.note_hint(trace, hint)
            state.defer(trace)

    def on_escape(self, tracer: Any) -> str | None:
        state = self._here()
        if state is None:
            return None
        with self._analysing(state):
            leak = _leak(tracer, None, self.provenance)
            if leak is None:  # pragma: no cover - found_in "" is still a leak
                return None
            leak = state.record(
                tracer, dataclasses.replace(leak, used_at=user_frame_of_stack(1))
            )
            return f"jaxscope: leaked {leak.describe(short=True)}"
        return None  # never replace JAX's error with ours

    def on_misuse(self, tracer: Any) -> str | None:
        """``float(t)`` / ``np.asarray(t)`` / ``bool(t)`` of a tracer: if ``t`` leaked
        (its trace has ended), the same account as ``on_escape``."""
        state = self._here()
        if state is None:
            return None
        trace = _cl.trace_of(tracer)
        leaked = not _cl.trace_is_valid(trace) or any(
            r.knows(tracer) for r in state.reports
        )
        if not leaked:
            return None
        return self.on_escape(tracer)


def _check_pending(state: _Thread, provenance: _Provenance) -> None:
    """At the end of a block: check the traces still alive that were left to check
    (a trace dies with its last tracer, so most are gone by now)."""
    if not state.alive_pending():
        return
    state.busy = True
    try:
        gc.collect()
        for trace in state.alive_pending():
            _check(state, trace, provenance, final=True)
    except Exception as exc:  # the user's program must go on
        _warn(exc)
    finally:
        state.busy = False


def _check(
    state: _Thread, trace: Any, provenance: _Provenance, *, final: bool = False
) -> bool:
    """Report each tracer of ``trace`` that a named, user-visible place holds; False
    when some tracer of it is held by nothing named (yet). ``final``: the block is
    ending (its transformations have returned)."""
    tracer_cls = _cl.tracer_type()
    refs = gc.get_referrers(trace)
    tracers = [r for r in refs if isinstance(r, tracer_cls)]
    del refs
    settled = True
    for i in range(len(tracers)):  # no iterator object: it would refer to tracers
        tracer = tracers[i]
        if state.was_found(tracer):
            continue
        leak = _leak(tracer, (tracers,), provenance, final=final)
        if leak is None:
            settled = False
            continue
        state.note_found(tracer)
        state.record(tracer, leak)
    return settled


def _leak(
    tracer: Any,
    ignore: tuple[Any, ...] | None,
    provenance: _Provenance,
    *,
    final: bool = True,
) -> Leak | None:
    """The ``Leak`` record of ``tracer``; None if nothing user-visible holds it.

    ``ignore`` None: the tracer is being used (escaped), report it regardless.
    """
    hint = provenance.hint_of(_cl.trace_of(tracer))
    return leak_of(tracer, provenance.traceback_of(tracer), ignore, hint, final=final)


class _Provenance:
    """What JAX records nowhere, kept while checking: the creation traceback of the
    tracers that carry no line, and the transformation on the stack when a trace
    that carries no debug info ended (JVP, linearize) or that pmap made. Keyed by
    id, checked against a weak reference."""

    def __init__(self) -> None:
        self.born: dict[int, tuple[Any, Any]] = {}  # id(tracer) -> (ref, traceback)
        self.hints: dict[int, tuple[Any, str]] = {}  # id(trace) -> (ref, name)

    def clear(self) -> None:
        self.born.clear()
        self.hints.clear()

    def note_created(self, tracer: Any) -> None:
        with contextlib.suppress(TypeError):
            self.born[id(tracer)] = (weakref.ref(tracer), _cl.current_traceback())
        if len(self.born) > 50_000:
            self.born = {k: v for k, v in self.born.items() if v[0]() is not None}

    def note_hint(self, trace: Any, hint: str) -> None:
        self.hints[id(trace)] = (weakref.ref(trace), hint)
        if len(self.hints) > 50_000:
            self.hints = {k: v for k, v in self.hints.items() if v[0]() is not None}

    def hint_of(self, trace: Any) -> str | None:
        entry = self.hints.get(id(trace))
        return entry[1] if entry is not None and entry[0]() is trace else None

    def traceback_of(self, tracer: Any) -> Any:
        """The JAX traceback of ``tracer``'s creation, or None."""
        tb = _cl.creation_traceback(tracer)
        if tb is None:
            entry = self.born.get(id(tracer))
            if entry is not None and entry[0]() is tracer:
                tb = entry[1]
        return tb


def leak_of(
    tracer: Any,
    tb: Any,
    ignore: tuple[Any, ...] | None,
    hint: str | None,
    *,
    final: bool = True,
) -> Leak | None:
    """The ``Leak`` record of ``tracer`` created at traceback ``tb`` (None: unknown);
    None if nothing user-visible holds it and it is not being used (``ignore`` None).

    ``ignore``: the caller's containers that hold the tracer; ``hint``: the
    transformation seen on the stack when its trace was made; ``final``: the
    transformation has returned (a pytree's static data may hold the leak).
    """
    created_at = loc_of_traceback(tb) if tb is not None else None
    home_file = _raw_user_file(tb) if tb is not None else ""
    if not home_file:
        home_file = _file_of_src_info(_cl.traced_function(tracer))
    holder = holder_of(tracer, ignore or (), home_file, final=final)
    if holder is None or not holder[1]:
        # Only JAX's objects, or a container nothing names, hold it: JAX keeps such
        # containers alive around a finished trace, so they are not reported.
        if ignore is not None:
            return None
        found_in = ""
    else:
        found_in = holder[0]
    argument = created_at is None or _cl.is_argument(tracer)
    if created_at is None:
        created_at = user_frame_of_stack(1)
    return Leak(
        aval=_cl.aval_str(tracer),
        transformation=_cl.transformation_of(tracer, hint),
        created_at=created_at,
        found_in=found_in,
        function=_cl.traced_function(tracer),
        argument=argument,
    )


def _raw_user_file(tb: Any) -> str:
    raw = _csource.innermost_user_frame(tb)
    return raw.file if raw is not None else ""


def _file_of_src_info(src: str) -> str:
    """``"f at /a/b.py:3"`` -> ``"/a/b.py"``."""
    _, sep, where = src.rpartition(" at ")
    if not sep:
        return ""
    return where.rsplit(":", 1)[0]


def _warn(exc: BaseException) -> None:
    warnings.warn(
        f"jaxscope.check_leaks could not analyse a trace ({type(exc).__name__}: {exc})",
        RuntimeWarning,
        stacklevel=3,
    )


SESSION = Session()
