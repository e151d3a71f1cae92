"""Trace, lower and compile a user's function on example arguments; never run it."""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import jax
import numpy as np

from jaxscope._exceptions import InvalidCallError, TraceError
from jaxscope._format import a_an, qualname, short_repr, unwrap
from jaxscope._gc import full_collections_deferred
from jaxscope._source import (
    is_library_file,
    program,
    program_scope,
    user_frames_of_exception,
)
from jaxscope.compat import jaxpr as _cjaxpr
from jaxscope.compat import libraries as _clib
from jaxscope.compat import sharding as _csharding

R = TypeVar("R")
_DEPENDS_ON = re.compile(r"depends on the value of the argument ([^\s.]+)")
_ARRAY_IN_STATIC = re.compile(
    r"object of type <class '[\w.]*(?:ArrayImpl|ndarray|Array|Tracer)'>"
    r"|\b(?:Array|array)\(|Traced<"
)
_DEPENDS_ON_MANY = re.compile(
    r"depends on the values of the arguments (.+?)\.(?:\s|$)", re.MULTILINE
)
_ALLOWED_SCALARS = (bool, int, float, complex, np.generic)


def may_be_static(value: Any) -> bool:
    """Whether an argument seen inside a trace came from a Python value that
    ``static_argnums`` could take: every leaf a Python scalar (its tracer is
    weakly typed; a bool flag traces as ``bool[]``) or a plain hashable, in
    hashable containers (tuples, not lists or dicts). Arrays never may."""
    try:
        leaves, treedef = jax.tree_util.tree_flatten(value)
        hash(jax.tree_util.tree_unflatten(treedef, [0] * len(leaves)))
    except Exception:
        return False
    return all(_python_leaf(leaf) for leaf in leaves)


def python_values(value: Any) -> bool:
    """Whether every leaf of ``value`` came from a Python value (no array), though
    its containers may not be hashable (a dict of floats)."""
    try:
        leaves = jax.tree_util.tree_leaves(value)
    except Exception:
        return False
    return all(_python_leaf(leaf) for leaf in leaves)


def _python_leaf(leaf: Any) -> bool:
    if isinstance(leaf, (bool, int, float, complex, str)) or leaf is None:
        return True
    if not _csharding.is_tracer(leaf):
        return False
    aval = getattr(leaf, "aval", None)
    if getattr(aval, "shape", None) != ():
        return False
    dtype = getattr(aval, "dtype", None)
    return bool(getattr(aval, "weak_type", False)) or str(dtype) == "bool"


def _describe(value: Any) -> str:
    return short_repr(value, 40)


def param_names(fn: Any) -> list[str]:
    """The positional parameter names of ``fn``, seen through ``jax.jit``,
    ``functools.wraps`` and ``partial`` layers ([] when there is no signature); a
    bound method's without its ``self`` (``jax.jit(model.apply)``)."""
    target = fn
    for _ in range(10):
        if inspect.ismethod(target):
            break  # its signature leaves out the instance it is bound to
        inner = unwrap(target, limit=1)
        if inner is target:
            break
        target = inner
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return []
    return [
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]


def _entries(value: Any, single: type) -> tuple[Any, ...]:
    """``None`` -> ``()``, one value -> ``(value,)``, a sequence -> its tuple."""
    if value is None:
        return ()
    if isinstance(value, single) or not isinstance(value, Sequence):
        return (value,)
    return tuple(value)


def static_args(
    static_argnums: int | Sequence[int] | None,
    static_argnames: str | Sequence[str] | None,
    api_name: str = "jaxscope",
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``static_argnums`` / ``static_argnames`` as JAX accepts them, as two tuples.

    Raises:
        InvalidCallError: an entry that is not an int (a str for names).
    """
    nums = _entries(static_argnums, int)
    for i in nums:
        if not isinstance(i, int) or isinstance(i, bool):
            raise InvalidCallError(
                f"static_argnums must be ints, got {short_repr(i, 40)}; write e.g. "
                f"{api_name}(f, static_argnums=(1,))"
            )
    names = _entries(static_argnames, str)
    for name in names:
        if not isinstance(name, str):
            raise InvalidCallError(
                f"static_argnames must be strings, got {short_repr(name, 40)}; write "
                f"e.g. {api_name}(f, static_argnames=('n',))"
            )
    return nums, names


def staged(
    fun: Callable[..., Any],
    api_name: str,
    build: Callable[[Callable[..., Any], tuple[Any, ...], dict[str, Any]], R],
) -> Callable[..., R]:
    """The ``api(f)(*args)`` transform shape: check ``fun`` now, then each call of
    the result builds ``build(fun, args, kwargs)``, its sources mapped within
    ``fun``'s program (``_source.program``)."""
    check_callable(fun, api_name)

    @functools.wraps(fun)
    def call(*args: Any, **kwargs: Any) -> R:
        with program(program_scope(fun)):
            return build(fun, args, kwargs)

    return call


def _is_traceable_leaf(leaf: Any) -> bool:
    if isinstance(
        leaf, (jax.Array, np.ndarray, jax.ShapeDtypeStruct, *_ALLOWED_SCALARS)
    ):
        return True
    return hasattr(leaf, "__jax_array__") or (
        hasattr(leaf, "shape") and hasattr(leaf, "dtype")
    )


def check_example_args(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    static_argnums: Sequence[int],
    static_argnames: Sequence[str],
    api_name: str,
) -> None:
    """Raise ``InvalidCallError`` naming the first argument JAX cannot trace."""
    check_callable(fn, api_name)
    names = param_names(fn)
    statics = {i % len(args) if args and i < 0 else i for i in static_argnums}
    for i, arg in enumerate(args):
        if i in statics:
            continue
        name = names[i] if i < len(names) else f"argument {i}"
        _check_tree(arg, name, static_example(api_name, fn, argnum=i))
    for key, arg in kwargs.items():
        if key in static_argnames:
            continue
        _check_tree(arg, f"{key} (keyword)", static_example(api_name, fn, argname=key))


def _check_tree(tree: Any, name: str, static_fix: str) -> None:
    leaves_with_paths = jax.tree_util.tree_flatten_with_path(tree)[0]
    for path, leaf in leaves_with_paths:
        if _is_traceable_leaf(leaf):
            continue
        where = name + jax.tree_util.keystr(path)
        raise InvalidCallError(
            f"{where} is {a_an(type(leaf).__name__)} ({_describe(leaf)}), which JAX "
            f"cannot trace; pass it as a static argument ({static_fix}) or convert "
            "it to an array"
        )


@dataclass(frozen=True)
class MagicCall:
    """The magic being run: its name and other options (``%hlo --stage optimized``),
    the call typed after it and the static arguments it was given, so that a hint
    can be a command to paste."""

    command: str
    source: str
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()


_MAGIC_CALL: ContextVar[MagicCall | None] = ContextVar("jaxscope_magic", default=None)


@contextlib.contextmanager
def magic_call(call: MagicCall) -> Iterator[None]:
    """Within: hints about static arguments are worded as ``call``'s magic command."""
    token = _MAGIC_CALL.set(call)
    try:
        yield
    finally:
        _MAGIC_CALL.reset(token)


def static_example(
    api_name: str, fn: Any, *, argnum: int | None = None, argname: str | None = None
) -> str:
    """How to mark argument ``argnum`` (or keyword ``argname``) of ``fn`` static:
    the running magic's command with ``--static-argnums`` (ready to paste), else
    ``api_name(fn, static_argnums=(n,))(...)``."""
    call = _MAGIC_CALL.get()
    if call is not None:
        nums = call.static_argnums + ((argnum,) if argnum is not None else ())
        names = call.static_argnames + ((argname,) if argname is not None else ())
        options = ""
        if nums:
            options += f" --static-argnums {','.join(str(n) for n in nums)}"
        if names:
            options += f" --static-argnames {','.join(names)}"
        return f"{call.command}{options} {call.source}"
    name = getattr(unwrap(fn), "__name__", "f")
    if api_name.startswith("%"):
        option = (
            f"--static-argnums {argnum}"
            if argnum is not None
            else f"--static-argnames {argname}"
        )
        return f"{api_name} {option} {name}(...)"
    static = (
        f"static_argnums=({argnum},)"
        if argnum is not None
        else f"static_argnames=('{argname}',)"
    )
    return f"{api_name}({name}, {static})(...)"


def function_name(fn: Any) -> str:
    """The user's name for ``fn`` (through ``jax.jit`` and ``functools.wraps``)."""
    return qualname(fn)


def check_callable(fn: Any, api_name: str) -> None:
    """Raise ``InvalidCallError`` unless ``fn`` is callable."""
    if not callable(fn):
        raise InvalidCallError(
            f"{api_name} expects a callable; got {type(fn).__name__} "
            f"{_describe(fn)}: pass the function itself, e.g. {api_name}(f)(x)"
        )


@dataclass(frozen=True)
class Staged:
    """A traced call: JAX's ``Traced`` and the pytree of values it was traced with.

    ``inputs`` is what the staged function receives, once static arguments (or, for
    ``eqx.filter_jit``, non-array leaves; for ``nnx.jit``, the graph's static parts)
    are taken out: its leaves line up, in order, with the jaxpr's input variables.
    """

    traced: Any
    inputs: Any
    input_names: tuple[str, ...] = ()
    """The user's name of each of the jaxpr's inputs (``params['w']``,
    ``model.linear1.kernel``, ``x (keyword)``), where they could be read."""
    outputs: Callable[[Any], tuple[Any, tuple[str, ...]]] | None = None
    """Makes what the call returns from the jaxpr's outputs (as ``out_tree``
    unflattens them), where the two differ, with the state the call would write
    back into its arguments (``("model.bn.mean", ...)``): ``eqx.filter_jit`` puts
    back the non-array leaves it kept out of the trace, ``nnx.jit`` merges its
    graph states (into copies)."""


def trace(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    api_name: str = "jaxscope",
) -> Any:
    """``jax.stages.Traced`` for ``fn(*args, **kwargs)``, traced only, never executed.

    A ``jax.jit``-wrapped ``fn`` (given no extra static arguments here) is traced through
    its own ``.trace``, so its statics, shardings and donation are respected; JAX
    caches that trace. ``nnx.jit`` and ``eqx.filter_jit`` functions are traced as
    those libraries trace them. Any other callable is traced through a fresh wrapper,
    so each call re-runs its Python (side effects included) against the current
    globals.
    """
    return stage(
        fn,
        args,
        kwargs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        api_name=api_name,
    ).traced


def stage(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    api_name: str = "jaxscope",
    fresh: bool = False,
) -> Staged:
    """``trace``, also returning the values the staged function was traced with.

    ``fresh``: a cold trace that runs the user's Python: a ``jax.jit`` wrapper's
    function is traced again (with its statics) rather than through its own
    ``.trace``, which may reuse a cached trace, and an ``nnx.jit`` wrapper is traced
    as a new wrapper of its function; JAX's caches for the user's own wrapper are
    neither read nor filled (compile profiles time the trace; the stepper reads the
    user's locals as it runs).
    """
    if fresh:
        fn = _clib.fresh_nnx_jit(fn) if _clib.is_nnx_jit(fn) else fn
    with full_collections_deferred():
        return _stage(
            fn, args, kwargs, static_argnums, static_argnames, api_name, fresh
        )


def _stage(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    static_argnums: int | Sequence[int],
    static_argnames: str | Sequence[str],
    api_name: str,
    fresh: bool = False,
) -> Staged:
    check_callable(fn, api_name)
    nums, names = static_args(static_argnums, static_argnames, api_name)
    args = tuple(args)
    try:
        if not nums and not names and _clib.is_equinox_filter_jit(fn):
            return _stage_equinox(fn, args, kwargs)
        if not nums and not names and _clib.is_equinox_filtered_transform(fn):
            # eqx.filter_value_and_grad & co. filter themselves: trace the wrapper
            return _stage_equinox(fn, args, kwargs, call=fn)
        if not nums and not names and _clib.is_equinox_filter_pmap(fn):
            # the wrapper itself is staged: it maps the arrays over the devices
            return _stage_equinox(fn, args, kwargs, call=fn)
        if not nums and not names and _clib.is_nnx_jit(fn):
            traced = _clib.jax_stage(getattr(fn, "trace")(*args, **kwargs))  # noqa: B009
            pure_args, pure_kwargs = _clib.nnx_pure_arguments(fn, args, kwargs)
            own_nums, own_names = _clib.nnx_static_args(fn)
            inputs = _dynamic_part(pure_args, pure_kwargs, own_nums, own_names)
            user = _dynamic_part(args, kwargs, own_nums, own_names)
            positions = _positions(len(args), own_nums)
            names = _nnx_input_names(fn, positions, *user, inputs)
            return Staged(traced, inputs, names, _nnx_outputs(fn, args, kwargs))
    except InvalidCallError:
        raise
    except Exception as exc:
        raise trace_error(fn, exc, api_name) from exc
    _check_static_argnums(nums, len(args), api_name)
    if getattr(fn, "trace", None) is None:
        nums, names = _with_python_constants(args, kwargs, nums, names)
    own_statics = _own_static_args(fn)
    all_nums, all_names = nums + own_statics[0], names + own_statics[1]
    check_example_args(fn, args, kwargs, all_nums, all_names, api_name)
    try:
        own_trace = getattr(fn, "trace", None)
        wrapped = getattr(fn, "__wrapped__", None)
        refresh = fresh and callable(wrapped)
        if own_trace is not None and not nums and not names and not refresh:
            traced = _clib.jax_stage(own_trace(*args, **kwargs))
        else:
            target = fn if own_trace is not None else _fresh(fn)
            if own_trace is not None and callable(wrapped):
                # Re-jitting a jax.jit wrapper cannot make its arguments static (it
                # traces them again): stage the function it wraps, with its statics.
                target = _fresh(wrapped)
                nums = tuple(dict.fromkeys(all_nums))
                names = tuple(dict.fromkeys(all_names))
            if own_trace is None:  # a jax.pmap's static arguments stay static
                nums = tuple(dict.fromkeys(all_nums))
            jitted = jax.jit(target, static_argnums=nums, static_argnames=names)
            traced = jitted.trace(*args, **kwargs)
            all_nums, all_names = _cjaxpr.jit_static_args(jitted) or (nums, names)
    except InvalidCallError:
        raise
    except Exception as exc:
        raise trace_error(fn, exc, api_name) from exc
    inputs = _dynamic_part(args, kwargs, all_nums, all_names)
    positions = _positions(len(args), all_nums)
    return Staged(traced, inputs, _input_names(fn, positions, inputs))


def _positions(n_args: int, static_argnums: Sequence[int]) -> list[int]:
    """The positions of the dynamic (not static) positional arguments."""
    statics = {n % n_args if n < 0 and n_args else n for n in static_argnums}
    return [i for i in range(n_args) if i not in statics]


def _is_python_constant(value: Any) -> bool:
    """Whether ``value`` is Python data a function reads as a constant, never an
    array: a string, a dtype, or a tuple of ints, strings and such (a shape, axes, a
    mode). A plain number is not: JAX traces it, as ``jax.jit`` would."""
    if isinstance(value, str) or _is_dtype(value):
        return True
    if isinstance(value, tuple):
        items: tuple[Any, ...] = value
        return all(
            value is None
            or (isinstance(value, int) and not isinstance(value, bool))
            or _is_python_constant(value)
            for value in items
        )
    return False


def _is_dtype(value: Any) -> bool:
    """A dtype, or a type that names one (``jnp.float16``, ``np.int8``, ``float``)."""
    if isinstance(value, np.dtype):
        return True
    if not isinstance(value, type):
        return False
    try:
        np.dtype(value)
    except TypeError:
        return False
    return True


def _with_python_constants(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    nums: tuple[int, ...],
    names: tuple[str, ...],
) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """``nums``/``names`` with every argument that is Python data (see
    ``_is_python_constant``) added: ``jnp.reshape(x, (32, 32))`` stages as its
    user means it, the shape static, where jitting it as it stands traces the ints
    and fails."""
    given = {n % len(args) if n < 0 and args else n for n in nums}
    more = tuple(
        i for i, arg in enumerate(args) if i not in given and _is_python_constant(arg)
    )
    more_names = tuple(
        k for k, v in kwargs.items() if k not in names and _is_python_constant(v)
    )
    return nums + more, names + more_names


def _leaf_names(tree: Any, prefix: str) -> list[str]:
    # An NNX Variable is named by its attribute path (model.linear.kernel), as
    # nnx.jit's inputs are, not by the pytree key of its value (...kernel.value).
    paths = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_clib.is_nnx_variable)[0]
    names: list[str] = []
    for path, leaf in paths:
        name = prefix + jax.tree_util.keystr(path)
        if not _clib.is_nnx_variable(leaf):
            names.append(name)
            continue
        inner = jax.tree_util.tree_flatten_with_path(leaf)[0]
        if len(inner) == 1:
            names.append(name)
        else:
            names += [name + jax.tree_util.keystr(p[1:]) for p, _ in inner]
    return names


def _input_names(
    fn: Any, positions: Sequence[int], inputs: tuple[tuple[Any, ...], dict[str, Any]]
) -> tuple[str, ...]:
    """Each input leaf named by the parameter it is passed as, then its pytree path."""
    params = param_names(fn)
    dynamic_args, dynamic_kwargs = inputs
    names: list[str] = []
    for position, arg in zip(positions, dynamic_args, strict=True):
        prefix = params[position] if position < len(params) else f"args[{position}]"
        names += _leaf_names(arg, prefix)
    for key in sorted(dynamic_kwargs):  # JAX flattens a dict by sorted key
        names += _leaf_names(dynamic_kwargs[key], key)
    return tuple(names)


def _nnx_input_names(
    fn: Any,
    positions: Sequence[int],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    inputs: Any,
) -> tuple[str, ...]:
    """``model.linear1.kernel`` for the state leaves of NNX arguments; plain names
    for the rest (``args`` are the dynamic ones, at ``positions`` of the call).
    Empty when the counts do not line up (names would be wrong)."""
    params = param_names(fn)
    names: list[str] = []
    pure_args, pure_kwargs = inputs
    seen: set[int] = set()  # Variables an earlier argument passes
    for position, arg, pure in zip(positions, args, pure_args, strict=True):
        prefix = params[position] if position < len(params) else f"args[{position}]"
        paths = _clib.nnx_state_paths(arg, seen)
        n_leaves = len(jax.tree_util.tree_leaves(pure))
        if paths is not None and len(paths) == n_leaves:
            names += [f"{prefix}.{path}" for path in paths]
        elif paths is None:
            names += _leaf_names(arg, prefix)
        else:
            return ()
    for key in sorted(kwargs):  # JAX flattens a dict by sorted key
        names += _leaf_names(kwargs[key], key)
    expected = len(jax.tree_util.tree_leaves((pure_args, pure_kwargs)))
    return tuple(names) if len(names) == expected else ()


def _nnx_outputs(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Callable[[Any], tuple[Any, tuple[str, ...]]]:
    """``Staged.outputs`` of an ``nnx.jit`` call: its return value and the
    ``param.path`` of each Variable it would update."""
    params = param_names(fn)

    def outputs(pure: Any) -> tuple[Any, tuple[str, ...]]:
        out, updated = _clib.nnx_call_output(fn, args, kwargs, pure)
        named = tuple(
            f"{params[i] if i < len(params) else f'args[{i}]'}.{path}"
            for i, path in updated
        )
        return out, named

    return outputs


def _dynamic_part(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    static_argnums: Sequence[int],
    static_argnames: Sequence[str],
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    statics = {n % len(args) if n < 0 and args else n for n in static_argnums}
    dynamic_args = tuple(a for i, a in enumerate(args) if i not in statics)
    dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
    return dynamic_args, dynamic_kwargs


def _stage_equinox(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    call: Callable[..., Any] | None = None,
) -> Staged:
    # eqx.filter_jit (and filter_pmap) trace array leaves and treat every other leaf
    # (ints, functions, activation choices) as static; the static part is closed
    # over, never hashed. ``call`` runs in the trace: the user's function by default.
    import equinox as eqx

    user_fn = unwrap(fn)
    target = user_fn if call is None else call
    dynamic, static = eqx.partition((args, kwargs), eqx.is_array)
    static_out: list[Any] = []

    @functools.wraps(user_fn)
    def with_static(dynamic: Any) -> Any:
        call_args, call_kwargs = eqx.combine(dynamic, static)
        out_dynamic, out_static = eqx.partition(
            target(*call_args, **call_kwargs), eqx.is_array
        )
        static_out[:] = [out_static]
        return out_dynamic

    traced = jax.jit(with_static).trace(dynamic)
    dynamic_args, dynamic_kwargs = dynamic
    names = _input_names(fn, range(len(args)), (dynamic_args, dynamic_kwargs))

    def outputs(out_dynamic: Any) -> tuple[Any, tuple[str, ...]]:
        # what the wrapper returns: the traced arrays with the rest put back
        if not static_out:
            return out_dynamic, ()
        return eqx.combine(out_dynamic, static_out[0]), ()

    return Staged(traced, dynamic, names, outputs)


def _fresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    # JAX caches traces per function object: a second jit(f).trace(x) reuses the first
    # jaxpr and skips f's Python side effects, and misses globals changed since. A new
    # wrapper per call makes every view a fresh trace of the code as it is now.
    @functools.wraps(fn)
    def fresh(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return fresh


def _check_static_argnums(nums: tuple[int, ...], n_args: int, api_name: str) -> None:
    for i in nums:
        if not -n_args <= i < n_args:
            raise InvalidCallError(
                f"static_argnums=({i},) but the call has {n_args} positional "
                f"argument(s); use an index below {n_args} or static_argnames for "
                "keyword arguments"
            )


def _own_static_args(fn: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """A ``jax.jit`` wrapper's statics, or a ``jax.pmap``'s static broadcasted ones."""
    return _cjaxpr.jit_static_args(fn) or ((_cjaxpr.pmap_static_argnums(fn) or ()), ())


def first_line(message: str) -> str:
    """The first non-empty line of an exception message."""
    for line in str(message).splitlines():
        if line.strip():
            return line.strip()
    return ""


def trace_error(fn: Any, exc: BaseException, api_name: str) -> TraceError:
    """A one-line ``TraceError`` for an exception raised while tracing ``fn``."""
    fn_name = getattr(unwrap(fn), "__name__", type(fn).__name__)
    frames = user_frames_of_exception(exc)
    own = [loc for loc in frames if not is_library_file(loc.file)]
    where = f" at {(own or frames)[-1]}" if frames else ""
    kind = type(exc).__name__
    text = first_line(str(exc))
    hint = _hint(fn, exc, api_name)
    message = f"{fn_name} raised {kind}{where} while being traced: {text}"
    if hint:
        message += f"; {hint}"
    return TraceError(message)


_TRACING_FN = re.compile(r"while tracing the function (\S+) at")


def _hint(fn: Any, exc: BaseException, api_name: str) -> str:
    text = str(exc)
    control_flow = isinstance(
        exc,
        (
            jax.errors.TracerBoolConversionError,
            jax.errors.ConcretizationTypeError,
            jax.errors.TracerIntegerConversionError,
        ),
    )
    if text.startswith("Non-hashable static arguments"):
        if _ARRAY_IN_STATIC.search(text):
            return (
                "a static argument holds arrays, and arrays cannot be static: drop "
                "it from the static arguments so it is traced"
            )
        return (
            "static arguments must be hashable: pass a tuple instead of a list, a "
            "tuple of pairs or a frozen dataclass instead of a dict"
        )
    if not control_flow:
        return ""
    user = unwrap(fn)
    code = getattr(user, "__code__", None)
    many = _DEPENDS_ON_MANY.search(text)
    if many:
        roots = dict.fromkeys(
            re.split(r"[\[.]", a.strip(), maxsplit=1)[0]
            for a in re.split(r",\s*(?:and\s+)?|\s+and\s+", many.group(1))
            if a.strip()
        )
        arrays = [
            r
            for r in roots
            if (v := _traced_local(exc, code, r)) is not _UNSEEN
            and not may_be_static(v)
        ]
        if arrays:
            return (
                f"Python control flow depends on {', '.join(arrays)}, which cannot be "
                "static (arrays or unhashable values): write the branch with arrays "
                "(jnp.where, jax.lax.cond); calling it in a cell shows the rewrite in "
                "your names"
            )
    match = _DEPENDS_ON.search(text)
    if not match:
        return (
            "Python control flow needs a concrete value: use lax.cond / jnp.where "
            "or a static argument"
        )
    arg = match.group(1)
    root = re.split(r"[\[.]", arg, maxsplit=1)[0]
    own_names = {getattr(user, "__name__", None), getattr(user, "__qualname__", None)}
    traced = _TRACING_FN.search(text)
    if traced and traced.group(1) not in own_names:
        # The value-dependent branch is inside another jitted function f calls.
        inner = traced.group(1)
        return (
            f"Python control flow in {inner} depends on the value of its argument "
            f"{arg}: mark it static where {inner} is jitted (jax.jit({inner}, "
            f"static_argnames=('{root}',))) or use lax.cond / jnp.where"
        )
    value = _traced_local(exc, code, root)
    if value is not _UNSEEN and not may_be_static(value):
        what = (
            f"{a_an(type(value).__name__)} (not hashable)"
            if python_values(value)
            else "an array"
        )
        return (
            f"Python control flow depends on the value of argument {arg}; {root} is "
            f"{what}, which cannot be static: write the branch with arrays "
            "(jnp.where, jax.lax.cond); calling it in a cell shows the rewrite in "
            "your names"
        )
    names = param_names(user)
    static = (
        static_example(api_name, fn, argnum=names.index(root))
        if root in names
        else static_example(api_name, fn, argname=root)
    )
    return (
        f"Python control flow depends on the value of argument {arg}: mark it "
        f"static ({static}) or use lax.cond / jnp.where"
    )


_UNSEEN = object()


def _traced_local(exc: BaseException, code: Any, name: str) -> Any:
    """The value ``name`` had in the frame of ``code`` when ``exc`` was raised
    (``_UNSEEN`` when that frame is not in the traceback)."""
    import traceback

    if code is None:
        return _UNSEEN
    for frame, _line in traceback.walk_tb(exc.__traceback__):
        if frame.f_code is code and name in frame.f_locals:
            return frame.f_locals[name]
    return _UNSEEN


def lower(traced: Any) -> Any:
    """``jax.stages.Lowered`` for a ``Traced``."""
    return traced.lower()


# A compiler option that only changes the persistent cache key: a dump-only flag at
# its default value (JAX strips the other dump flags from the key, not this one).
_CACHE_KEY_CHANGE = {"xla_dump_large_constants": False}


def _persistent_cache_on() -> bool:
    config: Any = jax.config  # its flags are attributes pyright cannot see
    directory = getattr(config, "jax_compilation_cache_dir", None)
    return bool(config.jax_enable_compilation_cache and directory)


def _compile_with(
    lowered: Any,
    options: dict[str, Any],
    compile: Callable[[Any, dict[str, Any]], Any] | None,
) -> Any:
    if compile is not None:
        return compile(lowered, options)
    if not options:
        return lowered.compile()
    try:
        return lowered.compile(compiler_options=options)
    except TypeError:  # a Lowered without compiler_options
        return lowered.compile()


def compile_dumping(
    lowered: Any,
    options: dict[str, Any],
    read: Callable[[str, Any], R | None] | None,
    *,
    prefix: str = "jaxscope-",
    compile: Callable[[Any, dict[str, Any]], Any] | None = None,
    cold: bool = False,
) -> tuple[Any, R | None]:
    """``lowered`` compiled with XLA's dump in a temporary folder, and what
    ``read(folder, compiled)`` finds there (None: nothing).

    A persistent-compilation-cache hit runs no XLA pass and so dumps nothing: the
    compile is then redone once under a cache key no entry has and with this
    thread's cache writes off, so it misses now and stores nothing. No JAX flag
    changes, for this thread or another, whether the cache is on globally or by a
    thread-local override. Every feature that reads XLA's dumps compiles here.

    ``read=None``: no dump, the compile alone. ``cold``: the persistent cache is
    neither read nor written from the first compile on (the same unused key, the
    same thread-local no-writes context), so XLA really compiles: what
    ``js.compile_profile`` times.
    """

    def once(extra: dict[str, Any]) -> tuple[Any, R | None]:
        if read is None:  # no dump wanted: a compile alone
            return _compile_with(lowered, {**options, **extra}, compile), None
        with tempfile.TemporaryDirectory(
            prefix=prefix, ignore_cleanup_errors=True
        ) as folder:
            all_options = {"xla_dump_to": folder, **options, **extra}
            compiled = _compile_with(lowered, all_options, compile)
            return compiled, read(folder, compiled)

    if cold and _persistent_cache_on():
        no_writes = _csharding.no_persistent_cache_writes()
        if no_writes is not None:
            with no_writes:
                return once(_CACHE_KEY_CHANGE)
    compiled, found = once({})
    if found is None and _persistent_cache_on():
        no_writes = _csharding.no_persistent_cache_writes()
        if no_writes is not None:
            with no_writes:
                again, found = once(_CACHE_KEY_CHANGE)
            compiled = again if found is not None else compiled
    return compiled, found


def library_lowered(
    fn: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    api_name: str = "jaxscope",
) -> Any:
    """The ``jax.stages.Lowered`` an ``eqx.filter_jit`` function's own ``lower``
    makes (given no extra static arguments here): the program Equinox runs, its
    donation and output marker included, where ``stage`` traces the user's function
    as Equinox partitions it. None for any other callable."""
    if static_argnums or static_argnames or not _clib.is_equinox_filter_jit(fn):
        return None
    try:
        return _clib.jax_stage(getattr(fn, "lower")(*args, **kwargs))  # noqa: B009
    except Exception as exc:
        raise trace_error(fn, exc, api_name) from exc
