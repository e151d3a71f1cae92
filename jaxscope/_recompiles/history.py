"""The compile history every watcher shares, and the causes of a miss measured against it.

For each jitted function (held by weak reference) the signatures it compiled with;
for each code location, how many function objects were made from it (a jit inside a
loop); for computations run outside jit (``jax.grad`` of a jitted function), their
signatures by name and source. A miss is explained by the closest earlier compile.

A function compiled before any watcher started has no history here; what JAX's own
caches hold stands in for it (``Miss.earlier``: the traces in JAX's trace cache;
``Miss.lowered_before``: how the traced computation was lowered), so the cause is
right whenever the watcher starts.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import Counter
from typing import Any, Protocol

from jaxscope._recompiles.causes import diff, dtype_cause, placement_cause
from jaxscope._recompiles.records import Cause
from jaxscope._recompiles.signature import Leaf, Signature
from jaxscope._records import SourceLoc
from jaxscope._source import display_filename
from jaxscope.compat import source as _csource

HISTORY_LIMIT = 64


class Miss(Protocol):
    """What classification reads of one cache miss (the watcher's frame)."""

    fun_name: str
    sig: Signature | None
    traces: int
    compiles: int
    call_site: SourceLoc | None
    eager_key: tuple[str, str, int] | None
    eager_api: str
    earlier: list[Signature] | None
    traced_before: bool | None  # None: whether JAX traced it before is unknown
    traced_only: bool  # JAX traced it before (js.jaxpr, .trace), never compiled it
    lowered_before: list[tuple[str, ...]] | None


def _cause(kind: str, path: str, hint: str, before: str = "", after: str = "") -> Cause:
    return Cause(kind=kind, path=path, before=before, after=after, hint=hint)


def _code_key(fun: Any) -> tuple[str, int, str] | None:
    for _ in range(10):
        code = getattr(fun, "__code__", None)
        if code is not None:
            # Two lambdas on one line are two functions: their bodies' columns differ.
            column = min(
                (
                    p[2]
                    for p in code.co_positions()
                    if p[0] == code.co_firstlineno and p[2]
                ),
                default=0,
            )
            name = f"{code.co_name}@{column}" if column else code.co_name
            return (code.co_filename, code.co_firstlineno, name)
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
    usual = [_usual_dtype(history, c) if c.kind == "dtype" else c for c in best or []]
    history.append(sig)
    if len(history) > HISTORY_LIMIT:
        del history[0]
    return usual


def _usual_dtype(history: list[Signature], cause: Cause) -> Cause:
    """A dtype cause whose hint casts to the dtype most earlier compiles had at that
    path (the first one on a tie), not to the last, maybe odd, one."""
    seen: Counter[str] = Counter()
    for sig in history:
        for path, type_str in sig.flat():
            if path == cause.path and not type_str.startswith("static "):
                seen[type_str.split("[", 1)[0]] += 1
    if not seen:
        return cause
    top = max(seen.values())
    usual = next(d for d in seen if seen[d] == top)  # insertion order: first seen
    return dtype_cause(cause.path, cause.before, cause.after, usual)


class CompileHistory:
    """What compiled before, shared by all watchers (callers hold the watcher lock)."""

    def __init__(self) -> None:
        # function -> signatures it compiled with (most recent last)
        self.by_function: weakref.WeakKeyDictionary[Any, list[Signature]] = (
            weakref.WeakKeyDictionary()
        )
        # (file, line, qualname) of functions compiled -> how many function objects
        self.code_seen: Counter[tuple[str, int, str]] = Counter()
        # (name, file, line) of computations compiled outside jit -> signatures
        self.eager: dict[tuple[str, str, int], list[Signature]] = {}

    def knows(self, owner: Any) -> bool:
        """Whether a watcher has seen ``owner`` compile."""
        with contextlib.suppress(TypeError):
            return bool(self.by_function.get(owner))
        return False

    def classify(
        self, owner: Any, user: Any, miss: Miss, defined_at: SourceLoc | None
    ) -> list[Cause]:
        """The causes of a miss of ``owner`` (the jitted function, or the user's
        function behind a library's jit; ``user``: the user's function)."""
        history = None
        if owner is not None:
            with contextlib.suppress(TypeError):
                history = self.by_function.get(owner)
        from_jax = False
        if not history and miss.earlier and miss.sig is not None:
            history, from_jax = list(miss.earlier), True
            self._remember(owner, history)
        if not history:
            return self._first(owner, user, miss, defined_at)
        name = miss.fun_name
        if miss.sig is None:
            return [
                _cause("other", name, "jaxscope could not read this call's arguments")
            ]
        causes = _closest(history, miss.sig, name)
        return causes or _identical(miss, from_jax)

    def _remember(self, owner: Any, history: list[Signature]) -> None:
        if owner is not None:
            with contextlib.suppress(TypeError):
                self.by_function[owner] = history

    def _first(
        self, owner: Any, user: Any, miss: Miss, defined_at: SourceLoc | None
    ) -> list[Cause]:
        """The first compile of ``owner`` seen: recorded, then explained."""
        code = _code_key(user) if user is not None else None
        if code is not None and miss.fun_name.endswith(")"):
            # grad(loss) and loss itself, both jitted, are two functions of one code
            code = (code[0], code[1], f"{code[2]} as {miss.fun_name}")
        earlier = self.code_seen[code] if code is not None else 0
        if code is not None:
            self.code_seen[code] += 1
        if miss.sig is not None:
            self._remember(owner, [miss.sig])
        if not miss.traces and miss.compiles:
            return _compile_only(miss)
        library = ""
        if code is not None and _csource.is_library_file(code[0]):
            library = _package_of(code[0]) or "a library"
        return [_first_cause(miss, earlier, defined_at, library)]

    def classify_eager(self, miss: Miss) -> list[Cause]:
        """The causes of a miss of a transformed computation run outside jit."""
        key, sig, name = miss.eager_key, miss.sig, miss.fun_name
        assert key is not None and sig is not None
        if miss.eager_api:
            return self._classify_primitive(miss, key, sig)
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

    def _classify_primitive(
        self, miss: Miss, key: tuple[str, str, int], sig: Signature
    ) -> list[Cause]:
        """The causes of a ``lax.while_loop``/``cond``/``scan`` run outside jit
        compiling: ``key`` is its (first) function's name and source. The same
        arguments again mean the function was traced anew: a new function object
        (defined on each call, as libraries' line searches do)."""
        body, file, line = key
        where = f"{display_filename(file)}:{line}"
        owner = _package_of(file)
        made = (
            f"{body} (defined in {owner} at {where})" if owner else f"{body} ({where})"
        )
        site = f" (at {miss.call_site})" if miss.call_site else ""
        fix = (
            f"jit your code that calls it{site}, e.g. with jax.jit around the "
            "training step, so the whole step compiles once and is cached"
        )
        if not owner:
            fix = f"define {body} once, outside the loop, and reuse it; or {fix}"
        history = self.eager.get(key)
        if not history:
            self.eager[key] = [sig]
            hint = (
                f"{miss.eager_api} ran outside jit on {made} and compiled on its "
                f"own: {fix}"
            )
            return [_cause("first_call", miss.fun_name, hint)]
        causes = _closest(history, sig, miss.fun_name)
        if causes:
            return causes
        hint = (
            f"{made} is a new function object on each call, so {miss.eager_api} "
            f"outside jit traces and compiles it again every time: {fix}"
        )
        return [
            _cause(
                "redefined_function",
                body,
                hint,
                f"{body} compiled before",
                f"a new {body} (same name, new function object)",
            )
        ]


def _package_of(file: str) -> str:
    """The installed package ``file`` belongs to (``"optax"``), ``""`` for the
    user's own files."""
    parts = file.replace("\\", "/").split("/")
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            return parts[i + 1].removesuffix(".py")
    return ""


def _identical(miss: Miss, from_jax: bool) -> list[Cause]:
    """A miss whose signature equals an earlier compile's."""
    if from_jax and not miss.traces and miss.compiles:
        return _compile_only(miss)
    what = "recompiled" if not miss.traces else "retraced"
    hint = (
        f"{miss.fun_name} was {what} with arguments, options and config identical to "
        "an earlier compile: its caches were cleared (jax.clear_caches(), "
        "f.clear_cache()) or evicted, or a cache key jaxscope does not see changed "
        "(layouts, compiler options, context managers)"
    )
    return [_cause("other", miss.fun_name, hint)]


def _compile_only(miss: Miss) -> list[Cause]:
    """A compile without a trace, of a function no watcher saw compile: its first
    compile (traced before by ``jax.make_jaxpr``, ``js.jaxpr``, ``.trace``), or a new
    placement of one JAX lowered before, by how JAX's lowering cache holds it."""
    name = miss.fun_name
    lowered = miss.lowered_before or []
    changes = _placement_changes(miss.sig, lowered) if miss.sig is not None else None
    if not lowered or changes == []:
        hint = (
            f"the first compile of {name}: it was traced before (jax.make_jaxpr, "
            "js.jaxpr, %jaxpr, .trace or .lower) but not compiled; expected once "
            "per function"
        )
        return [_cause("first_call", name, hint)]
    if changes:
        return changes
    hint = (
        f"{name} was compiled before this watcher started for arguments placed "
        "elsewhere (other devices or shardings), and compiles again for these: keep "
        "arguments on one device/sharding"
    )
    return [_cause("other", name, hint, "compiled before", "compiled again")]


def _placement_changes(
    sig: Signature, lowered: list[tuple[str, ...]]
) -> list[Cause] | None:
    """Device/sharding causes against the closest earlier lowering; ``[]`` when one
    was lowered with these very placements; None when they cannot be lined up."""
    leaves = _flat_leaves(sig)
    current = [leaf.placement for _, leaf in leaves]
    best: list[Cause] | None = None
    for earlier in lowered:
        if len(earlier) < len(current):
            continue
        earlier = earlier[len(earlier) - len(current) :]  # consts come first
        causes = [
            placement_cause(where, old, new)
            for (where, _), old, new in zip(leaves, earlier, current, strict=True)
            if new is not None and old != new
        ]
        if best is None or len(causes) < len(best):
            best = causes
    return best


def _flat_leaves(sig: Signature) -> list[tuple[str, Leaf]]:
    """``(path, leaf)`` of every array leaf in JAX's flat order: positional
    arguments in order, then keyword arguments sorted by name."""
    positional = [a for a in sig.args if not a.keyword]
    keyword = sorted((a for a in sig.args if a.keyword), key=lambda a: a.base)
    return [
        (arg.path(p), leaf)
        for arg in positional + keyword
        if arg.static is None
        for p, leaf in arg.leaves
        if isinstance(leaf, Leaf)
    ]


def _first_cause(
    miss: Miss, earlier: int, defined_at: SourceLoc | None, library: str = ""
) -> Cause:
    """A first compile seen: of a function JAX traced before the watcher started
    (whose earlier arguments could not be read), a function object re-made from code
    that compiled ``earlier`` times already, or really the first."""
    name = miss.fun_name
    if miss.traced_only:
        hint = (
            f"the first compile of {name}: it was traced before (jax.make_jaxpr, "
            "js.jaxpr, %jaxpr, .trace) but not compiled; expected once per function"
        )
        return _cause("first_call", name, hint)
    if miss.traced_before:
        hint = (
            f"{name} was compiled before this watcher started, with other "
            "arguments, options or config; start watching before its first call to "
            "see what changed"
        )
        return _cause("other", name, hint, "compiled before", "again")
    where = str(defined_at) if defined_at else "its definition"
    if earlier and library:
        site = f" (at {miss.call_site})" if miss.call_site else ""
        hint = (
            f"{library} creates a new {name} at {where} and jits it on each call, so "
            f"it never hits the cache: jit your code that calls it{site}, e.g. with "
            "jax.jit around the training step, so the whole step compiles once"
        )
        before = f"{earlier} earlier function object(s) from {where}"
        return _cause("redefined_function", name, hint, before, "a new function object")
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
    if miss.traced_before is None:
        hint = (
            f"the first compile of {name} this watcher saw; whether JAX compiled it "
            "before the watcher started cannot be read while other threads run "
            "(jax 0.9); start watching before its first call to be sure"
        )
        return _cause("other", name, hint)
    hint = (
        f"the first compile of {name}: expected once per function; warm it "
        "up before timing"
    )
    return _cause("first_call", name, hint)
