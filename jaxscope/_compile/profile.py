# pyright: strict
"""``js.compile_profile(f)(*args)``: one cold compile of a call, by user line.

The call is traced afresh (a new wrapper: JAX's trace caches are neither read nor
filled for the user's function), lowered, and compiled by XLA with the persistent
compilation cache neither read nor written (``_staging.compile_dumping(cold=True)``),
so each stage's seconds are what a first compile costs, and the user's next call
still finds their own cache entries. Nothing is run.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from jaxscope._checks import takes_the_function_alone

# registers the profile with js.diff's readers
from jaxscope._compile import facts as _diff_reader  # noqa: F401  # pyright: ignore[reportUnusedImport]
from jaxscope._compile.counts import EqnCounts, Key, count_eqns, ops_by_line
from jaxscope._compile.diagnose import (
    CONSTANT_BYTES,
    baked_constants,
    unrolled_loops,
)
from jaxscope._compile.records import (
    CompileProfile,
    CompileStages,
    CompileTotals,
    FunctionCompileCost,
    LineCompileCost,
)
from jaxscope._compile.sampler import TraceSampler, now, timed_samples
from jaxscope._exceptions import HloError, JaxscopeError
from jaxscope._format import qualname, unwrap
from jaxscope._hlo.ops import parse_hlo, source_text
from jaxscope._hlo.stablehlo import parse_stablehlo
from jaxscope._profile.source import raw_file
from jaxscope._records import SourceLoc
from jaxscope._source import current_program
from jaxscope._staging import (
    compile_dumping,
    first_line,
    library_lowered,
    stage,
    staged,
)
from jaxscope.compat import jaxpr as _cj


@takes_the_function_alone
def compile_profile(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., CompileProfile]:
    """Why is the compile slow: a cold compile of ``fun`` on example arguments,
    timed by stage and attributed to the lines of your code.

    Trace, lower and XLA compile are each timed for real, bypassing JAX's
    in-memory caches and the persistent compilation cache and leaving both as
    they were. Per line: jaxpr equations (every nesting level; a loop body
    once), StableHLO and optimized-HLO ops, embedded constant bytes, sampled
    Python trace time and an estimated share of XLA's compile time; then named
    diagnoses (an unrolled Python loop, a large baked-in constant) with fixes.

    Args:
        fun: ``jax.jit``/``nnx.jit``/``eqx.filter_jit`` function, a plain one
            (jitted here), ``jax.pmap`` or a ``shard_map``.
        static_argnums: positional arguments passed as Python values.
        static_argnames: keyword arguments passed as Python values.

    Returns:
        A function taking example arguments and returning a ``CompileProfile``.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> def f(x):
        ...     for _ in range(3):
        ...         x = jnp.sin(x)
        ...     return x
        >>> cp = js.compile_profile(f)(jnp.ones(3))
        >>> cp.totals.eqns, cp.top(1)[0].eqns
        (3, 3)
    """

    def build(
        fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]
    ) -> CompileProfile:
        return profile_call(
            fn,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        )

    return staged(fun, "js.compile_profile", build)


def profile_call(
    fun: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    api_name: str = "js.compile_profile",
) -> CompileProfile:
    """The ``CompileProfile`` of ``fun(*args, **kwargs)`` (see ``compile_profile``)."""
    compiles_so_far = _cj.jit_cache_size(fun)
    start = now()
    with TraceSampler() as sampler:
        staged_call = stage(
            fun,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            api_name=api_name,
            fresh=True,
        )
    trace_seconds = now() - start
    traced = staged_call.traced
    start = now()
    try:
        lowered = library_lowered(
            fun,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            api_name=api_name,
        )
        lowered = lowered if lowered is not None else traced.lower()
    except JaxscopeError:
        raise
    except Exception as exc:
        raise HloError(
            f"JAX could not lower the program ({type(exc).__name__}: "
            f"{first_line(str(exc))}); check the function with js.jaxpr first"
        ) from exc
    lower_seconds = now() - start
    start = now()
    try:
        compiled, _ = compile_dumping(lowered, {}, None, cold=True)
    except Exception as exc:
        raise HloError(
            f"XLA could not compile the program ({type(exc).__name__}: "
            f"{first_line(str(exc))})"
        ) from exc
    compile_seconds = now() - start
    stages = CompileStages(
        trace=trace_seconds, lower=lower_seconds, compile=compile_seconds
    )
    counts = count_eqns(traced.jaxpr)
    names = _constant_names(fun, counts)
    stable = parse_stablehlo(lowered.as_text(debug_info=True), current_program()).ops
    optimized = parse_hlo(compiled.as_text(), current_program()).ops
    samples = timed_samples(sampler.stacks, trace_seconds)
    profile = assemble(
        qualname(fun),
        stages,
        counts,
        stable,
        optimized,
        samples,
        names,
        len(sampler.stacks),
    )
    how = _SAMPLED_BY.get(sampler.method)
    if how is not None:
        ms = f"{sampler.interval * 1e3:g}"
        profile = dataclasses.replace(profile, trace_sampling=how.format(ms=ms))
    if compiles_so_far is not None:
        profile = dataclasses.replace(profile, compiles_so_far=compiles_so_far)
    return profile


# How the trace was sampled, where not by SIGALRM's wall-clock timer (the default).
_SAMPLED_BY = {
    "thread": (
        "sampled from a second thread every {ms} ms, as often as Python's switch "
        "interval lets it; each sample is weighted so the lines add up to the "
        "measured trace"
    ),
    "cpu": (
        "sampled every {ms} ms of CPU time or clock tick, whichever is longer (a "
        "CPU-time timer signal, as SIGALRM was in use); each sample is weighted so "
        "the lines add up to the measured trace"
    ),
}


def _constant_names(fun: Any, counts: EqnCounts) -> dict[Key, list[str]]:
    """The names the user's code gives the large constants it closes over: globals
    and closure cells of the function (and the functions it names) holding an
    array of the size embedded at that line."""
    wanted = {
        key: {size for _, size in consts}
        for key, consts in counts.constant_names.items()
        if sum(size for _, size in consts) >= CONSTANT_BYTES
    }
    if not wanted:
        return {}
    found: dict[Key, list[str]] = {}
    spaces = _namespaces(unwrap(fun))
    for key, sizes in wanted.items():
        names: list[str] = []
        for space in spaces:
            for name, value in space.items():
                size = _array_bytes(value)
                if size in sizes:
                    names.append(name)
        found[key] = list(dict.fromkeys(names))[:3]
    return found


def _array_bytes(value: Any) -> int:
    if isinstance(value, (np.ndarray, jax.Array)):
        return int(value.nbytes)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return -1


def _namespaces(fn: Any) -> list[dict[str, Any]]:
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return []
    spaces: list[dict[str, Any]] = []
    cells = getattr(fn, "__closure__", None) or ()
    closure: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            closure[name] = cell.cell_contents
        except ValueError:
            continue
    spaces.append(closure)
    spaces.append(getattr(fn, "__globals__", {}))
    return spaces


def assemble(
    function: str,
    stages: CompileStages,
    counts: EqnCounts,
    stable: list[Any],
    optimized: list[Any],
    samples: tuple[dict[Key, float], dict[Key, float], float, dict[Key, str]],
    names: dict[Key, list[str]],
    n_samples: int,
) -> CompileProfile:
    """The records of a profile from its measured parts."""
    stable_counts, stable_out, stable_locs, _ = ops_by_line(stable)
    hlo_counts, hlo_out, hlo_locs, opcodes = ops_by_line(optimized)
    own, cumulative, trace_out, sampled_names = samples
    total_hlo = len(optimized)
    keys: dict[Key, SourceLoc] = {k: line.source for k, line in counts.lines.items()}
    for table in (stable_locs, hlo_locs):
        for key, loc in table.items():
            keys.setdefault(key, loc)
    for key in (*own, *cumulative):
        if key not in keys:
            keys[key] = SourceLoc(
                file=key[0], line=key[1], function=sampled_names.get(key)
            )
    lines: list[LineCompileCost] = []
    for key, loc in keys.items():
        eq = counts.lines.get(key)
        hlo = hlo_counts.get(key, 0)
        lines.append(
            LineCompileCost(
                source=loc,
                code=_code(loc),
                eqns=eq.eqns if eq else 0,
                eqns_cumulative=eq.cumulative if eq else 0,
                body_eqns=eq.body_eqns if eq else 0,
                bodies=tuple(sorted(eq.bodies)) if eq else (),
                primitives=tuple(eq.primitives.most_common(8)) if eq else (),
                stablehlo_ops=stable_counts.get(key, 0),
                hlo_ops=hlo,
                hlo_opcodes=tuple(opcodes[key].most_common(8))
                if key in opcodes
                else (),
                constant_bytes=eq.constant_bytes if eq else 0,
                trace_seconds=own.get(key, 0.0),
                trace_seconds_cumulative=cumulative.get(key, 0.0),
                compile_seconds_estimate=(
                    stages.compile * hlo / total_hlo if total_hlo else 0.0
                ),
                frames=eq.frames if eq else (),
            )
        )
    lines.sort(key=lambda c: (-c.eqns, -c.hlo_ops, -c.trace_seconds))
    outside = LineCompileCost(
        source=None,
        code="(no line of your code: JAX's and XLA's own)",
        eqns=counts.outside_eqns,
        eqns_cumulative=counts.outside_eqns,
        stablehlo_ops=stable_out,
        hlo_ops=hlo_out,
        constant_bytes=counts.outside_constant_bytes,
        trace_seconds=trace_out,
        trace_seconds_cumulative=trace_out,
        compile_seconds_estimate=(
            stages.compile * hlo_out / total_hlo if total_hlo else stages.compile
        ),
    )
    diagnoses = (*unrolled_loops(counts), *baked_constants(counts, names))
    functions = tuple(
        FunctionCompileCost(name=name, eqns=n, called_at=at)
        for name, n, at in counts.functions
    )
    return CompileProfile(
        function=function,
        stages=stages,
        lines=tuple(lines),
        outside=outside,
        totals=CompileTotals(
            eqns=counts.total,
            stablehlo_ops=len(stable),
            hlo_ops=total_hlo,
            constant_bytes=counts.constant_bytes,
        ),
        diagnoses=diagnoses,
        functions=functions,
        trace_samples=n_samples,
    )


def _code(loc: SourceLoc) -> str:
    return source_text(raw_file(loc.file), loc.line)
