"""Trace-time side effects: what a traced function did that runs only while JAX
traces it, never on a compiled call.

Writes to outer objects and assignments of globals/nonlocals are found by comparing
state before and after the trace (``mutation_finding``, ``assignment_finding``).
Calls to ``print``, clocks and random number generators are seen two ways: while a
trace runs, the module functions (``print``, ``time.time``, ``random.random``,
``np.random.normal``, ``np.random.default_rng()`` without a seed, ...) are wrapped
and report a call made directly by the user's code (``ImpureCalls``); and a random
generator object the code reads (``rng.normal``, ``gauss`` imported from ``random``)
is reported when its state moved during the trace (``RngWatch``).
"""

from __future__ import annotations

import builtins
import functools
import random
import sys
import threading
import time
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from jaxscope._purity.bytecode import Access
from jaxscope._purity.records import SIDE_EFFECT, PurityFinding
from jaxscope._purity.values import (
    MISSING,
    Fingerprint,
    describe_value,
    in_scope,
    lookup,
    same,
)
from jaxscope._records import SourceLoc
from jaxscope._source import loc_of_code

_HINTS = {
    "print": "print runs only while {fn} is traced, not on later calls: use "
    "jax.debug.print(...)",
    "time": "{call}() is read once while {fn} is traced and baked in: pass the time "
    "as an argument",
    "random": "{call}() is drawn once while {fn} is traced and baked in: use "
    "jax.random with a key argument",
}


def call_finding(
    function: str, label: str, kind: str, source: SourceLoc
) -> PurityFinding:
    """A call to print, a clock or a random generator made while tracing."""
    return PurityFinding(
        kind=SIDE_EFFECT,
        function=function,
        name=label,
        source=source,
        captured="",
        current="",
        hint=_HINTS[kind].format(fn=function, call=label),
    )


def mutation_finding(
    function: str, label: str, mutator: str, source: SourceLoc
) -> PurityFinding:
    """A write into the outer object ``label`` (``.append()``, ``[k] = v``, ...)."""
    what = {
        "setitem": "item assignment on",
        "setattr": "attribute assignment on",
    }.get(mutator, f".{mutator}() on")
    return PurityFinding(
        kind=SIDE_EFFECT,
        function=function,
        name=label if mutator in ("setitem", "setattr") else f"{label}.{mutator}",
        source=source,
        captured="",
        current="",
        hint=(
            f"{what} outer object `{label}` runs only while {function} is traced, "
            "not on later calls: return the value instead, or use "
            "jax.debug.callback to run Python on every call"
        ),
    )


@dataclass(slots=True)
class Assignment:
    """A global or nonlocal the traced code assigns, with its value before the trace."""

    owner: Any  # the function whose code assigns it
    code: types.CodeType
    access: Access
    before: Fingerprint | None


def assignment_finding(function: str, assignment: Assignment) -> PurityFinding | None:
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
# Random generators whose state moved during a trace

_RNG_TYPES = (random.Random, np.random.Generator, np.random.RandomState)


def rng_of(value: Any) -> Any:
    """The random generator whose method ``value`` is (``rng.normal``,
    ``np.random.normal``, ``random.gauss``), else None."""
    if isinstance(value, types.FunctionType):  # our own wrapper, while tracing
        value = getattr(value, "__wrapped__", None)
    if isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        owner = value.__self__
        return owner if isinstance(owner, _RNG_TYPES) else None
    return None


def rng_state(rng: Any) -> Any:
    """A copy of a generator's state, to see whether it drew; None if unreadable."""
    try:
        if isinstance(rng, np.random.Generator):
            return _plain(rng.bit_generator.state)
        if isinstance(rng, np.random.RandomState):
            return _plain(rng.get_state(legacy=True))
        return rng.getstate()
    except Exception:
        return None


def _plain(state: Any) -> Any:
    """Generator state as comparable plain data (arrays as bytes)."""
    if isinstance(state, np.ndarray):
        return state.tobytes()
    if isinstance(state, dict):
        return tuple((k, _plain(v)) for k, v in state.items())
    if isinstance(state, (list, tuple)):
        return tuple(_plain(v) for v in state)
    return state


@dataclass(slots=True)
class RngWatch:
    """A generator the traced code reads a method of, and its state before the trace."""

    label: str
    source: SourceLoc
    rng: Any
    before: Any

    def drew(self) -> bool:
        return self.before is not None and rng_state(self.rng) != self.before


# ----------------------------------------------------------------------------------
# print, clocks and module-level random functions called during a trace

# report(label, kind, caller frame, generator drawn from or None)
Reporter = Callable[[str, str, types.FrameType, Any], None]

_SKIP_RANDOM = frozenset({"seed", "getstate", "setstate", "get_state", "set_state"})


def _targets() -> list[tuple[Any, str, str, str]]:
    """(owner, attribute, label, kind) of each function wrapped while tracing."""
    targets: list[tuple[Any, str, str, str]] = [(builtins, "print", "print", "print")]
    for name in ("time", "time_ns", "perf_counter", "perf_counter_ns"):
        targets.append((time, name, f"time.{name}", "time"))
    for name in ("monotonic", "monotonic_ns"):
        targets.append((time, name, f"time.{name}", "time"))
    for module, prefix in ((random, "random"), (np.random, "np.random")):
        for name in sorted(vars(module)):
            if name.startswith("_") or name in _SKIP_RANDOM:
                continue
            if rng_of(getattr(module, name)) is not None:
                targets.append((module, name, f"{prefix}.{name}", "random"))
    targets.append((np.random, "default_rng", "np.random.default_rng", "random"))
    return targets


class ImpureCalls:
    """Wraps print, clocks and module-level random functions while a trace runs."""

    _targets: ClassVar[list[tuple[Any, str, str, str]] | None] = None
    _saved: ClassVar[list[tuple[Any, str, Any]]] = []
    _lock = threading.Lock()
    _users = 0

    @classmethod
    def install(cls, report: Reporter) -> None:
        with cls._lock:
            cls._users += 1
            if cls._users > 1:
                return
            if cls._targets is None:
                cls._targets = _targets()
            for owner, attr, label, kind in cls._targets:
                original = getattr(owner, attr)
                cls._saved.append((owner, attr, original))
                setattr(owner, attr, _wrap(original, label, kind, report))

    @classmethod
    def uninstall(cls) -> None:
        with cls._lock:
            cls._users -= 1
            if cls._users > 0:
                return
            for owner, attr, original in reversed(cls._saved):
                setattr(owner, attr, original)
            cls._saved.clear()


def _wrap(original: Any, label: str, kind: str, report: Reporter) -> Any:
    seeded_only = label == "np.random.default_rng"  # a seeded generator is a constant

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            caller = sys._getframe(1)
            # Only a direct call from user code counts: JAX itself reads clocks too.
            if in_scope(caller.f_code.co_filename) and (
                not seeded_only or _unseeded(args, kwargs)
            ):
                report(label, kind, caller, rng_of(original))
        except Exception:  # the watcher never disturbs the call itself
            pass
        return original(*args, **kwargs)

    return wrapper


def _unseeded(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return (args[0] if args else kwargs.get("seed")) is None
