"""Executing one jaxpr equation eagerly, as ``jax.core.eval_jaxpr`` does.

Relies on ``Primitive.get_bind_params`` (a ``(subfuns, params)`` tuple before jax 0.9,
a dict that may hold ``subfuns`` from 0.9 on), ``Primitive.bind``,
``Primitive.multiple_results`` and ``JaxprEqn.ctx`` (``JaxprEqnContext`` and its
``manager``). Checked on jax 0.9.0 and 0.10.2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxscope.compat import PrivateModule, private, require
from jaxscope.compat.source import attributes_to

_core = PrivateModule("jax._src.core", "compat.stepper")


def default_context() -> Any:
    """The equation context of code traced now (None when this JAX has none); pass it
    to ``binder`` for many equations, as making one costs more than a bind."""
    cls = getattr(_core, "JaxprEqnContext", None)
    if cls is None:
        return None
    try:
        return cls()
    except TypeError:
        return None


_UNSET: Any = object()


def binder(eqn: Any, default: Any = _UNSET) -> Callable[[Sequence[Any]], list[Any]]:
    """A function running ``eqn`` on concrete inputs and returning its outputs as a list.

    The equation's own context (``threefry_partitionable``, compute type, mesh) is
    entered only when it differs from the current one, which keeps the common case
    as cheap as a bare ``bind``. ``default`` is ``default_context()``, made once by
    a caller binding many equations.

    Relies on: ``Primitive.get_bind_params``, ``Primitive.bind``,
    ``Primitive.multiple_results``, ``JaxprEqn.ctx.manager`` (interned contexts).
    """
    get = require(eqn.primitive, "get_bind_params", "compat.stepper.binder")
    raw = get(eqn.params)
    if isinstance(raw, tuple):  # jax < 0.9: bind(*subfuns, *args, **params)
        subfuns, params = tuple(raw[0]), dict(raw[1])
    else:  # jax >= 0.9: subfuns travel as a keyword, as in core.eval_jaxpr
        subfuns, params = (), dict(raw)
    bind = eqn.primitive.bind
    multiple = bool(eqn.primitive.multiple_results)
    ctx = getattr(eqn, "ctx", None)
    manager = None
    if default is _UNSET:
        default = default_context()
    if ctx is not None and ctx is not default:
        manager = getattr(ctx, "manager", None)

    if manager is None:
        if subfuns:

            def run(args: Sequence[Any]) -> list[Any]:
                out = bind(*subfuns, *args, **params)
                return list(out) if multiple else [out]

        elif multiple:

            def run(args: Sequence[Any]) -> list[Any]:
                return list(bind(*args, **params))

        else:

            def run(args: Sequence[Any]) -> list[Any]:
                return [bind(*args, **params)]

        return run

    def run_in_context(args: Sequence[Any]) -> list[Any]:
        with manager:
            out = bind(*subfuns, *args, **params)
        return list(out) if multiple else [out]

    return run_in_context


def frame_offsets(eqn: Any) -> list[int]:
    """The bytecode offset of each frame ``compat.source.frames_of`` gives for the
    equation's traceback (innermost first): which instruction of its line each frame
    was running, so that two runs of one line (a Python loop) can be told apart.

    Relies on: ``JaxprEqn.source_info.traceback``, ``Traceback.raw_frames()`` and
    ``source_info_util.is_user_filename`` (what ``frames_of`` relies on).
    """
    traceback = getattr(getattr(eqn, "source_info", None), "traceback", None)
    if traceback is None:
        return []
    needed_by = "compat.stepper.frame_offsets"
    siu = private("jax._src.source_info_util", needed_by)
    is_user = require(siu, "is_user_filename", needed_by)
    codes, offsets = require(traceback, "raw_frames", needed_by)()
    return [
        int(offset)
        for code, offset in zip(codes, offsets, strict=True)
        if attributes_to(code.co_filename, is_user)
    ]


def traced_atom(value: Any) -> Any:
    """The jaxpr variable (or literal) a tracer of the program being traced stands
    for: a ``jit`` tracer's own, a ``jvp``/``linearize`` tracer's primal's; None for
    anything else (a concrete value, a ``vmap`` tracer, whose value is batched).

    Relies on: ``DynamicJaxprTracer.val`` (the ``Var``) and ``JVPTracer.primal`` /
    ``LinearizeTracer.primal``. Checked on jax 0.10.2; None where absent.
    """
    for _ in range(8):
        kind = type(value).__name__
        if kind == "DynamicJaxprTracer":
            return getattr(value, "val", None)
        if kind in ("JVPTracer", "LinearizeTracer") and hasattr(value, "primal"):
            value = value.primal
            continue
        return None
    return None


def trace_epoch(count: int = 4) -> tuple[Any, ...]:
    """The first results of the last ``count`` equations the innermost ``jit`` trace
    holds now (latest first): where in the program the Python being traced is.

    Relies on: ``core.trace_ctx.trace``, ``.parent_trace`` of the ``jvp`` /
    ``linearize`` / ``vmap`` traces, ``DynamicJaxprTrace.frame.tracing_eqns``
    (equations or weak references to them, each with ``outvars``). Checked on jax
    0.10.2; an empty tuple where absent.
    """
    trace = getattr(getattr(_core, "trace_ctx", None), "trace", None)
    for _ in range(16):
        if trace is None or type(trace).__name__ == "DynamicJaxprTrace":
            break
        trace = getattr(trace, "parent_trace", None)
    eqns = getattr(getattr(trace, "frame", None), "tracing_eqns", None)
    if not isinstance(eqns, list):
        return ()
    found: list[Any] = []
    for entry in reversed(eqns):
        eqn = entry if hasattr(entry, "outvars") else entry()
        if eqn is None or not eqn.outvars:
            continue
        found.append(eqn.outvars[0])
        if len(found) == count:
            break
    return tuple(found)
