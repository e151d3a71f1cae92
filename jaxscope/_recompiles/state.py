"""The process-wide state of recompile watching: active logs, the miss hooks and, per
thread, a stack of the misses in progress.

The hooks (``jaxscope.compat.recompiles.MissHooks``) are installed while any log
watches. A miss pushes a ``_Frame`` on its
thread's stack; trace/lower/compile events and durations are counted on the top frame;
the end of the miss pops it and, for a top-level user function that traced or
compiled, classifies it against the shared history and hands the event to every log.
A bug here never breaks the user's call: it becomes a ``RuntimeWarning``.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import warnings
import weakref
from typing import TYPE_CHECKING, Any

from jaxscope._format import qualname
from jaxscope._recompiles.history import CompileHistory
from jaxscope._recompiles.records import Cause, RecompileEvent
from jaxscope._recompiles.signature import Signature, eager_signature, signature_of
from jaxscope._records import SourceLoc
from jaxscope._source import display_filename, loc_of_function, user_frame_of_stack
from jaxscope.compat import recompiles as _crec

if TYPE_CHECKING:
    from jaxscope._recompiles.watcher import RecompileLog

_SOURCE = re.compile(r"^(?P<fn>.*?) at (?P<file>.*):(?P<line>\d+)$")


class _Frame:
    """One cache miss in progress on this thread."""

    __slots__ = (
        "call_site",
        "compiles",
        "eager_key",
        "fun_id",
        "fun_name",
        "fun_ref",
        "generation",
        "internal",
        "lowers",
        "monitored",
        "nested",
        "sig",
        "start",
        "traces",
        "user_ref",
    )

    def __init__(self, fun_id: int, generation: int, nested: bool) -> None:
        self.fun_id = fun_id
        self.generation = generation
        self.nested = nested
        self.start = time.perf_counter()
        self.internal = False
        self.fun_name = ""
        self.fun_ref: Any = None  # weakref to the jitted function
        self.user_ref: Any = None  # weakref to the user's function (pmap: inside it)
        self.sig: Signature | None = None
        self.call_site: SourceLoc | None = None
        self.eager_key: tuple[str, str, int] | None = None
        self.traces = 0
        self.lowers = 0
        self.compiles = 0
        self.monitored = 0.0


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.logs: list[RecompileLog] = []
        self.local = threading.local()
        self.generation = 0
        self.history = CompileHistory()
        self.hooks = _crec.MissHooks(
            _on_start, _on_end, _on_test_event, _on_duration, _on_eager_start
        )

    def stack(self) -> list[_Frame]:
        """This thread's misses in progress, without those of earlier installs."""
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        while stack and stack[-1].generation != self.generation:
            stack.pop()
        return stack

    def refresh_hooks(self) -> None:
        if self.logs:
            if not self.hooks.installed:
                self.generation += 1
                self.hooks.install()
        elif self.hooks.installed:
            self.hooks.uninstall()

    def attach(self, log: RecompileLog) -> None:
        with self.lock:
            self.logs.append(log)
            self.refresh_hooks()

    def detach(self, log: RecompileLog) -> None:
        with self.lock:
            with contextlib.suppress(ValueError):
                self.logs.remove(log)
            self.refresh_hooks()


def _internal_error(where: str, exc: Exception) -> None:
    warnings.warn(
        f"jaxscope: the recompile watcher failed at {where} "
        f"({type(exc).__name__}: {exc}); this miss is not recorded",
        RuntimeWarning,
        stacklevel=3,
    )


# ----------------------------------------------------------------------------------
# Hook callbacks (called by MissHooks on the thread that missed)


def _on_start(
    fun: Any, jit_info: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    try:
        _start(fun, jit_info, args, kwargs)
    except Exception as exc:  # a bug here must never break the user's call
        _internal_error("start", exc)


def _start(
    fun: Any, jit_info: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    stack = STATE.stack()
    frame = _Frame(id(fun), STATE.generation, nested=bool(stack))
    frame.internal = _crec.is_jax_internal(fun)
    # jax.pmap: a jit of a JAX-made wrapper around the user's function
    user = _crec.pmap_user_function(fun) if frame.internal else None
    if user is not None:
        frame.internal = False
    if not frame.internal:
        try:
            frame.fun_ref = weakref.ref(fun)
            frame.user_ref = weakref.ref(user) if user is not None else frame.fun_ref
        except TypeError:
            frame.fun_ref = None
        frame.fun_name = (
            f"pmap({qualname(user)})" if user is not None else qualname(fun)
        )
        if not frame.nested:
            try:
                frame.sig = signature_of(jit_info, args, kwargs, user)
            except Exception as exc:  # never break the user's call
                warnings.warn(
                    f"jaxscope: could not read the arguments of "
                    f"{frame.fun_name} ({type(exc).__name__}: {exc})",
                    RuntimeWarning,
                    stacklevel=2,
                )
            frame.call_site = user_frame_of_stack(3)
    stack.append(frame)


def _on_eager_start(name: str, source: str, args: tuple[Any, ...]) -> Any:
    """A transformed jitted computation run outside jit (``jax.grad(jitted_f)``'s
    backward pass) missed the cache: a frame of its own unless inside another miss."""
    try:
        stack = STATE.stack()
        if stack:
            return None  # part of the miss being recorded
        match = _SOURCE.match(source)
        file, line = (
            (match.group("file"), int(match.group("line"))) if match else ("", 0)
        )
        token = object()
        frame = _Frame(id(token), STATE.generation, nested=False)
        frame.internal = bool(file) and _crec.is_jax_file(file)
        frame.fun_name = f"{name} (transformed, run outside jit)"
        if not frame.internal:
            frame.eager_key = (name, file, line)
            frame.call_site = user_frame_of_stack(3)
            frame.sig = eager_signature(args)
        stack.append(frame)
        return token
    except Exception as exc:  # never break the user's call
        _internal_error("eager start", exc)
        return None


def _on_test_event(what: str) -> None:
    stack = getattr(STATE.local, "stack", None)
    if not stack:
        return
    frame = stack[-1]
    if what == "trace":
        frame.traces += 1
    elif what == "lower":
        frame.lowers += 1
    else:
        frame.compiles += 1


def _on_duration(seconds: float) -> None:
    stack = getattr(STATE.local, "stack", None)
    if stack:
        stack[-1].monitored += seconds


def _on_end(fun: Any, error: BaseException | None) -> None:
    try:
        _end(fun, error)
    except Exception as exc:  # a bug here must never break the user's call
        _internal_error("end", exc)


def _pop(fun: Any) -> _Frame | None:
    """Pop the frame of ``fun`` (and any left above it) off this thread's stack."""
    stack = getattr(STATE.local, "stack", None)
    if not stack:
        return None
    fid = id(fun)
    for i in range(len(stack) - 1, -1, -1):
        if stack[i].fun_id == fid:
            frame = stack[i]
            del stack[i:]
            return frame
    return None


def _end(fun: Any, error: BaseException | None) -> None:
    frame = _pop(fun)
    if frame is None or error is not None:
        return
    if frame.internal:
        if frame.compiles and not frame.nested:
            with STATE.lock:
                for log in STATE.logs:
                    log._add_internal(frame.compiles)
        return
    if not frame.nested:
        _record(frame)


def _record(frame: _Frame) -> None:
    """Classify a finished top-level miss and give its event to every active log."""
    fun = frame.fun_ref() if frame.fun_ref is not None else None
    with STATE.lock:
        logs = list(STATE.logs)
        if not logs:
            return
        if not (frame.traces or frame.compiles):
            for log in logs:
                log._count_miss(frame.fun_name)
            return
        defined_at, causes = _classify(frame, fun)
        event = RecompileEvent(
            function=frame.fun_name,
            defined_at=defined_at,
            call_site=frame.call_site,
            causes=causes,
            seconds=frame.monitored or (time.perf_counter() - frame.start),
            traced=bool(frame.traces),
            compiled=bool(frame.compiles),
            signature=frame.sig.flat() if frame.sig is not None else (),
            thread=threading.current_thread().name,
        )
        for log in logs:
            log._add(event)


def _classify(frame: _Frame, fun: Any) -> tuple[SourceLoc | None, list[Cause]]:
    """``(defined_at, causes)`` of a finished miss."""
    user = frame.user_ref() if frame.user_ref is not None else None
    defined_at = loc_of_function(user) if user is not None else None
    if frame.eager_key is None:
        return defined_at, STATE.history.classify(fun, user, frame, defined_at)
    name, file, line = frame.eager_key
    if file:
        defined_at = SourceLoc(file=display_filename(file), line=line, function=name)
    return defined_at, STATE.history.classify_eager(frame)


STATE = _State()


def hooks_installed() -> bool:
    """Whether the miss hooks are installed right now (only while watching)."""
    return STATE.hooks.installed
