"""Recording traces: what a function read and wrote while JAX traced it.

While any purity log is active, a hook around JAX's tracing (``compat.purity``) calls
``_on_enter`` before a user function is traced (``roots`` says which, and which of the
user's module methods it will run): its bytecode (and that of the user functions it
calls by name) says which globals, closure cells and attributes it reads and which
outer objects it writes; their values are fingerprinted. ``_on_exit`` compares the
written objects and the random generators read with their state before (trace-time
side effects, ``effects``), and keeps the fingerprints of the last trace of each
function (``stale``), against which later values are compared.

The watcher never changes what the user's program does: each step of its own work
that fails (a hostile ``__getattr__``, ``__repr__`` or ``__eq__``, or a bug here) is
skipped, and the trace goes on.

What a trace recorded goes to the active logs through ``PuritySink``, which
``PurityLog`` implements; this module never imports the log.
"""

from __future__ import annotations

import contextlib
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from jaxscope._format import qualname
from jaxscope._purity import stale
from jaxscope._purity.bytecode import Access, code_facts
from jaxscope._purity.effects import (
    Assignment,
    ImpureCalls,
    RngWatch,
    assignment_finding,
    call_finding,
    mutation_finding,
    rng_of,
    rng_state,
)
from jaxscope._purity.records import PurityFinding
from jaxscope._purity.roots import TraceRoots, trace_roots
from jaxscope._purity.values import (
    MISSING,
    Comparison,
    Fingerprint,
    fingerprint,
    ignorable,
    in_scope,
    lookup,
    module_arrays,
    mutable_state,
    resolve_attrs,
    user_function,
)
from jaxscope._source import loc_of_code
from jaxscope.compat import purity as _cpurity
from jaxscope.compat.sharding import is_tracer

_MAX_CALL_DEPTH = 3


class PuritySink(Protocol):
    """Where a finished trace is delivered (``PurityLog``); called on the thread
    that traced."""

    def add_trace(self, fn: Any, effects: list[PurityFinding]) -> None:
        """The user's function ``fn`` was traced, with these trace-time side
        effects (its captured values are kept by ``stale``)."""
        ...


@dataclass(slots=True)
class _Pending:
    """A trace in progress on this thread."""

    fn: Any  # the user's function being traced (a types.FunctionType)
    name: str
    captures: list[stale.Capture] = field(default_factory=list)
    # (capture, state before) of the outer objects the code writes into
    mutables: list[tuple[stale.Capture, Any]] = field(default_factory=list)
    assigned: list[Assignment] = field(default_factory=list)
    rngs: list[RngWatch] = field(default_factory=list)
    effects: list[PurityFinding] = field(default_factory=list)  # calls, as they run
    drawn: set[int] = field(default_factory=set)  # generators a wrapped call drew from


# Weak references: a started log the program drops (no reference left) stops when
# Python collects it, as ``stop()`` would (the notebook pattern ``log =
# js.watch_purity(); log.start()`` run again must not leave the earlier log watching).
_active_logs: list[weakref.ReferenceType[PuritySink]] = []
_state = threading.local()
_remove_listener: Callable[[], None] | None = None
# re-entrant: a dropped log's collection may run the callback on a thread that holds it
_registry_lock = threading.RLock()


def attach(log: PuritySink) -> None:
    """Give ``log`` the findings of every trace from now on (hooks JAX if first);
    ``log`` is held weakly (collected: detached)."""
    global _remove_listener
    ref = weakref.ref(log, _collected)
    with _registry_lock:
        _active_logs.append(ref)
        if _remove_listener is None:
            _remove_listener = _cpurity.add_trace_listener(_on_enter, _on_exit)


def detach(log: PuritySink) -> None:
    """Stop giving ``log`` findings (unhooks JAX if it was the last)."""
    with _registry_lock:
        _active_logs[:] = [r for r in _active_logs if r() not in (log, None)]
        _unhook_if_idle()


def _collected(ref: weakref.ReferenceType[PuritySink]) -> None:
    """A started log was collected without ``stop()``: stop it."""
    with _registry_lock:
        if ref in _active_logs:
            _active_logs.remove(ref)
        _unhook_if_idle()


def _unhook_if_idle() -> None:
    global _remove_listener
    if not _active_logs and _remove_listener is not None:
        remove, _remove_listener = _remove_listener, None
        remove()


def active_logs() -> list[PuritySink]:
    """The logs watching now (strong references, for one use)."""
    with _registry_lock:
        return [log for r in _active_logs if (log := r()) is not None]


# ----------------------------------------------------------------------------------
# The code a trace runs


@dataclass(frozen=True, slots=True)
class _Code:
    """One code object to read, and the function whose names it resolves through."""

    owner: Any  # types.FunctionType
    code: types.CodeType
    # free variables that are locals of an enclosing function, not captured values
    local_cells: frozenset[str]

    def is_local(self, access: Access) -> bool:
        return access.scope == "closure" and access.name in self.local_cells


def _walk_functions(roots: TraceRoots) -> Iterator[_Code]:
    """The traced function's code and nested code, the user module methods it is
    given, then user functions they call by global or closure name."""
    seen: set[types.CodeType] = set()
    stack = [(m, m.__code__, frozenset[str](), 0) for m in roots.methods]
    stack.append((roots.fn, roots.fn.__code__, frozenset[str](), 0))
    while stack:
        owner, code, local_cells, depth = stack.pop()
        if code in seen:
            continue
        seen.add(code)
        unit = _Code(owner, code, local_cells)
        yield unit
        facts = code_facts(code)
        inner = local_cells | frozenset(code.co_cellvars)
        stack.extend((owner, nested, inner, depth) for nested in facts.nested)
        if depth >= _MAX_CALL_DEPTH:
            continue
        for access in facts.reads:
            if access.attrs or access.mutator or unit.is_local(access):
                continue
            callee = _user_callee(lookup(owner, code, access))
            if callee is not None and callee.__code__ not in seen:
                stack.append((callee, callee.__code__, frozenset(), depth + 1))


def _user_callee(value: Any) -> types.FunctionType | None:
    if value is MISSING or not callable(value):
        return None
    callee = user_function(value)
    if callee is None or not in_scope(callee.__code__.co_filename):
        return None
    return callee


def _reads_of(
    unit: _Code, comparison: Comparison
) -> Iterator[tuple[stale.Capture, Any]]:
    """``(capture, value)`` of each outer value the code reads (or writes into)."""
    owner, code = unit.owner, unit.code
    facts = code_facts(code)
    written = {(w.scope, w.name) for w in facts.writes}
    for access in facts.reads:
        if unit.is_local(access) or (access.scope, access.name) in written:
            continue  # a local, or reported as a trace-time assignment instead
        try:
            base = lookup(owner, code, access)
            if base is MISSING or (
                isinstance(base, types.ModuleType) and not access.attrs
            ):
                continue
            value = resolve_attrs(base, access.attrs)
            if is_tracer(value):
                continue  # a value of the trace around this one, not a constant
            skip = ignorable(value) and module_arrays(value) is None
            if skip and access.mutator is None:
                continue
            capture = stale.Capture(
                label=".".join((access.name, *access.attrs)),
                fn_ref=weakref.ref(owner),
                code=code,
                access=access,
                fingerprint=Fingerprint("object")
                if skip
                else fingerprint(value, comparison),
                source=loc_of_code(code, access.line),
                root=stale.root_key(owner, access),
            )
        except Exception:  # a value the watcher cannot read is not watched
            continue
        yield capture, value


def _generators_read(unit: _Code) -> Iterator[RngWatch]:
    """The random generators whose methods the code reads (``rng.normal``,
    ``np.random.normal``, ``gauss``), with their state now."""
    for access in code_facts(unit.code).reads:
        if access.mutator is not None or unit.is_local(access):
            continue
        try:
            base = lookup(unit.owner, unit.code, access)
            value = resolve_attrs(base, access.attrs, into_modules=True)
            rng = rng_of(value) if value is not MISSING else None
            if rng is not None:
                yield RngWatch(
                    label=".".join((access.name, *access.attrs)),
                    source=loc_of_code(unit.code, access.line),
                    rng=rng,
                    before=rng_state(rng),
                )
        except Exception:
            continue


# ----------------------------------------------------------------------------------
# Before and after a trace


def _pending_of(roots: TraceRoots) -> _Pending:
    comparison = Comparison()
    pending = _Pending(roots.fn, qualname(roots.fn))
    for unit in _walk_functions(roots):
        for capture, value in _reads_of(unit, comparison):
            if capture.access.mutator is not None:
                pending.mutables.append((capture, mutable_state(value)))
            else:
                pending.captures.append(capture)
        pending.rngs.extend(_generators_read(unit))
        for access in code_facts(unit.code).writes:
            if unit.is_local(access):
                continue
            try:
                before = lookup(unit.owner, unit.code, access)
                remembered = fingerprint(before) if before is not MISSING else None
            except Exception:
                continue
            pending.assigned.append(
                Assignment(unit.owner, unit.code, access, remembered)
            )
    return pending


def _on_enter(fun: Any) -> _Pending | None:
    try:
        roots = trace_roots(fun)
        pending = _pending_of(roots) if roots is not None else None
    except Exception:  # the watcher's own failure: this trace is not recorded
        return None
    if pending is None:
        return None
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(pending)
    if len(stack) == 1:
        with contextlib.suppress(Exception):  # else print and clocks go unwatched
            ImpureCalls.install(_report_call)
    return pending


def _on_exit(pending: _Pending | None, completed: bool) -> None:
    if pending is None:
        return
    stack = _state.stack
    if stack and stack[-1] is pending:
        stack.pop()
    if not stack:
        with contextlib.suppress(Exception):
            ImpureCalls.uninstall()
    try:
        effects = _effects_of(pending)
        if completed:
            record = stale.TraceRecord(pending.fn, pending.name, pending.captures)
            stale.remember(pending.fn, record)
    except Exception:  # the watcher's own failure: this trace is not recorded
        return
    for log in active_logs():
        log.add_trace(pending.fn, effects)


def _effects_of(pending: _Pending) -> list[PurityFinding]:
    """Trace-time side effects: calls seen as they ran, then writes into outer
    objects, assignments of globals/nonlocals, and draws from generators read."""
    name = pending.name
    effects = list(pending.effects)
    for capture, before in pending.mutables:
        try:
            if before is not None and mutable_state(capture.value()) != before:
                mutator = capture.access.mutator or ""
                effects.append(
                    mutation_finding(name, capture.label, mutator, capture.source)
                )
        except Exception:
            continue
    for assignment in pending.assigned:
        try:
            finding = assignment_finding(name, assignment)
        except Exception:
            continue
        if finding is not None:
            effects.append(finding)
    reported = {f.source.key for f in pending.effects if f.source is not None}
    for watch in pending.rngs:
        if id(watch.rng) in pending.drawn or watch.source.key in reported:
            continue
        if watch.drew():
            reported.add(watch.source.key)
            effects.append(call_finding(name, watch.label, "random", watch.source))
    return effects


def _report_call(label: str, kind: str, frame: types.FrameType, rng: Any) -> None:
    """A wrapped print/clock/random function called by user code while tracing."""
    stack = getattr(_state, "stack", None)
    if not stack:
        return
    top = stack[-1]
    source = loc_of_code(frame.f_code, frame.f_lineno)
    top.effects.append(call_finding(top.name, label, kind, source))
    if rng is not None:
        for pending in stack:  # an enclosing trace saw this draw reported already
            pending.drawn.add(id(rng))
