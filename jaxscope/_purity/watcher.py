"""Purity checks: values baked into a trace that have since changed, and side effects
that ran only while JAX traced a function.

Everything is recorded while JAX traces (already slow, and only on a cache miss):
the function's bytecode says which globals, closure cells, defaults and attributes it
reads and which outer objects it writes; their values are fingerprinted before the
trace and compared after it (side effects) or on demand (stale values). A compiled
call's cache-hit path is never touched.
"""

from __future__ import annotations

import builtins
import dis
import functools
import random
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxscope._display import Renderable
from jaxscope._exceptions import InvalidCallError
from jaxscope._records import SourceLoc
from jaxscope._source import is_user_file, loc_of_code
from jaxscope.compat import purity as _cpurity

_MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "popitem",
        "sort",
        "reverse",
        "__setitem__",
        "__delitem__",
    }
)
_MAX_CALL_DEPTH = 3
_MAX_VALUE_ELEMENTS = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class PurityFinding:
    """A value baked in at trace time that changed since, or a trace-time side effect.

    ``kind`` is ``"stale_constant"`` or ``"trace_time_side_effect"``; ``name`` the
    variable or call; ``captured``/``current`` short readable values (``""`` where
    they do not apply).
    """

    kind: str
    function: str
    name: str
    source: SourceLoc | None
    captured: str
    current: str
    hint: str


# ----------------------------------------------------------------------------------
# What a code object reads and writes, from its bytecode.


@dataclass(frozen=True, slots=True)
class _Access:
    scope: str  # "global" | "closure"
    name: str
    attrs: tuple[
        str, ...
    ]  # attribute chain read after the name (cfg.scale -> ("scale",))
    line: int
    mutator: str | None  # method name / "setitem" / "setattr" when it writes the object


@dataclass(frozen=True, slots=True)
class _CodeFacts:
    reads: tuple[_Access, ...]
    writes: tuple[_Access, ...]  # STORE_GLOBAL / STORE_DEREF of the name itself
    nested: tuple[types.CodeType, ...]


@functools.lru_cache(maxsize=4096)
def _code_facts(code: types.CodeType) -> _CodeFacts:
    reads: list[_Access] = []
    writes: list[_Access] = []
    nested = tuple(c for c in code.co_consts if isinstance(c, types.CodeType))
    instructions = list(dis.get_instructions(code))
    line = code.co_firstlineno
    for i, ins in enumerate(instructions):
        if ins.starts_line is not None:
            line = ins.starts_line
        op = ins.opname
        if op in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"):
            scope = "global" if op in ("LOAD_GLOBAL", "LOAD_NAME") else "closure"
            name = str(ins.argval)
            attrs: list[str] = []
            mutator: str | None = None
            j = i + 1
            while j < len(instructions) and instructions[j].opname in (
                "LOAD_ATTR",
                "LOAD_METHOD",
            ):
                attrs.append(str(instructions[j].argval))
                j += 1
            if attrs and attrs[-1] in _MUTATORS:
                mutator = attrs.pop()
            elif j < len(instructions) and instructions[j].opname in ("STORE_ATTR",):
                mutator = "setattr"
            elif _is_subscript_store(instructions, j):
                mutator = "setitem"
            reads.append(_Access(scope, name, tuple(attrs), line, mutator))
        elif op in ("STORE_GLOBAL", "STORE_DEREF"):
            scope = "global" if op == "STORE_GLOBAL" else "closure"
            writes.append(_Access(scope, str(ins.argval), (), line, "assign"))
    return _CodeFacts(tuple(reads), tuple(writes), nested)


def _is_subscript_store(instructions: list[dis.Instruction], j: int) -> bool:
    # `name[key] = value` compiles to LOAD name; <load key>; STORE_SUBSCR.
    for k in range(j, min(j + 4, len(instructions))):
        opname = instructions[k].opname
        if opname == "STORE_SUBSCR":
            return True
        if opname.startswith(("CALL", "STORE_", "RETURN", "POP_JUMP")):
            return False
    return False


# ----------------------------------------------------------------------------------
# Fingerprints: how a value is remembered without keeping a user array alive.

_SIMPLE = (bool, int, float, complex, str, bytes, type(None))


@dataclass(frozen=True, slots=True)
class _Fingerprint:
    kind: str  # "value" | "array" | "object"
    value: Any = None  # a copy, for "value"
    ref: Any = None  # weakref (or None) for "array"/"object"
    ident: int = 0
    summary: str = ""
    digest: Any = None  # (shape, dtype, bytes hash) for small arrays


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (
        hasattr(value, "shape")
        and hasattr(value, "dtype")
        and hasattr(value, "__array__")
    )


def _freeze(value: Any, budget: list[int]) -> Any:
    """A comparable copy of plain data, or raise TypeError for anything else."""
    budget[0] -= 1
    if budget[0] < 0:
        raise TypeError("too large")
    if isinstance(value, _SIMPLE) or isinstance(value, np.generic):
        return value
    if isinstance(value, tuple):
        return ("tuple", tuple(_freeze(v, budget) for v in value))
    if isinstance(value, list):
        return ("list", tuple(_freeze(v, budget) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(_freeze(v, budget) for v in value))
    if isinstance(value, dict):
        return (
            "dict",
            tuple((_freeze(k, budget), _freeze(v, budget)) for k, v in value.items()),
        )
    raise TypeError(type(value).__name__)


def _array_digest(value: Any) -> Any:
    try:
        size = int(np.prod(value.shape))
    except Exception:
        return None
    if size > _MAX_VALUE_ELEMENTS:
        return None
    try:
        host = np.asarray(value)
    except Exception:  # a tracer or a deleted array has no value to compare
        return None
    return (tuple(host.shape), str(host.dtype), hash(host.tobytes()))


def _short(value: Any) -> str:
    if _is_array(value):
        shape = "x".join(str(d) for d in getattr(value, "shape", ()))
        text = f"{type(value).__name__}({getattr(value, 'dtype', '?')}[{shape}])"
        try:
            if int(np.prod(value.shape)) <= 4:
                text = repr(np.asarray(value).tolist())
        except Exception:
            pass
        return text
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fingerprint(value: Any) -> _Fingerprint:
    if _is_array(value):
        return _Fingerprint(
            "array",
            ref=_weak(value),
            ident=id(value),
            summary=_short(value),
            digest=_array_digest(value),
        )
    try:
        return _Fingerprint(
            "value", value=_freeze(value, [10_000]), summary=_short(value)
        )
    except TypeError:
        return _Fingerprint(
            "object", ref=_weak(value), ident=id(value), summary=_short(value)
        )


def _weak(value: Any) -> Any:
    try:
        return weakref.ref(value)
    except TypeError:
        return None


def _same(fp: _Fingerprint, value: Any) -> bool:
    if fp.kind == "value":
        try:
            return fp.value == _freeze(value, [10_000])
        except TypeError:
            return False
    alive = fp.ref() if fp.ref is not None else None
    if fp.ref is not None and alive is value:
        return True
    if fp.ref is None and fp.ident == id(value):
        return True
    if fp.kind == "array" and fp.digest is not None and _is_array(value):
        return _array_digest(value) == fp.digest
    return False


def _mutable_state(value: Any) -> Any:
    """A shallow picture of an object's contents, to see whether tracing changed it."""
    try:
        if isinstance(value, (list, dict, set)):
            return _freeze(value, [10_000])
        state = getattr(value, "__dict__", None)
        if isinstance(state, dict):
            return tuple((k, id(v)) for k, v in state.items())
    except TypeError:
        return (
            "ids",
            tuple(
                id(v)
                for v in (value if isinstance(value, (list, set)) else value.values())
            ),
        )
    return None


# ----------------------------------------------------------------------------------
# Resolving what a function's names refer to, now.


def _user_function(fn: Any) -> types.FunctionType | None:
    seen = 0
    while seen < 20:
        if isinstance(fn, types.FunctionType):
            return fn
        if isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif isinstance(fn, functools.partial):
            fn = fn.func
        elif hasattr(fn, "__wrapped__"):
            fn = fn.__wrapped__
        else:
            return None
        seen += 1
    return None


_MISSING = object()


def _lookup(fn: types.FunctionType, code: types.CodeType, access: _Access) -> Any:
    if access.scope == "global":
        value = fn.__globals__.get(access.name, _MISSING)
        if value is _MISSING:
            value = getattr(builtins, access.name, _MISSING)
        return value
    if code is fn.__code__ and fn.__closure__ and access.name in code.co_freevars:
        cell = fn.__closure__[code.co_freevars.index(access.name)]
        try:
            return cell.cell_contents
        except ValueError:
            return _MISSING
    return _MISSING


def _resolve_attrs(value: Any, attrs: tuple[str, ...]) -> Any:
    for attr in attrs:
        if isinstance(value, types.ModuleType):
            return _MISSING
        try:
            value = getattr(value, attr)
        except Exception:
            return _MISSING
    return value


def _ignorable(value: Any) -> bool:
    """Modules, functions, classes and JAX/NumPy machinery: reading them is not a risk."""
    if value is _MISSING or isinstance(
        value,
        (
            types.ModuleType,
            type,
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodType,
            functools.partial,
        ),
    ):
        return True
    if callable(value) and not _is_array(value):
        return True
    module = getattr(type(value), "__module__", "") or ""
    return module.startswith(
        ("jax.", "jaxlib", "numpy.dtypes", "typing")
    ) and not _is_array(value)


@dataclass(slots=True)
class _Capture:
    """One value a function read while being traced."""

    label: str  # "shift", "cfg.scale", "self.state"
    fn_ref: Any  # weakref to the function whose code reads it
    code: types.CodeType
    access: _Access
    fingerprint: _Fingerprint
    source: SourceLoc


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
        facts = _code_facts(code)
        stack.extend((owner, nested, depth) for nested in facts.nested)
        if depth >= _MAX_CALL_DEPTH:
            continue
        for access in facts.reads:
            if access.attrs or access.mutator:
                continue
            value = _lookup(owner, code, access)
            callee = _user_function(value) if callable(value) else None
            if (
                callee is not None
                and is_user_file(callee.__code__.co_filename)
                and callee.__code__ not in seen
            ):
                stack.append((callee, callee.__code__, depth + 1))


# ----------------------------------------------------------------------------------
# Recording traces.


@dataclass(slots=True)
class _TraceRecord:
    function: str
    fn_ref: Any
    captures: list[_Capture] = field(default_factory=list)


# The captures of each function's most recent trace (while any watcher was active).
_last_trace: weakref.WeakKeyDictionary[types.FunctionType, _TraceRecord] = (
    weakref.WeakKeyDictionary()
)
_active_logs: list[PurityLog] = []
_state = threading.local()
_remove_listener: Callable[[], None] | None = None
_registry_lock = threading.Lock()


def _qualname(fn: types.FunctionType) -> str:
    return getattr(fn, "__qualname__", fn.__name__)


@dataclass(slots=True)
class _Pending:
    fn: types.FunctionType
    captures: list[_Capture]
    mutables: list[tuple[_Capture, Any]]  # (capture, state before) of objects it writes
    assigned: list[tuple[str, types.FunctionType, types.CodeType, _Access, Any]]
    effects: list[PurityFinding]


def _on_enter(fun: Any) -> _Pending | None:
    fn = _user_function(fun)
    if fn is None or not is_user_file(fn.__code__.co_filename):
        return None
    captures: list[_Capture] = []
    mutables: list[tuple[_Capture, Any]] = []
    assigned: list[tuple[str, types.FunctionType, types.CodeType, _Access, Any]] = []
    for owner, code in _walk_functions(fn):
        facts = _code_facts(code)
        written = {(w.scope, w.name) for w in facts.writes}
        for access in facts.reads:
            if (access.scope, access.name) in written:
                continue  # reported as a trace-time assignment instead
            base = _lookup(owner, code, access)
            if base is _MISSING or (
                isinstance(base, types.ModuleType) and not access.attrs
            ):
                continue
            value = _resolve_attrs(base, access.attrs)
            if _ignorable(value) and access.mutator is None:
                continue
            label = ".".join((access.name, *access.attrs))
            capture = _Capture(
                label=label,
                fn_ref=weakref.ref(owner),
                code=code,
                access=access,
                fingerprint=_fingerprint(value)
                if not _ignorable(value)
                else _Fingerprint("object"),
                source=loc_of_code(code, access.line),
            )
            if access.mutator is not None:
                mutables.append((capture, _mutable_state(value)))
            elif not _ignorable(value):
                captures.append(capture)
        for access in facts.writes:
            before = _lookup(owner, code, access)
            assigned.append(
                (
                    access.name,
                    owner,
                    code,
                    access,
                    _fingerprint(before) if before is not _MISSING else None,
                )
            )
    pending = _Pending(fn, captures, mutables, assigned, [])
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
    name = _qualname(fn)
    effects = pending.effects
    for capture, before in pending.mutables:
        owner = capture.fn_ref()
        if owner is None:
            continue
        after = _resolve_attrs(
            _lookup(owner, capture.code, capture.access), capture.access.attrs
        )
        if before is not None and _mutable_state(after) != before:
            effects.append(_mutation_finding(name, capture))
    for var, owner, code, access, before in pending.assigned:
        after = _lookup(owner, code, access)
        if before is None or after is _MISSING or not _same(before, after):
            effects.append(
                PurityFinding(
                    kind="trace_time_side_effect",
                    function=name,
                    name=var,
                    source=loc_of_code(code, access.line),
                    captured=before.summary if before is not None else "",
                    current=_short(after) if after is not _MISSING else "",
                    hint=(
                        f"assigning {'global' if access.scope == 'global' else 'nonlocal'} "
                        f"`{var}` runs only while {name} is traced, not on later calls: "
                        "return the new value from the function instead"
                    ),
                )
            )
    if completed:
        _last_trace[fn] = _TraceRecord(name, weakref.ref(fn), pending.captures)
    with _registry_lock:
        logs = list(_active_logs)
    for log in logs:
        log._record_trace(fn, effects)


def _mutation_finding(function: str, capture: _Capture) -> PurityFinding:
    what = {
        "setitem": "item assignment on",
        "setattr": "attribute assignment on",
    }.get(capture.access.mutator or "", f".{capture.access.mutator}() on")
    return PurityFinding(
        kind="trace_time_side_effect",
        function=function,
        name=f"{capture.label}.{capture.access.mutator}"
        if capture.access.mutator not in ("setitem", "setattr")
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


class _ImpureCalls:
    """Wraps print and clock/random readers while a trace runs on this thread."""

    _targets: list[tuple[Any, str, str]] = [
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
    _saved: list[tuple[Any, str, Any]] = []
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
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        stack = getattr(_state, "stack", None)
        if stack:
            # Only a direct call from user code counts: JAX itself reads clocks too.
            caller = sys._getframe(1)
            loc = (
                loc_of_code(caller.f_code, caller.f_lineno)
                if is_user_file(caller.f_code.co_filename)
                else None
            )
            if loc is not None:
                pending = stack[-1]
                fn = _qualname(pending.fn)
                kind = (
                    "print"
                    if label == "print"
                    else "time"
                    if label.startswith("time")
                    else "random"
                )
                pending.effects.append(
                    PurityFinding(
                        kind="trace_time_side_effect",
                        function=fn,
                        name=label,
                        source=loc,
                        captured="",
                        current="",
                        hint=_IMPURE_HINTS[kind].format(fn=fn, call=label),
                    )
                )
        return original(*args, **kwargs)

    return wrapper


def _acquire_listener() -> None:
    global _remove_listener
    if _remove_listener is None:
        _remove_listener = _cpurity.add_trace_listener(_on_enter, _on_exit)


def _release_listener() -> None:
    global _remove_listener
    if not _active_logs and _remove_listener is not None:
        _remove_listener()
        _remove_listener = None


# ----------------------------------------------------------------------------------
# Stale values, on demand.


def _stale_of(fn: types.FunctionType) -> list[PurityFinding]:
    record = _last_trace.get(fn)
    if record is None:
        return []
    findings: list[PurityFinding] = []
    seen: set[tuple[str, int]] = set()
    for capture in record.captures:
        owner = capture.fn_ref()
        if owner is None:
            continue
        key = (capture.label, id(capture.code))
        if key in seen:
            continue
        seen.add(key)
        base = _lookup(owner, capture.code, capture.access)
        value = _resolve_attrs(base, capture.access.attrs)
        if value is _MISSING or _same(capture.fingerprint, value):
            continue
        findings.append(
            PurityFinding(
                kind="stale_constant",
                function=record.function,
                name=capture.label,
                source=capture.source,
                captured=capture.fingerprint.summary,
                current=_short(value),
                hint=(
                    f"{record.function} was traced with {capture.label} = "
                    f"{capture.fingerprint.summary} and its compiled code still uses that "
                    f"value: pass {capture.access.name} as an argument (or mark it static), "
                    f"or call .clear_cache() on the jitted function after changing it"
                ),
            )
        )
    return findings


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
    fn = _user_function(fun)
    if fn is None:
        raise InvalidCallError(
            f"js.stale expects a (jitted) Python function, got {type(fun).__name__}; "
            "pass the function itself, e.g. js.stale(f)"
        )
    if fn not in _last_trace:
        raise InvalidCallError(
            f"no trace of {_qualname(fn)} was recorded: start js.watch_purity() "
            "(or %purity on) before its first call, then call js.stale again"
        )
    return _stale_of(fn)


class PurityLog(Renderable):
    """Trace-time side effects and stale captured values seen while active.

    Use as a context manager or with ``start()``/``stop()``. ``findings`` lists side
    effects recorded during traces, then values that are stale right now.
    """

    def __init__(self) -> None:
        self._effects: list[PurityFinding] = []
        self._traced: weakref.WeakSet[types.FunctionType] = weakref.WeakSet()
        self._active = False
        self._lock = threading.Lock()

    def start(self) -> PurityLog:
        if self._active:
            return self
        with _registry_lock:
            _active_logs.append(self)
            _acquire_listener()
        self._active = True
        return self

    def stop(self) -> PurityLog:
        if not self._active:
            return self
        with _registry_lock:
            if self in _active_logs:
                _active_logs.remove(self)
            _release_listener()
        self._active = False
        return self

    @property
    def active(self) -> bool:
        return self._active

    def __enter__(self) -> PurityLog:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _record_trace(
        self, fn: types.FunctionType, effects: list[PurityFinding]
    ) -> None:
        with self._lock:
            self._traced.add(fn)
            self._effects.extend(effects)

    @property
    def side_effects(self) -> list[PurityFinding]:
        with self._lock:
            return list(self._effects)

    def stale_values(self) -> list[PurityFinding]:
        """Captured values of the functions traced while watching that differ now."""
        with self._lock:
            functions = list(self._traced)
        findings: list[PurityFinding] = []
        for fn in functions:
            findings.extend(_stale_of(fn))
        return findings

    @property
    def findings(self) -> list[PurityFinding]:
        return self.side_effects + self.stale_values()

    def reset(self) -> None:
        with self._lock:
            self._effects.clear()
            self._traced = weakref.WeakSet()

    def __repr__(self) -> str:
        return f"<PurityLog: {len(self.findings)} findings>"


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


__all__ = ["PurityFinding", "PurityLog", "stale", "watch_purity"]
