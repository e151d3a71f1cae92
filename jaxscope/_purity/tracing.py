"""Recording traces: what a function read and wrote while JAX traced it.

While any purity log is active, a hook around JAX's tracing (``compat.purity``) calls
``_on_enter`` before a user function is traced: its bytecode (and that of the user
functions it calls by name) says which globals, closure cells and attributes it reads
and which outer objects it writes; their values are fingerprinted. ``_on_exit``
compares the written objects with their state before (trace-time side effects), and
keeps the fingerprints of the last trace of each function, against which ``stale_of``
compares the values now. Calls to ``print`` and clock/random readers made directly by
user code during a trace are side effects too.
"""

from __future__ import annotations

import builtins
import functools
import random
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from jaxscope._format import qualname
from jaxscope._purity.bytecode import Access, code_facts
from jaxscope._purity.records import SIDE_EFFECT, STALE, PurityFinding
from jaxscope._purity.values import (
    MISSING,
    Fingerprint,
    describe_value,
    fingerprint,
    ignorable,
    lookup,
    mutable_state,
    resolve_attrs,
    same,
    user_function,
)
from jaxscope._records import SourceLoc
from jaxscope._source import is_user_file, loc_of_code
from jaxscope.compat import purity as _cpurity

if TYPE_CHECKING:
    from jaxscope._purity.watcher import PurityLog

_MAX_CALL_DEPTH = 3


@dataclass(slots=True)
class _Capture:
    """One value a function read while being traced."""

    label: str  # "shift", "cfg.scale", "self.state"
    fn_ref: Any  # weakref to the function whose code reads it
    code: types.CodeType
    access: Access
    fingerprint: Fingerprint
    source: SourceLoc


@dataclass(slots=True)
class _Assignment:
    """A global or nonlocal the traced code assigns, with its value before the trace."""

    owner: Any  # the function whose code assigns it
    code: types.CodeType
    access: Access
    before: Fingerprint | None


@dataclass(slots=True)
class _TraceRecord:
    function: str
    captures: list[_Capture] = field(default_factory=list)


@dataclass(slots=True)
class _Pending:
    """A trace in progress on this thread."""

    fn: Any  # the user's function being traced
    captures: list[_Capture]
    mutables: list[tuple[_Capture, Any]]  # (capture, state before) of objects it writes
    assigned: list[_Assignment]
    effects: list[PurityFinding]


# The captures of each function's most recent trace (while any watcher was active).
_last_trace: weakref.WeakKeyDictionary[types.FunctionType, _TraceRecord] = (
    weakref.WeakKeyDictionary()
)
_active_logs: list[PurityLog] = []
_state = threading.local()
_remove_listener: Callable[[], None] | None = None
_registry_lock = threading.Lock()


def attach(log: PurityLog) -> None:
    """Give ``log`` the findings of every trace from now on (hooks JAX if first)."""
    global _remove_listener
    with _registry_lock:
        _active_logs.append(log)
        if _remove_listener is None:
            _remove_listener = _cpurity.add_trace_listener(_on_enter, _on_exit)


def detach(log: PurityLog) -> None:
    """Stop giving ``log`` findings (unhooks JAX if it was the last)."""
    global _remove_listener
    with _registry_lock:
        if log in _active_logs:
            _active_logs.remove(log)
        if not _active_logs and _remove_listener is not None:
            _remove_listener()
            _remove_listener = None


def traced(fn: types.FunctionType) -> bool:
    """Whether a trace of ``fn`` was recorded."""
    return fn in _last_trace


# ----------------------------------------------------------------------------------
# Before and after a trace


def _walk_functions(
    fn: types.FunctionType,
) -> Iterator[tuple[types.FunctionType, types.CodeType]]:
    """``fn``'s code and nested code, then user functions it calls by global name."""
    seen: set[types.CodeType] = set()
    stack: list[tuple[types.FunctionType, types.CodeType, int]] = [(fn, fn.__code__, 0)]
    while stack:
        owner, code, depth = stack.pop()
        if code in seen:
            continue
        seen.add(code)
        yield owner, code
        facts = code_facts(code)
        stack.extend((owner, nested, depth) for nested in facts.nested)
        if depth >= _MAX_CALL_DEPTH:
            continue
        for access in facts.reads:
            if access.attrs or access.mutator:
                continue
            value = lookup(owner, code, access)
            callee = user_function(value) if callable(value) else None
            if (
                callee is not None
                and is_user_file(callee.__code__.co_filename)
                and callee.__code__ not in seen
            ):
                stack.append((callee, callee.__code__, depth + 1))


def _reads_of(
    owner: types.FunctionType, code: types.CodeType
) -> Iterator[tuple[_Capture, Any]]:
    """``(capture, value)`` of each outer value ``code`` reads (or writes into)."""
    facts = code_facts(code)
    written = {(w.scope, w.name) for w in facts.writes}
    for access in facts.reads:
        if (access.scope, access.name) in written:
            continue  # reported as a trace-time assignment instead
        base = lookup(owner, code, access)
        if base is MISSING or (isinstance(base, types.ModuleType) and not access.attrs):
            continue
        value = resolve_attrs(base, access.attrs)
        if ignorable(value) and access.mutator is None:
            continue
        capture = _Capture(
            label=".".join((access.name, *access.attrs)),
            fn_ref=weakref.ref(owner),
            code=code,
            access=access,
            fingerprint=fingerprint(value)
            if not ignorable(value)
            else Fingerprint("object"),
            source=loc_of_code(code, access.line),
        )
        yield capture, value


def _on_enter(fun: Any) -> _Pending | None:
    fn = user_function(fun)
    if fn is None or not is_user_file(fn.__code__.co_filename):
        return None
    pending = _Pending(fn, [], [], [], [])
    for owner, code in _walk_functions(fn):
        for capture, value in _reads_of(owner, code):
            if capture.access.mutator is not None:
                pending.mutables.append((capture, mutable_state(value)))
            elif not ignorable(value):
                pending.captures.append(capture)
        for access in code_facts(code).writes:
            before = lookup(owner, code, access)
            pending.assigned.append(
                _Assignment(
                    owner,
                    code,
                    access,
                    fingerprint(before) if before is not MISSING else None,
                )
            )
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(pending)
    if len(stack) == 1:
        _ImpureCalls.install()
    return pending


def _on_exit(pending: _Pending | None, completed: bool) -> None:
    if pending is None:
        return
    stack = _state.stack
    if stack and stack[-1] is pending:
        stack.pop()
    if not stack:
        _ImpureCalls.uninstall()
    fn = pending.fn
    name = qualname(fn)
    effects = pending.effects
    for capture, before in pending.mutables:
        owner = capture.fn_ref()
        if owner is None:
            continue
        after = resolve_attrs(
            lookup(owner, capture.code, capture.access), capture.access.attrs
        )
        if before is not None and mutable_state(after) != before:
            effects.append(_mutation_finding(name, capture))
    for assignment in pending.assigned:
        finding = _assignment_finding(name, assignment)
        if finding is not None:
            effects.append(finding)
    if completed:
        _last_trace[fn] = _TraceRecord(name, pending.captures)
    with _registry_lock:
        logs = list(_active_logs)
    for log in logs:
        log._record_trace(fn, effects)


def _mutation_finding(function: str, capture: _Capture) -> PurityFinding:
    mutator = capture.access.mutator
    what = {
        "setitem": "item assignment on",
        "setattr": "attribute assignment on",
    }.get(mutator or "", f".{mutator}() on")
    return PurityFinding(
        kind=SIDE_EFFECT,
        function=function,
        name=f"{capture.label}.{mutator}"
        if mutator not in ("setitem", "setattr")
        else capture.label,
        source=capture.source,
        captured="",
        current="",
        hint=(
            f"{what} outer object `{capture.label}` runs only while {function} is traced, "
            "not on later calls: return the value instead, or use "
            "jax.debug.callback to run Python on every call"
        ),
    )


def _assignment_finding(function: str, assignment: _Assignment) -> PurityFinding | None:
    """The finding of a global/nonlocal assignment, None if the value is unchanged."""
    access, before = assignment.access, assignment.before
    after = lookup(assignment.owner, assignment.code, access)
    if before is not None and after is not MISSING and same(before, after):
        return None
    scope = "global" if access.scope == "global" else "nonlocal"
    return PurityFinding(
        kind=SIDE_EFFECT,
        function=function,
        name=access.name,
        source=loc_of_code(assignment.code, access.line),
        captured=before.summary if before is not None else "",
        current=describe_value(after) if after is not MISSING else "",
        hint=(
            f"assigning {scope} `{access.name}` runs only while {function} is traced, "
            "not on later calls: return the new value from the function instead"
        ),
    )


# ----------------------------------------------------------------------------------
# print, clocks and random numbers read during a trace


class _ImpureCalls:
    """Wraps print and clock/random readers while a trace runs on this thread."""

    _targets: ClassVar[list[tuple[Any, str, str]]] = [
        (builtins, "print", "print"),
        (time, "time", "time.time"),
        (time, "perf_counter", "time.perf_counter"),
        (time, "monotonic", "time.monotonic"),
        (random, "random", "random.random"),
        (random, "uniform", "random.uniform"),
        (random, "randint", "random.randint"),
        (random, "gauss", "random.gauss"),
        (random, "choice", "random.choice"),
        (np.random, "rand", "np.random.rand"),
        (np.random, "randn", "np.random.randn"),
        (np.random, "random", "np.random.random"),
        (np.random, "normal", "np.random.normal"),
        (np.random, "uniform", "np.random.uniform"),
        (np.random, "randint", "np.random.randint"),
    ]
    _saved: ClassVar[list[tuple[Any, str, Any]]] = []
    _lock = threading.Lock()
    _users = 0

    @classmethod
    def install(cls) -> None:
        with cls._lock:
            cls._users += 1
            if cls._users > 1:
                return
            for owner, attr, label in cls._targets:
                original = getattr(owner, attr)
                cls._saved.append((owner, attr, original))
                setattr(owner, attr, _wrap_impure(original, label))

    @classmethod
    def uninstall(cls) -> None:
        with cls._lock:
            cls._users -= 1
            if cls._users > 0:
                return
            for owner, attr, original in reversed(cls._saved):
                setattr(owner, attr, original)
            cls._saved.clear()


_IMPURE_HINTS = {
    "print": "print runs only while {fn} is traced, not on later calls: use jax.debug.print(...)",
    "time": "{call}() is read once while {fn} is traced and baked in: pass the time as an argument",
    "random": "{call}() is drawn once while {fn} is traced and baked in: use jax.random with a key argument",
}


def _wrap_impure(original: Any, label: str) -> Any:
    kind = (
        "print"
        if label == "print"
        else "time"
        if label.startswith("time")
        else "random"
    )

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stack = getattr(_state, "stack", None)
        if stack:
            # Only a direct call from user code counts: JAX itself reads clocks too.
            caller = sys._getframe(1)
            if is_user_file(caller.f_code.co_filename):
                fn = qualname(stack[-1].fn)
                stack[-1].effects.append(
                    PurityFinding(
                        kind=SIDE_EFFECT,
                        function=fn,
                        name=label,
                        source=loc_of_code(caller.f_code, caller.f_lineno),
                        captured="",
                        current="",
                        hint=_IMPURE_HINTS[kind].format(fn=fn, call=label),
                    )
                )
        return original(*args, **kwargs)

    return wrapper


# ----------------------------------------------------------------------------------
# Stale values, on demand


def stale_of(fn: types.FunctionType) -> list[PurityFinding]:
    """The captured values of ``fn``'s last recorded trace that differ now."""
    record = _last_trace.get(fn)
    if record is None:
        return []
    findings: list[PurityFinding] = []
    seen: set[tuple[str, int]] = set()
    for capture in record.captures:
        owner = capture.fn_ref()
        key = (capture.label, id(capture.code))
        if owner is None or key in seen:
            continue
        seen.add(key)
        base = lookup(owner, capture.code, capture.access)
        value = resolve_attrs(base, capture.access.attrs)
        if value is MISSING or same(capture.fingerprint, value):
            continue
        captured = capture.fingerprint.summary
        findings.append(
            PurityFinding(
                kind=STALE,
                function=record.function,
                name=capture.label,
                source=capture.source,
                captured=captured,
                current=describe_value(value),
                hint=(
                    f"{record.function} was traced with {capture.label} = "
                    f"{captured} and its compiled code still uses that "
                    f"value: pass {capture.access.name} as an argument (or mark it static), "
                    f"or call .clear_cache() on the jitted function after changing it"
                ),
            )
        )
    return findings
