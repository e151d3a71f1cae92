# pyright: strict
"""Every compile a block of code triggers (``%%jaxcompile``): by function, by line.

Two sources, both already public or already watched: the recompile watcher
(``js.watch_recompiles``) names each jitted function that missed its cache, with
its call site, seconds and causes; JAX's ``jax.monitoring`` events count every
XLA compile (eager op-by-op dispatch outside any jit included) and persistent
cache hits, each attributed to the user line on the stack when it happened. One
listener is registered once per process and passes events to the collectors
active at that moment.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import jax

from jaxscope._compile.diagnose import recreated_function
from jaxscope._compile.records import CompileDiagnosis
from jaxscope._display import Renderable
from jaxscope._hlo.ops import source_text
from jaxscope._recompiles.watcher import RecompileLog, watch_recompiles
from jaxscope._records import SourceLoc
from jaxscope._source import is_library_file, is_user_file, loc_of_code

STORM_COMPILES = 10
"""Eager compiles from one line from which it is called a storm."""
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionCompiles:
    """One jitted function's compiles in the block."""

    function: str
    compiles: int
    compile_seconds: float
    call_site: SourceLoc | None = None
    run_seconds: float = 0.0
    causes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LineCompiles:
    """XLA compiles started from one user line (jits and eager ops)."""

    source: SourceLoc
    compiles: int
    seconds: float
    eager: int = 0
    code: str = ""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CellCompiles(Renderable):
    """What a block of code compiled: totals, per function, per line, diagnoses."""

    compiles: int
    compile_seconds: float
    eager_compiles: int
    persistent_cache_hits: int
    functions: tuple[FunctionCompiles, ...]
    lines: tuple[LineCompiles, ...]
    diagnoses: tuple[CompileDiagnosis, ...] = ()


class _Collector:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        # (user line, the file name Python compiled it under, seconds)
        self.compiles: list[tuple[SourceLoc | None, str, float]] = []
        self.cache_hits = 0


_ACTIVE: list[_Collector] = []
_REGISTERED: list[bool] = []
_LOCK = threading.Lock()


def _user_line() -> tuple[SourceLoc | None, str]:
    frame = sys._getframe(2)  # pyright: ignore[reportPrivateUsage]
    while frame is not None:
        name = frame.f_code.co_filename
        if is_user_file(name) and not is_library_file(name):
            return loc_of_code(frame.f_code, frame.f_lineno), name
        frame = frame.f_back
    return None, ""


def _on_duration(event: str, duration_secs: float, **_: Any) -> None:
    if event != _COMPILE_EVENT or not _ACTIVE:
        return
    try:
        where, raw = _user_line()
        for collector in list(_ACTIVE):
            with collector.lock:
                collector.compiles.append((where, raw, float(duration_secs)))
    except Exception:  # never break the user's compile
        return


def _on_event(event: str, **_: Any) -> None:
    if event != _CACHE_HIT_EVENT or not _ACTIVE:
        return
    for collector in list(_ACTIVE):
        with collector.lock:
            collector.cache_hits += 1


def _register_once() -> None:
    with _LOCK:
        if _REGISTERED:
            return
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        jax.monitoring.register_event_listener(_on_event)
        _REGISTERED.append(True)


@contextmanager
def collect_compiles() -> Iterator[list[CellCompiles]]:
    """``with collect_compiles() as out: ...`` then ``out[0]``: the block's compiles."""
    _register_once()
    collector = _Collector()
    log = watch_recompiles()
    out: list[CellCompiles] = []
    _ACTIVE.append(collector)
    try:
        with log:
            yield out
    finally:
        _ACTIVE.remove(collector)
        out.append(summarize(collector, log))


def summarize(collector: _Collector, log: RecompileLog) -> CellCompiles:
    """The block's ``CellCompiles`` from what was collected."""
    events = [e for e in log.events if e.compiled]
    functions: dict[tuple[str, str], list[Any]] = {}
    for e in events:
        functions.setdefault((e.function, str(e.call_site or "")), []).append(e)
    by_function = [
        FunctionCompiles(
            function=name,
            compiles=len(group),
            compile_seconds=sum(e.seconds for e in group),
            call_site=group[0].call_site,
            causes=tuple(dict.fromkeys(c.kind for e in group for c in e.causes)),
        )
        for (name, _), group in functions.items()
    ]
    by_function.sort(key=lambda f: -f.compile_seconds)
    jitted_at: dict[tuple[str, int], int] = {}
    for e in events:
        if e.call_site is not None:
            jitted_at[e.call_site.key] = jitted_at.get(e.call_site.key, 0) + 1
    lines: dict[tuple[str, int], list[Any]] = {}
    with collector.lock:
        compiles = list(collector.compiles)
        hits = collector.cache_hits
    for where, raw, seconds in compiles:
        if where is not None:
            entry = lines.setdefault(where.key, [where, 0, 0.0, raw])
            entry[1] += 1
            entry[2] += seconds
    by_line = [
        LineCompiles(
            source=loc,
            compiles=n,
            seconds=s,
            eager=max(0, n - jitted_at.get(loc.key, 0)),
            code=source_text(raw, loc.line),
        )
        for loc, n, s, raw in lines.values()
    ]
    by_line.sort(key=lambda line: -line.seconds)
    diagnoses: list[CompileDiagnosis] = []
    for line in by_line:
        if line.eager >= STORM_COMPILES:
            diagnoses.append(
                CompileDiagnosis(
                    kind="eager_op_storm",
                    source=line.source,
                    message=(
                        f"{line.eager} small compiles of JAX operations run one by "
                        "one outside any jit"
                    ),
                    fix="put the code in a function and call it through jax.jit, "
                    "so it compiles once as one program",
                    count=line.eager,
                    saves=line.eager - 1,
                )
            )
    for f in by_function:
        if {"new_function", "redefined_function"} & set(f.causes) and f.compiles > 1:
            hint = next(
                (
                    c.hint
                    for e in events
                    if e.function == f.function
                    for c in e.causes
                    if c.kind in ("new_function", "redefined_function")
                ),
                "",
            )
            diagnoses.append(recreated_function(f.function, f.call_site, hint))
    eager = sum(line.eager for line in by_line) + sum(
        1 for where, _, _ in compiles if where is None
    )
    return CellCompiles(
        compiles=len(compiles),
        compile_seconds=sum(s for _, _, s in compiles),
        eager_compiles=eager,
        persistent_cache_hits=hits,
        functions=tuple(by_function),
        lines=tuple(by_line),
        diagnoses=tuple(diagnoses),
    )
