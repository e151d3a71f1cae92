"""The compile history every watcher shares, and the causes of a miss measured against it.

For each jitted function (held by weak reference) the signatures it compiled with;
for each code location, how many function objects were made from it (a jit inside a
loop); for computations run outside jit (``jax.grad`` of a jitted function), their
signatures by name and source. A miss is explained by the closest earlier compile.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import Counter
from typing import Any, Protocol

from jaxscope._recompiles.causes import diff
from jaxscope._recompiles.records import Cause
from jaxscope._recompiles.signature import Signature
from jaxscope._records import SourceLoc

HISTORY_LIMIT = 64


class Miss(Protocol):
    """What classification reads of one cache miss (the watcher's frame)."""

    fun_name: str
    sig: Signature | None
    traces: int
    compiles: int
    call_site: SourceLoc | None
    eager_key: tuple[str, str, int] | None


def _cause(kind: str, path: str, hint: str, before: str = "", after: str = "") -> Cause:
    return Cause(kind=kind, path=path, before=before, after=after, hint=hint)


def _code_key(fun: Any) -> tuple[str, int, str] | None:
    for _ in range(10):
        code = getattr(fun, "__code__", None)
        if code is not None:
            return (code.co_filename, code.co_firstlineno, code.co_name)
        fun = getattr(fun, "func", None) or getattr(fun, "__wrapped__", None)
        if fun is None:
            return None
    return None


def _closest(history: list[Signature], sig: Signature, name: str) -> list[Cause]:
    """The causes against the closest earlier signature (most recent first); records
    ``sig``."""
    best: list[Cause] | None = None
    for prev in reversed(history):
        causes = diff(prev, sig, name)
        if best is None or len(causes) < len(best):
            best = causes
        if not causes:
            break
    history.append(sig)
    if len(history) > HISTORY_LIMIT:
        del history[0]
    return best or []


class CompileHistory:
    """What compiled before, shared by all watchers (callers hold the watcher lock)."""

    def __init__(self) -> None:
        # fun -> signatures it compiled with (most recent last)
        self.by_function: weakref.WeakKeyDictionary[Any, list[Signature]] = (
            weakref.WeakKeyDictionary()
        )
        # (file, line, qualname) of functions compiled -> how many function objects
        self.code_seen: Counter[tuple[str, int, str]] = Counter()
        # (name, file, line) of computations compiled outside jit -> signatures
        self.eager: dict[tuple[str, str, int], list[Signature]] = {}

    def classify(
        self, fun: Any, user: Any, miss: Miss, defined_at: SourceLoc | None
    ) -> list[Cause]:
        """The causes of a miss of the jitted ``fun`` (``user``: the user's function)."""
        history = None
        if fun is not None:
            with contextlib.suppress(TypeError):
                history = self.by_function.get(fun)
        if not history:
            return self._first(fun, user, miss, defined_at)
        name = miss.fun_name
        if miss.sig is None:
            return [
                _cause("other", name, "jaxscope could not read this call's arguments")
            ]
        causes = _closest(history, miss.sig, name)
        if causes:
            return causes
        what = "recompiled" if not miss.traces else "retraced"
        hint = (
            f"{name} was {what} with arguments, options and config identical to an "
            "earlier compile: its caches were cleared (jax.clear_caches(), "
            "f.clear_cache()) or evicted, or a cache key jaxscope does not see changed "
            "(layouts, compiler options, context managers)"
        )
        return [_cause("other", name, hint)]

    def _first(
        self, fun: Any, user: Any, miss: Miss, defined_at: SourceLoc | None
    ) -> list[Cause]:
        """The first compile of ``fun`` seen: recorded, then explained."""
        code = _code_key(user) if user is not None else None
        earlier = self.code_seen[code] if code is not None else 0
        if code is not None:
            self.code_seen[code] += 1
        if miss.sig is not None and fun is not None:
            with contextlib.suppress(TypeError):
                self.by_function[fun] = [miss.sig]
        return [_first_cause(miss, earlier, defined_at)]

    def classify_eager(self, miss: Miss) -> list[Cause]:
        """The causes of a miss of a transformed computation run outside jit."""
        key, sig, name = miss.eager_key, miss.sig, miss.fun_name
        assert key is not None and sig is not None
        fix = (
            f"jit the transformed function once (e.g. jax.jit(jax.grad({key[0]}))) "
            "so the whole computation compiles together and is cached"
        )
        history = self.eager.get(key)
        if not history:
            self.eager[key] = [sig]
            hint = (
                f"a transformation of the jitted {key[0]} (e.g. the backward pass of "
                f"jax.grad) ran outside jit and compiled on its own: {fix}"
            )
            return [_cause("first_call", name, hint)]
        causes = _closest(history, sig, name)
        return causes or [
            _cause("other", name, f"recompiled with identical arguments: {fix}")
        ]


def _first_cause(miss: Miss, earlier: int, defined_at: SourceLoc | None) -> Cause:
    """A first compile: compiled before watching, a function object re-made from code
    that compiled ``earlier`` times already, or really the first."""
    name = miss.fun_name
    where = str(defined_at) if defined_at else "its definition"
    if not miss.traces and miss.compiles:
        hint = (
            f"{name} was already traced (before this watcher started), and "
            "this jitted wrapper compiles it again: a second jax.jit(...) of the "
            "same function with other options, or new arguments placement; create "
            "the jitted function once and reuse it"
        )
        before, after = "compiled before this watcher", "compiled again"
        return _cause("new_function", name, hint, before, after)
    if earlier:
        site = f" (called at {miss.call_site})" if miss.call_site else ""
        hint = (
            f"a new {name} is created at {where} and jitted again each "
            f"time{site}: jit inside a loop or jax.jit(lambda ...) re-defined on "
            "every pass never hits the cache; hoist the jax.jit(...) out of the "
            "loop and reuse it"
        )
        before = f"{earlier} earlier function object(s) from {where}"
        return _cause("redefined_function", name, hint, before, "a new function object")
    hint = (
        f"the first compile of {name}: expected once per function; warm it "
        "up before timing"
    )
    return _cause("first_call", name, hint)
