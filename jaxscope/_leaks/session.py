"""The process-wide session of tracer-leak checking: JAX hooks installed while at
least one ``check_leaks`` block is active, and the ``Leak`` records they produce.

At the end of every trace (and the end of a JVP/linearize body, which JAX never
checks) the tracers of that trace still held by a named, user-visible place become
leaks of every active report. A leaked tracer used later (``UnexpectedTracerError``,
``float(t)``) is reported with where it was used, and JAX's error gains our account.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import threading
import warnings
import weakref
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from jaxscope._leaks.holders import NotAHolder, holder_of
from jaxscope._leaks.records import Leak
from jaxscope._source import loc_of_traceback, user_frame_of_stack
from jaxscope.compat import leaks as _cl
from jaxscope.compat import source as _csource

if TYPE_CHECKING:
    from jaxscope._leaks.checker import LeakReport


class Session(NotAHolder):
    """Hooks shared by every active ``check_leaks`` block (process-wide)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.reports: list[LeakReport] = []
        self.undo: list[Any] = []
        self.local = threading.local()
        self.provenance = _Provenance()

    # -- install / remove --------------------------------------------------------

    def start(self, report: LeakReport) -> None:
        with self.lock:
            if not self.reports:
                self._install()
            self.reports.append(report)

    def stop(self, report: LeakReport) -> None:
        with self.lock:
            if report in self.reports:
                self.reports.remove(report)
            if not self.reports:
                self._uninstall()

    def _install(self) -> None:
        try:
            self.undo.append(_cl.install_trace_end_hook(self.on_trace_end))
            self.undo.append(_cl.install_escape_hook(self.on_escape))
            self.undo.append(_cl.install_misuse_hook(self.on_misuse))
            self.undo.append(
                _cl.install_body_end_hook(_cl.unchecked_trace_types(), self.on_body_end)
            )
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

    # -- hooks --------------------------------------------------------------------

    @contextlib.contextmanager
    def _guard(self) -> Iterator[bool]:
        busy = getattr(self.local, "busy", False)
        self.local.busy = True
        try:
            yield not busy
        finally:
            self.local.busy = busy

    def on_created(self, tracer: Any) -> None:
        if not getattr(self.local, "busy", False):
            self.provenance.note_created(tracer)

    def on_trace_end(self, trace: Any) -> None:
        with self._guard() as free:
            if free:
                gc.collect()
                self._check(trace, hint="pmap" if _cl.pmap_on_stack() else None)

    def on_body_end(self, trace: Any) -> None:
        with self._guard() as free:
            if not free:
                return
            hint = _cl.api_transformation_on_stack()
            if hint is not None:
                self.provenance.note_hint(trace, hint)
            self._check(trace)

    def on_escape(self, tracer: Any) -> str | None:
        with self._guard() as free:
            if not free:
                return None
            try:
                leak = self._leak(tracer, None)
                if leak is None:  # pragma: no cover - found_in "" is still a leak
                    return None
                leak = dataclasses.replace(leak, used_at=user_frame_of_stack(1))
                for report in list(self.reports):
                    report._add(tracer, leak)
                    leak = report._record(tracer) or leak
                return f"jaxscope: leaked {leak.describe()}"
            except Exception as exc:  # never replace JAX's error with ours
                _warn(exc)
                return None

    def on_misuse(self, tracer: Any) -> str | None:
        """``float(t)`` / ``np.asarray(t)`` / ``bool(t)`` of a tracer: if ``t`` leaked
        (its trace has ended), the same account as ``on_escape``."""
        trace = _cl.trace_of(tracer)
        leaked = not _cl.trace_is_valid(trace) or any(
            r._holds(tracer) for r in self.reports
        )
        if not leaked:
            return None
        return self.on_escape(tracer)

    # -- finding ------------------------------------------------------------------

    def _check(self, trace: Any, *, hint: str | None = None) -> None:
        """Report each tracer of ``trace`` that a named, user-visible place holds."""
        if not self.reports:
            return
        try:
            tracer_cls = _cl.tracer_type()
            refs = gc.get_referrers(trace)
            tracers = [r for r in refs if isinstance(r, tracer_cls)]
            del refs
            for i in range(len(tracers)):
                tracer = tracers[i]
                leak = self._leak(tracer, (tracers,), hint=hint)
                if leak is None:
                    continue
                for report in list(self.reports):
                    report._add(tracer, leak)
        except Exception as exc:  # the user's program must go on
            _warn(exc)

    def _leak(
        self,
        tracer: Any,
        ignore: tuple[Any, ...] | None,
        *,
        hint: str | None = None,
    ) -> Leak | None:
        """The ``Leak`` record of ``tracer``; None if nothing user-visible holds it.

        ``ignore`` None: the tracer is being used (escaped), report it regardless.
        """
        hint = self.provenance.hint_of(_cl.trace_of(tracer), hint)
        return leak_of(tracer, self.provenance.traceback_of(tracer), ignore, hint)


class _Provenance:
    """What JAX records nowhere, kept while checking: the creation traceback of the
    tracers that carry no line, and the transformation on the stack when a JVP or
    linearize body ended (those traces carry no debug info). Keyed by id, checked
    against a weak reference."""

    def __init__(self) -> None:
        self.born: dict[int, tuple[Any, Any]] = {}  # id(tracer) -> (ref, traceback)
        self.hints: dict[
            int, tuple[Any, str]
        ] = {}  # id(trace) -> (ref, transformation)

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

    def hint_of(self, trace: Any, default: str | None) -> str | None:
        entry = self.hints.get(id(trace))
        return entry[1] if entry is not None and entry[0]() is trace else default

    def traceback_of(self, tracer: Any) -> Any:
        """The JAX traceback of ``tracer``'s creation, or None."""
        tb = _cl.creation_traceback(tracer)
        if tb is None:
            entry = self.born.get(id(tracer))
            if entry is not None and entry[0]() is tracer:
                tb = entry[1]
        return tb


def leak_of(
    tracer: Any, tb: Any, ignore: tuple[Any, ...] | None, hint: str | None
) -> Leak | None:
    """The ``Leak`` record of ``tracer`` created at traceback ``tb`` (None: unknown);
    None if nothing user-visible holds it and it is not being used (``ignore`` None).

    ``ignore``: the caller's containers that hold the tracer; ``hint``: the
    transformation seen on the stack when its trace was made.
    """
    created_at = loc_of_traceback(tb) if tb is not None else None
    home_file = _raw_user_file(tb) if tb is not None else ""
    if not home_file:
        home_file = _file_of_src_info(_cl.traced_function(tracer))
    holder = holder_of(tracer, ignore or (), home_file)
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
