"""Stale values: what each function's last trace read, compared with the values now.

``remember`` keeps, per traced function, the ``Capture`` of each outer value its trace
read (a fingerprint and how to look the value up again; nothing that keeps a user
array alive). ``stale_of`` compares all of one function's captures; ``stale_among``
compares those of many functions in one pass, each value hashed or copied once
however many functions captured it, and, given the names a notebook cell mentions,
only the captures that cell can have changed: those whose root name (``cfg`` of
``cfg.scale``) it mentions, or whose root object was rebound.
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from jaxscope._purity.bytecode import Access
from jaxscope._purity.records import STALE, PurityFinding
from jaxscope._purity.values import (
    MISSING,
    Comparison,
    Fingerprint,
    lookup,
    resolve_attrs,
)
from jaxscope._records import SourceLoc

# ("global", id(module globals), name) or ("closure", id(cell), name)
RootKey = tuple[str, int, str]


@dataclass(slots=True)
class Capture:
    """One outer value a function read while being traced."""

    label: str  # "shift", "cfg.scale", "self.state"
    fn_ref: Any  # weakref to the function whose code reads it
    code: types.CodeType
    access: Access
    fingerprint: Fingerprint
    source: SourceLoc
    root: RootKey

    def root_value(self) -> Any:
        """The value of the name itself now (``cfg`` of ``cfg.scale``), or MISSING."""
        owner = self.fn_ref()
        return MISSING if owner is None else lookup(owner, self.code, self.access)

    def value(self) -> Any:
        """The captured value now, or MISSING."""
        root = self.root_value()
        return MISSING if root is MISSING else resolve_attrs(root, self.access.attrs)


def root_key(owner: types.FunctionType, access: Access) -> RootKey:
    """Where the name ``access`` reads lives: a module's globals or a closure cell."""
    if access.scope == "global":
        return ("global", id(owner.__globals__), access.name)
    freevars = owner.__code__.co_freevars
    closure = owner.__closure__ or ()
    if access.name in freevars and len(closure) == len(freevars):
        return ("closure", id(closure[freevars.index(access.name)]), access.name)
    return ("closure", id(owner), access.name)


class TraceRecord:
    """The captures of one function's most recent trace."""

    __slots__ = ("__weakref__", "captures", "fn_ref", "function")

    def __init__(self, fn: types.FunctionType, function: str, captures: list[Capture]):
        self.fn_ref = weakref.ref(fn)
        self.function = function
        self.captures = captures


class _Group:
    """Captures of one label under a root with equal fingerprints, by trace record:
    one comparison answers for all of them."""

    __slots__ = ("fingerprint", "members")

    def __init__(self, fingerprint: Fingerprint) -> None:
        self.fingerprint = fingerprint
        self.members: weakref.WeakKeyDictionary[TraceRecord, list[Capture]] = (
            weakref.WeakKeyDictionary()
        )

    def capture(self) -> Capture | None:
        """A capture of the group whose function is alive (to look the value up)."""
        for captures in list(self.members.values()):
            if captures[0].fn_ref() is not None:
                return captures[0]
        return None


class _Root:
    """A name captured by one or more traces, and the object it held when last seen."""

    __slots__ = ("groups", "ident", "latest", "names", "probe", "ref")

    def __init__(self, name: str) -> None:
        self.names = {name}  # and the attributes read after it: cfg, scale
        self.groups: list[_Group] = []
        self.latest: dict[str, _Group] = {}  # the newest group of each label
        self.probe: Capture | None = None  # a capture to look the name up with
        self.ident = 0
        self.ref: Any = None

    def add(self, record: TraceRecord, capture: Capture) -> None:
        group = self.latest.get(capture.label)
        if group is None or not _same_fingerprint(
            group.fingerprint, capture.fingerprint
        ):
            group = self.latest[capture.label] = _Group(capture.fingerprint)
            self.groups.append(group)
            self.see(capture.root_value())
        capture.fingerprint = group.fingerprint
        group.members.setdefault(record, []).append(capture)
        self.names.update(capture.access.attrs)
        self.probe = capture

    def alive(self) -> bool:
        self.groups = [g for g in self.groups if g.members]
        return bool(self.groups)

    def see(self, value: Any) -> None:
        self.ident = id(value)
        try:
            self.ref = weakref.ref(value)
        except TypeError:
            self.ref = None

    def rebound(self) -> bool | None:
        """Whether the name holds another object than when last seen (and see it);
        None once no function that captured it is alive."""
        probe = self.probe
        if probe is None or probe.fn_ref() is None:
            probe = self.probe = next(
                (c for g in self.groups if (c := g.capture()) is not None), None
            )
            if probe is None:
                return None
        value = probe.root_value()
        if id(value) == self.ident and (self.ref is None or self.ref() is value):
            return False
        self.see(value)
        return True


def _same_fingerprint(a: Fingerprint, b: Fingerprint) -> bool:
    if (a.kind, a.summary, a.ident, a.digest) != (b.kind, b.summary, b.ident, b.digest):
        return False
    if a.kind == "value":
        try:
            return bool(a.value == b.value)
        except Exception:
            return False
    if a.ref is None or b.ref is None:
        return a.ref is b.ref
    alive = a.ref()
    return alive is not None and alive is b.ref()


# The record of each function's most recent trace (while any watcher was active), and
# the names they captured.
_last_trace: weakref.WeakKeyDictionary[types.FunctionType, TraceRecord] = (
    weakref.WeakKeyDictionary()
)
_roots: dict[RootKey, _Root] = {}
_lock = threading.Lock()
_PRUNE_EVERY = 1024  # traces between removals of the roots of dead functions
_since_prune = 0


def remember(fn: types.FunctionType, record: TraceRecord) -> None:
    """Keep ``record`` as the last trace of ``fn`` (replacing an earlier one)."""
    global _since_prune
    with _lock:
        _since_prune += 1
        if _since_prune >= _PRUNE_EVERY:
            _since_prune = 0
            for key, root in list(_roots.items()):
                if not root.alive():
                    del _roots[key]
        _last_trace[fn] = record
        for capture in record.captures:
            root = _roots.get(capture.root)
            if root is None:
                root = _roots[capture.root] = _Root(capture.root[2])
            root.add(record, capture)


def traced(fn: types.FunctionType) -> bool:
    """Whether a trace of ``fn`` was recorded."""
    return fn in _last_trace


class _Pass:
    """One checking pass: each value compared once per remembered fingerprint."""

    __slots__ = ("comparison", "verdicts")

    def __init__(self) -> None:
        self.comparison = Comparison()
        # (fingerprint id, root, label) -> the current value's description if it
        # differs from the fingerprint, else None
        self.verdicts: dict[tuple[int, RootKey, str], str | None] = {}

    def changed(self, capture: Capture) -> str | None:
        key = (id(capture.fingerprint), capture.root, capture.label)
        if key in self.verdicts:
            return self.verdicts[key]
        value = capture.value()
        verdict = None
        if value is not MISSING and not self.comparison.same(
            capture.fingerprint, value
        ):
            fp = capture.fingerprint
            if fp.kind == "module":
                verdict = self.comparison.module_change(fp, value)
            else:
                verdict = self.comparison.describe(value)
            if fp.kind == "array" and verdict == fp.summary:  # too large to show
                verdict = f"{verdict} (contents changed)"
        self.verdicts[key] = verdict
        return verdict


def stale_of(fn: types.FunctionType, check: _Pass | None = None) -> list[PurityFinding]:
    """The captured values of ``fn``'s last recorded trace that differ now."""
    record = _last_trace.get(fn)
    if record is None:
        return []
    return _stale(record, record.captures, check or _Pass())


def stale_among(
    functions: Collection[types.FunctionType], names: Collection[str] | None
) -> list[PurityFinding]:
    """The stale values of ``functions``, in one pass. With ``names`` (those a cell
    mentions), only captures under a root that was rebound or whose name or
    attributes read (``cfg``, ``scale`` of ``cfg.scale``) are among them are compared;
    with None, all of them. A failure of the watcher's own finds nothing."""
    try:
        if names is None:
            check = _Pass()
            return [f for fn in list(functions) for f in stale_of(fn, check)]
        return _stale_in_changed_roots(functions, names)
    except Exception:
        return []


def _stale_in_changed_roots(
    functions: Collection[types.FunctionType], names: Collection[str]
) -> list[PurityFinding]:
    with _lock:
        changed: list[_Group] = []
        for key, root in list(_roots.items()):
            rebound = root.rebound()
            if rebound is None:
                del _roots[key]
            elif rebound or not root.names.isdisjoint(names):
                changed.extend(group for group in root.groups if group.members)
    check = _Pass()
    findings: list[PurityFinding] = []
    for group in changed:
        watched = (
            (record, captures)
            for record, captures in list(group.members.items())
            if _is_current(record, functions)
        )
        first = next(watched, None)
        if first is None or check.changed(first[1][0]) is None:
            continue
        for record, captures in (first, *watched):
            findings.extend(_stale(record, captures, check))
    return findings


def _is_current(record: TraceRecord, functions: Collection[types.FunctionType]) -> bool:
    """Whether ``record`` is the last trace of a function among ``functions``."""
    fn = record.fn_ref()
    return fn is not None and fn in functions and _last_trace.get(fn) is record


def _stale(
    record: TraceRecord, captures: list[Capture], check: _Pass
) -> list[PurityFinding]:
    findings: list[PurityFinding] = []
    seen: set[tuple[str, int]] = set()
    for capture in captures:
        key = (capture.label, id(capture.code))
        if key in seen:
            continue
        seen.add(key)
        current = check.changed(capture)
        if current is not None:
            findings.append(_stale_finding(record.function, capture, current))
    return findings


def _hashable(capture: Capture) -> bool:
    """Whether the captured value could be a static argument: a hashable copy (an
    array, a list, a dict or another mutable object cannot)."""
    fingerprint = capture.fingerprint
    frozen = fingerprint.value
    if fingerprint.kind != "value":
        return False
    # freeze() tags containers with their type.
    return not (
        isinstance(frozen, tuple)
        and len(frozen) == 2
        and frozen[0] in ("list", "dict", "set")
    )


def _stale_finding(function: str, capture: Capture, current: str) -> PurityFinding:
    captured = capture.fingerprint.summary
    if capture.fingerprint.kind == "module":
        hint = (
            f"{function} read the module {capture.label} without being passed it, so "
            "its compiled code still uses the arrays it had when traced: pass "
            f"{capture.label} to {function} as an argument (nnx.jit and "
            "eqx.filter_jit trace a module argument's arrays as inputs)"
        )
    else:
        hint = (
            f"{function} was traced with {capture.label} = {captured} and its "
            f"compiled code still uses that value: pass {capture.access.name} as an "
            f"argument{' (or mark it static)' if _hashable(capture) else ''}, or call "
            ".clear_cache() on the jitted function after changing it"
        )
    return PurityFinding(
        kind=STALE,
        function=function,
        name=capture.label,
        source=capture.source,
        captured=captured,
        current=current,
        hint=hint,
    )
