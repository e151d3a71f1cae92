# pyright: strict
"""``js.diff``: two views, two functions on the same arguments, or one function on
two argument sets, compared by the user's source line."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from jaxscope._diff.facts import ProgramFacts, can_compare, program_facts
from jaxscope._diff.model import ProgramDiff, compare
from jaxscope._exceptions import InvalidCallError
from jaxscope._format import a_an, qualname
from jaxscope._gc import gc_paused
from jaxscope._recompiles.records import Cause
from jaxscope._staging import static_args

_TYPE = re.compile(r"^([A-Za-z0-9_]+)\[(.*)\]( \(weak: Python scalar\))?$")
_FORMS = (
    "js.diff(view_a, view_b), js.diff(f_old, f_new)(*args) or "
    "js.diff(f)(args_a, args_b)"
)


def diff(
    a: Any,
    b: Any = None,
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    hlo: bool = True,
    tolerances: Mapping[str, float] | None = None,
) -> Any:
    """What changed between two programs, by the user's source line.

    Three forms: ``js.diff(view_a, view_b)`` compares two views of the same kind
    (``JaxprView``, ``HloView``, ``MemoryView``, ``ProgramShardingView``,
    ``CompileProfile``);
    ``js.diff(f_old, f_new)(*args, **kwargs)`` traces (and, with ``hlo``, compiles)
    two functions on the same arguments; ``js.diff(f)(args_a, args_b)`` one function
    on two argument sets (each a tuple of positional arguments, or one argument),
    with the causes worded as the recompile watcher words them. Nothing is run.

    Args:
        a: a view, or a function (the old one, or the only one).
        b: a view of the same kind as ``a``, the new function, or None (one
            function on two argument sets).
        static_argnums: positional arguments passed as Python values, as
            ``js.jaxpr`` takes them (function forms).
        static_argnames: keyword arguments passed as Python values (function forms).
        hlo: also compare the optimized HLO (ops, flops, bytes, collectives per
            line); compiles each program once (function forms).
        tolerances: relative tolerances per number (``{"flops": 0.02}``) under which
            a difference counts as none.

    Returns:
        A ``ProgramDiff`` (for views), or a function returning one.

    Raises:
        InvalidCallError: inputs that are neither views of one kind nor functions.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> def f(x):
        ...     return jnp.sin(x) * 2
        >>> d = js.diff(f, hlo=False)((jnp.ones(3, jnp.float32),), (jnp.ones(3, jnp.bfloat16),))
        >>> [c.kind for c in d.causes]
        ['dtype']
    """
    _check_options(hlo, tolerances)
    if b is None:
        if can_compare(a):
            raise InvalidCallError(
                "js.diff: one view given; pass two views of the same kind, e.g. "
                "js.diff(js.jaxpr(f)(x), js.jaxpr(g)(x))"
            )
        _check_function(a, "a")
        return _one_function(a, static_argnums, static_argnames, hlo, tolerances)
    if can_compare(a) or can_compare(b):
        return diff_views(a, b, tolerances=tolerances)
    _check_function(a, "a")
    _check_function(b, "b")
    return _two_functions(a, b, static_argnums, static_argnames, hlo, tolerances)


def _check_options(hlo: Any, tolerances: Any) -> None:
    if not isinstance(hlo, bool):
        raise InvalidCallError(
            f"js.diff: hlo must be True or False, got {hlo!r}; write hlo=False to "
            "compare jaxprs only"
        )
    if tolerances is None:
        return
    ok = isinstance(tolerances, Mapping) and all(
        isinstance(k, str) and isinstance(v, (int, float)) and v >= 0
        for k, v in tolerances.items()  # pyright: ignore[reportUnknownVariableType]
    )
    if not ok:
        raise InvalidCallError(
            f"js.diff: tolerances must map number names to relative tolerances >= 0, "
            f"got {tolerances!r}; write e.g. tolerances={{'flops': 0.02}}"
        )


def _check_function(fn: Any, which: str) -> None:
    if not callable(fn):
        raise InvalidCallError(
            f"js.diff: {which} is {a_an(type(fn).__name__)}, neither a view nor a "
            f"function; use {_FORMS}"
        )


def diff_views(
    a: Any, b: Any, *, tolerances: Mapping[str, float] | None = None
) -> ProgramDiff:
    """Two views of the same kind compared."""
    for which, view in (("a", a), ("b", b)):
        if not can_compare(view):
            raise InvalidCallError(
                f"js.diff: {which} is {a_an(type(view).__name__)}, not a view js.diff "
                f"can compare; use {_FORMS}"
            )
    if type(a) is not type(b):
        raise InvalidCallError(
            f"js.diff: a is {a_an(type(a).__name__)} but b is {a_an(type(b).__name__)}; "
            "pass two views of the same kind"
        )
    stages = (getattr(a, "stage", None), getattr(b, "stage", None))
    if stages[0] != stages[1]:
        raise InvalidCallError(
            f"js.diff: a is {stages[0]!r} HLO but b is {stages[1]!r} HLO; "
            "compare two views of the same stage"
        )
    with gc_paused():  # records only: each collection would rescan them for nothing
        fa, fb = program_facts(a), program_facts(b)
        causes = input_causes(fa.inputs, fb.inputs) if fa.inputs or fb.inputs else []
        return compare(fa, fb, causes=causes, tolerances=tolerances)


def program_of(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    static_argnums: int | Sequence[int],
    static_argnames: str | Sequence[str],
    hlo: bool,
) -> ProgramFacts:
    """The facts of ``fn(*args, **kwargs)``: jaxpr, and with ``hlo`` optimized HLO."""
    from jaxscope._hlo.api import hlo as hlo_of
    from jaxscope._jaxpr.api import jaxpr

    facts = program_facts(
        jaxpr(fn, static_argnums=static_argnums, static_argnames=static_argnames)(
            *args, **kwargs
        )
    )
    if hlo:
        view = hlo_of(
            fn,
            stage="optimized",
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        )(*args, **kwargs)
        facts = facts.merged(program_facts(view))
    return facts


def _two_functions(
    f_old: Callable[..., Any],
    f_new: Callable[..., Any],
    static_argnums: int | Sequence[int],
    static_argnames: str | Sequence[str],
    hlo: bool,
    tolerances: Mapping[str, float] | None,
) -> Callable[..., ProgramDiff]:
    def call(*args: Any, **kwargs: Any) -> ProgramDiff:
        fa = program_of(f_old, args, kwargs, static_argnums, static_argnames, hlo)
        fb = program_of(f_new, args, kwargs, static_argnums, static_argnames, hlo)
        with gc_paused():
            return compare(fa, fb, causes=[], tolerances=tolerances)

    return call


def _as_args(value: Any) -> tuple[Any, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(cast("Sequence[Any]", value))
    return (value,)


def _one_function(
    fn: Callable[..., Any],
    static_argnums: int | Sequence[int],
    static_argnames: str | Sequence[str],
    hlo: bool,
    tolerances: Mapping[str, float] | None,
) -> Callable[..., ProgramDiff]:
    nums, names = static_args(static_argnums, static_argnames, "js.diff")

    def call(args_a: Any, args_b: Any, **extra: Any) -> ProgramDiff:
        if extra:
            raise InvalidCallError(
                f"js.diff(f) takes two argument sets, got keywords {sorted(extra)}; "
                "write js.diff(f)((x1, y1), (x2, y2))"
            )
        a, b = _as_args(args_a), _as_args(args_b)
        return diff_calls(
            (fn, a, {}),
            (fn, b, {}),
            static_argnums=nums,
            static_argnames=names,
            hlo=hlo,
            tolerances=tolerances,
        )

    return call


def diff_calls(
    a: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]],
    b: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    hlo: bool = True,
    tolerances: Mapping[str, float] | None = None,
) -> ProgramDiff:
    """``fn_a(*args_a, **kwargs_a)`` against ``fn_b(...)`` (``%jaxdiff``); the
    causes are worded when both call the same function."""
    nums, names = static_args(static_argnums, static_argnames, "js.diff")
    fa = program_of(a[0], a[1], a[2], nums, names, hlo)
    fb = program_of(b[0], b[1], b[2], nums, names, hlo)
    causes = call_causes(a, b, nums, names) if a[0] is b[0] else []
    with gc_paused():
        return compare(fa, fb, causes=causes, tolerances=tolerances)


def call_causes(
    a: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]],
    b: tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]],
    nums: tuple[int, ...],
    names: tuple[str, ...],
) -> list[Cause]:
    """Why two calls of one function are two programs, as a recompile would say."""
    from jaxscope._recompiles.causes import diff as key_diff
    from jaxscope._recompiles.signature import call_signature

    try:
        before = call_signature(a[0], a[1], a[2], nums, names)
        after = call_signature(b[0], b[1], b[2], nums, names)
    except Exception:
        return []  # the programs still compare; only the wording of causes is lost
    return key_diff(before, after, qualname(a[0]))


def input_causes(
    a: tuple[tuple[str, str], ...], b: tuple[tuple[str, str], ...]
) -> list[Cause]:
    """The input changes as the recompile watcher words them (shape, dtype, weak
    type, an input passed or not), from two views' input types."""
    from jaxscope._recompiles.causes import diff as key_diff
    from jaxscope._recompiles.signature import Arg, Leaf, Signature

    def signature(inputs: tuple[tuple[str, str], ...]) -> Signature:
        args: list[Arg] = []
        for name, text in inputs:
            found = _TYPE.match(text)
            if found is None:
                continue
            leaf = Leaf(found.group(2), found.group(1), bool(found.group(3)), None, "")
            args.append(
                Arg(base=name, keyword=False, treedef="*", leaves=(((), leaf),))
            )
        return Signature(None, None, (), tuple(args))

    return key_diff(signature(a), signature(b), "the function")
