# pyright: strict
"""Named causes of slow compiles, found in a profile's counts, each with a fix."""

from __future__ import annotations

import ast
import functools
import linecache
from collections import Counter

from jaxscope._compile.counts import EqnCounts, Key
from jaxscope._compile.records import CompileDiagnosis
from jaxscope._format import format_bytes
from jaxscope._profile.source import raw_file
from jaxscope._records import SourceLoc

MIN_REPEATS = 16
"""A line emitting its pattern fewer times than this is not called unrolled."""
MIN_UNROLLED_EQNS = 64
CONSTANT_BYTES = 1 << 20
"""Closed-over arrays from this size on are worth passing as arguments."""
_MAX_PERIOD = 64
_MATCH = 0.9


def repeats(seq: list[str]) -> tuple[int, int]:
    """``(period, repeats)`` of the shortest pattern ``seq`` repeats (90% of its
    positions agree with the one a period earlier); ``(len(seq), 1)`` if none."""
    n = len(seq)
    for period in range(1, min(_MAX_PERIOD, n // 2) + 1):
        if n // period < MIN_REPEATS:
            break
        same = sum(1 for i in range(period, n) if seq[i] == seq[i - period])
        if same >= _MATCH * (n - period):
            return period, n // period
    return n, 1


@functools.lru_cache(maxsize=64)
def _loop_lines(file: str, size: int) -> frozenset[int]:
    """The lines of ``file`` inside a Python ``for``/``while`` loop body or a
    comprehension (``size`` keys the cache to the file's current text)."""
    try:
        tree = ast.parse("".join(linecache.getlines(file)))
    except (SyntaxError, ValueError):
        return frozenset()
    lines: set[int] = set()
    loops = (ast.For, ast.AsyncFor, ast.While)
    comprehensions = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    for node in ast.walk(tree):
        if isinstance(node, loops):
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
        elif isinstance(node, comprehensions):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset(lines)


def in_python_loop(source: SourceLoc) -> bool:
    """Whether ``source`` is a line of a Python loop body or comprehension (an
    IPython cell's lines included); False where its text is unknown."""
    name = raw_file(source.file)
    text = linecache.getlines(name)
    if not text:
        return False
    return source.line in _loop_lines(name, sum(map(len, text)))


def line_repeats(counts: EqnCounts, key: Key) -> tuple[int, int]:
    """``(repeats, equations per repeat)`` of the line ``key``.

    A traced-out loop emits the same equations each iteration (forward, then again
    in the backward pass), so most primitives on the line occur a multiple of the
    iterations (``tanh`` 100 times, ``mul`` 300), a few once more or less (the
    first iteration's gradient needs no accumulation): the repeats are the count
    most primitives share. Failing that, the shortest period of the line's
    equations in program order."""
    line = counts.lines[key]
    shared = Counter(n for n in line.primitives.values() if n >= MIN_REPEATS)
    if shared:
        top = max(shared.values())
        n = min(c for c, k in shared.items() if k == top)
        return n, max(1, round(line.eqns / n))
    best = (1, line.eqns)
    for (k, _region), seq in counts.sequences.items():
        if k != key:
            continue
        period, n = repeats(seq)
        if n > best[0]:
            best = (n, period)
    return best


def unrolled_loops(counts: EqnCounts) -> list[CompileDiagnosis]:
    """Lines that emit one equation pattern many times (a Python loop traced out),
    grouped by function and repeat count: one diagnosis per loop. Only lines
    inside a Python loop or comprehension count: a library mapping over a pytree
    (an optimizer over each parameter) repeats a pattern too, and is not the
    user's loop."""
    found: dict[tuple[str, str, int], list[tuple[Key, int, int]]] = {}
    for key, line in counts.lines.items():
        if line.eqns < MIN_REPEATS:
            continue
        n, per = line_repeats(counts, key)
        if n < MIN_REPEATS or not in_python_loop(line.source):
            continue
        group = (key[0], line.source.function or "", n)
        found.setdefault(group, []).append((key, line.eqns, per))
    out: list[CompileDiagnosis] = []
    for (file, function, n), members in found.items():
        eqns = sum(m[1] for m in members)
        if eqns < MIN_UNROLLED_EQNS:
            continue
        first = min(m[0][1] for m in members)
        last = max(m[0][1] for m in members)
        per_iteration = sum(m[2] for m in members)
        saves = eqns - per_iteration
        where = f"line {first}" if first == last else f"lines {first}-{last}"
        source = counts.lines[(file, first)].source
        out.append(
            CompileDiagnosis(
                kind="unrolled_loop",
                source=source,
                message=(
                    f"a Python loop unrolled {n} times: {where}"
                    f"{f' of {function}' if function else ''} emit {eqns} equations, "
                    f"the same {per_iteration} per iteration"
                ),
                fix=(
                    "write the loop with jax.lax.fori_loop(0, n, body, carry) or "
                    "jax.lax.scan(body, carry, xs): its body is traced and compiled "
                    f"once, saving about {saves} equations"
                ),
                count=n,
                saves=saves,
            )
        )
    return sorted(out, key=lambda d: -d.saves)


def baked_constants(
    counts: EqnCounts, names: dict[Key, list[str]] | None = None
) -> list[CompileDiagnosis]:
    """Lines that close over arrays of ``CONSTANT_BYTES`` or more, embedded in the
    compiled program (and in its cache key)."""
    out: list[CompileDiagnosis] = []
    for key, line in counts.lines.items():
        if line.constant_bytes < CONSTANT_BYTES:
            continue
        known = (names or {}).get(key, [])
        what = ", ".join(known) if known else "the array"
        shapes = ", ".join(s for s, _ in counts.constant_names.get(key, []))
        arg = known[0] if known else "w"
        fn = (line.source.function or "f").rsplit(".", 1)[-1]
        if (
            fn.isidentifier()
            and not fn.startswith("__")
            and "." not in (line.source.function or "")
        ):
            fix = (
                f"pass {arg} as an argument: def {fn}(..., {arg}) and call it as "
                f"{fn}(..., {arg}), so the program reads it rather than holding a copy"
            )
        else:
            fix = (
                f"pass {arg} as an argument: a parameter of the jitted function, "
                f"handed down to {line.source.function or 'where it is read'}, so "
                "the program reads it rather than holding a copy"
            )
        out.append(
            CompileDiagnosis(
                kind="baked_constant",
                source=line.source,
                message=(
                    f"{what} ({shapes or 'an array'}, "
                    f"{format_bytes(line.constant_bytes)}) is closed over and "
                    "embedded in the program as a constant"
                ),
                fix=fix,
                count=line.constant_bytes,
            )
        )
    return sorted(out, key=lambda d: -d.count)


def recreated_function(
    function: str, where: SourceLoc | None, hint: str
) -> CompileDiagnosis:
    """A function jitted anew on each call (the recompile cause ``new_function``)."""
    return CompileDiagnosis(
        kind="recreated_function",
        source=where,
        message=f"{function} is a new function on every call, so every call compiles",
        fix=hint
        or "define the function once, outside the loop, and jit it there (see "
        "js.watch_recompiles: cause new_function)",
    )
