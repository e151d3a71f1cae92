"""The process-wide state of recompile watching: active logs, the miss hooks and, per
thread, a stack of the misses in progress.

The hooks (``jaxscope.compat.recompiles.MissHooks``) are installed while any log
watches. A miss pushes a ``_Frame`` on its thread's stack; trace/lower/compile events
and durations are counted on the top frame; the end of the miss pops it and, for a
top-level user function that traced or compiled, classifies it against the shared
history and hands the event to every log. A bug here never breaks the user's call: it
becomes a ``RuntimeWarning``.

A miss of ``eqx.filter_jit`` / ``nnx.jit`` is seen as the user's call (their function,
arguments and line), not the library's inner ``jax.jit``; a miss that jaxscope's own
code causes (a jaxscope feature calling a jitted function) is not the user's.

Logs receive what the hooks see through ``RecompileSink``, which ``RecompileLog``
implements; this module never imports the log.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import warnings
import weakref
from typing import Any, Protocol

from jaxscope._format import qualname
from jaxscope._recompiles.history import CompileHistory
from jaxscope._recompiles.records import (
    Cause,
    FunctionKey,
    RecompileEvent,
    function_key,
)
from jaxscope._recompiles.signature import (
    Signature,
    eager_signature,
    signature_from_key,
    signature_of,
    with_input_types,
)
from jaxscope._records import SourceLoc
from jaxscope._source import display_filename, loc_of_code, loc_of_function
from jaxscope.compat import libraries as _clib
from jaxscope.compat import recompiles as _crec
from jaxscope.compat import source as _csource

_SOURCE = re.compile(r"^(?P<fn>.*?) at (?P<file>.*):(?P<line>\d+)$")
_JAXSCOPE_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "")


class RecompileSink(Protocol):
    """Where the hooks deliver the misses they see (``RecompileLog``); called with
    the state's lock held, on the thread that missed."""

    def add(self, event: RecompileEvent) -> None:
        """A miss that traced or compiled a user function."""
        ...

    def count_miss(self, key: FunctionKey) -> None:
        """A miss of the function ``key`` that neither traced nor compiled (JAX's
        Python caches served it)."""
        ...

    def count_internal(self, compiles: int) -> None:
        """``compiles`` compiles of JAX's own functions (eager op dispatch)."""
        ...


class _Frame:
    """One cache miss in progress on this thread."""

    __slots__ = (
        "by_jaxscope",
        "call_site",
        "compiles",
        "eager_api",
        "eager_key",
        "earlier",
        "fun_id",
        "fun_name",
        "fun_ref",
        "generation",
        "internal",
        "jaxpr_ref",
        "lowered_before",
        "lowers",
        "monitored",
        "nested",
        "owner_ref",
        "sig",
        "start",
        "traced_before",
        "traced_only",
        "traces",
        "user_ref",
    )

    def __init__(self, fun_id: int, generation: int, nested: bool) -> None:
        self.fun_id = fun_id
        self.generation = generation
        self.nested = nested
        self.start = time.perf_counter()
        self.internal = False
        self.by_jaxscope = False  # called by jaxscope's own code, not the user's
        self.fun_name = ""
        self.fun_ref: Any = None  # weakref to the jitted function
        self.user_ref: Any = None  # weakref to the user's function (pmap: inside it)
        self.owner_ref: Any = None  # weakref to what the history is kept for
        self.sig: Signature | None = None
        self.call_site: SourceLoc | None = None
        self.eager_key: tuple[str, str, int] | None = None
        self.eager_api = ""  # "lax.while_loop": an eager primitive's own compile
        self.earlier: list[Signature] | None = None  # from JAX's trace cache
        self.traced_before: bool | None = False  # None: JAX's cache unreadable now
        self.traced_only = False  # traced before the watcher, never compiled
        self.lowered_before: list[tuple[str, ...]] | None = None
        self.traces = 0
        self.lowers = 0
        self.compiles = 0
        self.monitored = 0.0
        self.jaxpr_ref: Any = None  # weakref to the jaxpr this miss compiles


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        # weakly held: a log the user dropped without stop() stops when collected
        self.logs: list[weakref.ref[RecompileSink]] = []
        self.local = threading.local()
        self.generation = 0
        self.history = CompileHistory()
        # the jaxpr each function compiled last, weakly (JAX's caches keep it),
        # for RecompileEvent.diff(): names and weak references only
        self.last_programs: dict[FunctionKey, Any] = {}
        self.hooks = _crec.MissHooks(
            _on_start,
            _on_end,
            _on_test_event,
            _on_duration,
            _on_eager_start,
            _on_run,
        )

    def stack(self) -> list[_Frame]:
        """This thread's misses in progress, without those of earlier installs."""
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        while stack and stack[-1].generation != self.generation:
            stack.pop()
        return stack

    def live_logs(self) -> list[RecompileSink]:
        """The logs watching now (those still referenced by someone)."""
        with self.lock:
            return [log for ref in self.logs if (log := ref()) is not None]

    def refresh_hooks(self) -> None:
        if self.logs:
            if not self.hooks.installed:
                self.generation += 1
                self.hooks.install()
        elif self.hooks.installed:
            self.hooks.uninstall()

    def attach(self, log: RecompileSink) -> None:
        with self.lock:
            self.logs.append(weakref.ref(log, self._collected))
            self.refresh_hooks()

    def detach(self, log: RecompileSink) -> None:
        with self.lock:
            self.logs = [ref for ref in self.logs if ref() not in (log, None)]
            self.refresh_hooks()

    def _collected(self, ref: weakref.ref[RecompileSink]) -> None:
        """A watching log nobody references any more: it stops (hooks removed if it
        was the last). Runs from the garbage collector; never raises."""
        try:
            with self.lock:
                self.logs = [r for r in self.logs if r is not ref]
                self.refresh_hooks()
        except Exception as exc:  # never break the code the collector interrupted
            _internal_error("stopping a dropped log", exc)


def _internal_error(where: str, exc: Exception) -> None:
    warnings.warn(
        f"jaxscope: the recompile watcher failed at {where} "
        f"({type(exc).__name__}: {exc}); this miss is not recorded",
        RuntimeWarning,
        stacklevel=3,
    )


def _weak(obj: Any) -> Any:
    try:
        return weakref.ref(obj)
    except TypeError:
        return None


def _deref(ref: Any) -> Any:
    return ref() if ref is not None else None


# ----------------------------------------------------------------------------------
# Where a call comes from


def _call_origin(frame: Any) -> tuple[SourceLoc | None, bool]:
    """``(call site, by jaxscope)`` of the jitted call whose miss runs in ``frame``:
    the innermost caller in the user's own code (not JAX's, not an installed
    library's where the stack has such a frame), and whether jaxscope's own code
    made the call."""
    fallback = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(_JAXSCOPE_DIR):
            if not _csource.is_jax_file(filename) and _is_caller(frame):
                return None, True
        elif _csource.is_user_file(filename):
            if not _csource.is_library_file(filename):
                return loc_of_code(frame.f_code, frame.f_lineno), False
            if fallback is None:
                fallback = loc_of_code(frame.f_code, frame.f_lineno)
        frame = frame.f_back
    return fallback, False


_OWN_HOOKS = frozenset(
    {"entry", "run", "impl", "_on_start", "_start", "_on_eager_start"}
)


def _is_caller(frame: Any) -> bool:
    """Whether a jaxscope frame called a jitted function (not one of the watcher's
    own hooks, which sit between JAX and this code)."""
    return frame.f_code.co_name not in _OWN_HOOKS


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
    stack.append(frame)
    frame.internal = _crec.is_jax_internal(fun)
    if frame.nested:
        return
    # jax.pmap: a jit of a JAX-made wrapper around the user's function
    user = _crec.pmap_user_function(fun) if frame.internal else None
    transform = "pmap" if user is not None else ""
    if frame.internal and user is None:
        # jax.jit(jax.grad(loss)): a jit of JAX's grad_f around the user's function
        made = _crec.transformed_user_function(fun)
        if made is not None:
            transform, user = made
        elif (eager := _crec.eager_primitive(fun)) is not None:
            _start_eager_primitive(frame, eager, args)
            return
    library = None if frame.internal else _clib.library_jit_call(fun)
    if transform == "pmap":
        # named as the user passed them (params['w'], xs), not pmap's flat_args[i]
        library = _clib.pmap_call(user, fun, args)
    if library is not None and library.user_fn is not None:
        user = library.user_fn
    if user is not None:
        frame.internal = False
    if frame.internal:
        return
    frame.call_site, frame.by_jaxscope = _call_origin(sys._getframe(2))
    if frame.by_jaxscope:
        frame.internal = True
        return
    frame.fun_ref = _weak(fun)
    frame.user_ref = _weak(user) if user is not None else frame.fun_ref
    owner = user if library is not None else fun
    frame.owner_ref = _weak(owner)
    name = qualname(user if user is not None else fun)
    frame.fun_name = f"{transform}({name})" if transform else name
    try:
        frame.sig = signature_of(jit_info, args, kwargs, user, library)
    except Exception as exc:  # never break the user's call
        warnings.warn(
            f"jaxscope: could not read the arguments of "
            f"{frame.fun_name} ({type(exc).__name__}: {exc})",
            RuntimeWarning,
            stacklevel=2,
        )
    if not STATE.history.knows(owner):
        _read_jax_caches(frame, fun, jit_info, user, library)


def _start_eager_primitive(
    frame: _Frame, eager: _crec.EagerPrimitive, args: tuple[Any, ...]
) -> None:
    """A ``lax.while_loop``/``cond``/``scan`` run outside jit on functions that are
    not JAX's (often a library's, defined anew on each call): JAX compiles it on its
    own, an event of the user's line that called into it."""
    frame.call_site, frame.by_jaxscope = _call_origin(sys._getframe(3))
    if frame.by_jaxscope:
        return
    frame.internal = False
    name, file, line = eager.bodies[0]
    names = ", ".join(dict.fromkeys(body[0] for body in eager.bodies))
    frame.fun_name = f"{eager.api}({names})"
    frame.eager_key = (name, file, line)
    frame.eager_api = eager.api
    frame.sig = eager_signature(args)


def _read_jax_caches(
    frame: _Frame,
    fun: Any,
    jit_info: Any,
    user: Any,
    library: _clib.LibraryJitCall | None,
) -> None:
    """What JAX's caches hold of a function no watcher saw compile: its earlier
    traces, as signatures where they can be read at the user's level."""
    if library is not None and library.api in _PMAPS:
        # one jitted function per pmap structure: its traces, typed in this call's names
        keys = _crec.earlier_trace_keys(fun) or []
        lowered = _crec.lowered_input_types(getattr(jit_info, "fun_sourceinfo", None))
        if keys and lowered is not None:
            keys = [k for k in keys if _was_lowered(k.avals, lowered)]
            frame.traced_only = not keys
        if frame.sig is not None:
            earlier = [with_input_types(frame.sig, k.avals) for k in keys]
            frame.earlier = [e for e in earlier if e is not None] or None
        return
    if library is not None:
        # Equinox's inner function is shared by every filter_jit of that name; the
        # user's function is among its static arguments
        holding = library.user_fn if library.api == "eqx.filter_jit" else None
        frame.traced_before = _crec.traced_before(fun, holding)
        if frame.traced_before and frame.sig is not None:
            # what was compiled, from the inputs of its lowerings, in the user's names
            lowered = _crec.lowered_input_types(
                getattr(jit_info, "fun_sourceinfo", None)
            )
            if lowered is not None:
                earlier = [with_input_types(frame.sig, t) for t in lowered]
                frame.earlier = [e for e in earlier if e is not None] or None
                frame.traced_only = not lowered
        return
    keys = _crec.earlier_trace_keys(fun)
    if keys:
        # only what was lowered compiled: js.jaxpr or .trace alone compiles nothing
        lowered = _crec.lowered_input_types(getattr(jit_info, "fun_sourceinfo", None))
        if lowered is not None:
            keys = [k for k in keys if _was_lowered(k.avals, lowered)]
            frame.traced_only = not keys
    if keys:
        pmap_user = user if user is not fun else None
        frame.earlier = [signature_from_key(k, pmap_user, jit_info) for k in keys]
    else:
        frame.traced_before = _crec.traced_before(fun)


def _was_lowered(
    avals: tuple[tuple[str, str, bool], ...],
    lowered: list[tuple[tuple[str, str, bool], ...]],
) -> bool:
    """Whether a trace with inputs ``avals`` is among the lowered ones (whose
    inputs start with the trace's hoisted constants)."""
    n = len(avals)
    return any(
        len(inputs) >= n and inputs[len(inputs) - n :] == avals for inputs in lowered
    )


_PMAPS = ("jax.pmap", "eqx.filter_pmap")


def _on_run(fun: Any, jaxpr: Any) -> None:
    """About to lower and compile the jaxpr of a miss: a miss that did not trace, of
    a function no watcher saw compile, reads how JAX lowered it before."""
    try:
        stack = getattr(STATE.local, "stack", None)
        if not stack or stack[-1].fun_id != id(fun):
            return
        frame = stack[-1]
        if frame.jaxpr_ref is None and jaxpr is not None:
            frame.jaxpr_ref = _weak(jaxpr)
        if frame.internal or frame.nested or frame.traces:
            return
        if not STATE.history.knows(_deref(frame.owner_ref)):
            frame.lowered_before = _crec.lowerings(jaxpr)
    except Exception as exc:  # never break the user's call
        _internal_error("run", exc)


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
            frame.call_site, frame.by_jaxscope = _call_origin(sys._getframe(1))
            frame.internal = frame.by_jaxscope
            frame.eager_key = (name, file, line)
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
                for log in STATE.live_logs():
                    log.count_internal(frame.compiles)
        return
    if not frame.nested:
        _record(frame)


def _record(frame: _Frame) -> None:
    """Classify a finished top-level miss and give its event to every active log."""
    with STATE.lock:
        logs = STATE.live_logs()
        if not logs:
            return
        if not (frame.traces or frame.compiles):
            user = _deref(frame.user_ref)
            key = function_key(frame.fun_name, loc_of_function(user) if user else None)
            for log in logs:
                log.count_miss(key)
            return
        defined_at, causes = _classify(frame)
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
        if frame.jaxpr_ref is not None:
            before = STATE.last_programs.get(event.key)
            object.__setattr__(event, "programs", (before, frame.jaxpr_ref))
            STATE.last_programs[event.key] = frame.jaxpr_ref
        for log in logs:
            log.add(event)


def _classify(frame: _Frame) -> tuple[SourceLoc | None, list[Cause]]:
    """``(defined_at, causes)`` of a finished miss."""
    user = _deref(frame.user_ref)
    defined_at = loc_of_function(user) if user is not None else None
    if frame.eager_key is None:
        owner = _deref(frame.owner_ref)
        return defined_at, STATE.history.classify(owner, user, frame, defined_at)
    name, file, line = frame.eager_key
    if file:
        defined_at = SourceLoc(file=display_filename(file), line=line, function=name)
    return defined_at, STATE.history.classify_eager(frame)


STATE = _State()


def hooks_installed() -> bool:
    """Whether the miss hooks are installed right now (only while watching)."""
    return STATE.hooks.installed
