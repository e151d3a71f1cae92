"""Private JAX hooks of the tracer-leak checker (``jaxscope._leaks``).

JAX checks for leaks at the end of a trace by calling
``core.maybe_find_leaked_tracers(trace)`` (jaxpr traces, vmap, linearize sub-traces),
and reports a leaked tracer used later through ``core.escaped_tracer_error``. Both are
module globals looked up at call time, so replacing them for the duration of a
``check_leaks`` block sees every such moment. JVP and top-level linearize (``grad``)
traces are never checked by JAX; ``core.set_current_trace`` is wrapped so the end of
their body is seen too. Each ``install_*`` returns a function that undoes it.

All hooks tested on jax 0.9.0 and 0.10.2.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable
from typing import Any

from jaxscope._exceptions import JaxscopeCompatError
from jaxscope.compat import PrivateModule, require

_siu = PrivateModule("jax._src.source_info_util", "compat.leaks")
_core = PrivateModule("jax._src.core", "compat.leaks")

Undo = Callable[[], None]


def tracer_type() -> type:
    """The base class of every JAX tracer.

    Relies on: ``jax._src.core.Tracer``.
    """
    return require(_core, "Tracer", "compat.leaks.tracer_type")  # type: ignore[no-any-return]


def trace_of(tracer: Any) -> Any:
    """The trace a tracer belongs to.

    Relies on: ``Tracer._trace``.
    """
    return getattr(tracer, "_trace", None)


def aval_str(tracer: Any) -> str:
    """The tracer's abstract value, short form (``"f32[3]"``).

    Relies on: ``Tracer.aval`` and ``AbstractValue.str_short``.
    """
    aval = getattr(tracer, "aval", None)
    if aval is None:
        return "?"
    try:
        return str(aval.str_short(short_dtypes=True))
    except TypeError:
        return str(aval.str_short())


def _debug_info(tracer: Any) -> Any:
    try:
        return getattr(tracer, "_debug_info", None)
    except Exception:  # some tracers compute it and may raise
        return None


def transformation_of(tracer: Any, hint: str | None = None) -> str:
    """The transformation whose trace created ``tracer`` ("jit", "vmap", "grad", ...).

    ``hint`` is what ``transformation_at_creation`` saw on the stack when the trace
    was made (used for JVP and linearize traces, which carry no debug info).

    Relies on: ``DynamicJaxprTracer._debug_info.traced_for`` / ``func_src_info`` and
    the trace class names ``DynamicJaxprTrace``, ``BatchTrace``, ``JVPTrace``,
    ``LinearizeTrace``, ``ShardMapTrace``.
    """
    trace_name = type(trace_of(tracer)).__name__
    if trace_name == "BatchTrace":
        return "vmap"
    if trace_name == "JVPTrace":
        return hint or "jvp"
    if trace_name == "LinearizeTrace":
        return hint or "grad"
    if trace_name == "ShardMapTrace":
        return "shard_map"
    dbg = _debug_info(tracer)
    traced_for = str(getattr(dbg, "traced_for", "") or "")
    src = str(getattr(dbg, "func_src_info", "") or "")
    if traced_for == "shard_map" and (
        hint == "pmap" or "jax/_src/pmap.py" in src.replace("\\", "/")
    ):
        return "pmap"
    names = {
        "while_body": "while",
        "while_cond": "while",
        "while_loop": "while",
        "custom_jvp fun": "custom_jvp",
        "custom_vjp fun": "custom_vjp",
        "checkpoint / remat": "remat",
        "xla_pmap": "pmap",
    }
    if traced_for:
        return names.get(traced_for, traced_for)
    return hint or trace_name


def traced_function(tracer: Any) -> str:
    """``"f at file:line"``: the function being traced when ``tracer`` was made, or "".

    Relies on: ``DynamicJaxprTracer._debug_info.func_src_info``.
    """
    return str(getattr(_debug_info(tracer), "func_src_info", "") or "")


def creation_traceback(tracer: Any) -> Any:
    """The JAX ``Traceback`` recorded when ``tracer`` was created, or None.

    Looks at the tracer itself, then at the tracers it wraps (a ``grad`` tracer's
    tangent carries the line of the operation that made it).

    Relies on: ``Tracer._line_info`` (a ``SourceInfo``), ``BatchTracer.source_info``,
    ``LinearizeTracer.tangent/primal``, ``JVPTracer.tangent/primal``,
    ``BatchTracer.val``.
    """
    base = tracer_type()
    todo = [tracer]
    seen = 0
    while todo and seen < 8:
        t = todo.pop(0)
        seen += 1
        for attr in ("_line_info", "source_info"):
            info = getattr(t, attr, None) if hasattr(type(t), attr) else None
            tb = getattr(info, "traceback", None)
            if tb is not None and _siu.user_frame(tb) is not None:
                return tb
        for attr in ("tangent", "primal", "val"):
            inner = getattr(t, attr, None) if hasattr(type(t), attr) else None
            if isinstance(inner, base):
                todo.append(inner)
    return None


def current_traceback() -> Any:
    """A JAX ``Traceback`` of the current Python stack (cheap: captured in C++).

    Relies on: ``source_info_util.current().traceback``.
    """
    return _siu.current().traceback


def is_jax_internal(obj: Any) -> bool:
    """Whether ``obj`` is one of JAX's own objects (a tracer, an equation, a trace).

    Relies on: JAX's classes living in modules named ``jax.*`` / ``jaxlib.*``.
    """
    module = getattr(type(obj), "__module__", "") or ""
    return module.startswith(
        ("jax.", "jaxlib.", "jax_", "flax.core.tracers")
    ) or module in (
        "jax",
        "jaxlib",
    )


def install_trace_end_hook(on_trace_end: Callable[[Any], None]) -> Undo:
    """Call ``on_trace_end(trace)`` where JAX checks a finished trace for leaks.

    JAX's own check is replaced: it finds nothing, so JAX never raises its plain
    ``Exception``; ``on_trace_end`` does the finding. JAX only calls it while
    ``jax_check_tracer_leaks`` is on.

    Relies on: ``core.maybe_find_leaked_tracers`` (called from ``core.ensure_no_leaks``
    and ``SetCurrentTraceContextManager.__exit__``).
    """
    original = require(_core, "maybe_find_leaked_tracers", "check_leaks")

    def maybe_find_leaked_tracers(trace: Any) -> list[Any]:
        on_trace_end(trace)
        return []

    _core.maybe_find_leaked_tracers = maybe_find_leaked_tracers

    def undo() -> None:
        _core.maybe_find_leaked_tracers = original

    return undo


def install_escape_hook(
    on_escape: Callable[[Any], str | None],
) -> Undo:
    """Call ``on_escape(tracer)`` when a leaked tracer is used outside its trace.

    A non-empty string returned is put before JAX's message; the exception stays an
    ``UnexpectedTracerError``.

    Relies on: ``core.escaped_tracer_error(tracer, detail=None)`` returning the
    ``UnexpectedTracerError`` JAX raises.
    """
    original = require(_core, "escaped_tracer_error", "check_leaks")

    def escaped_tracer_error(tracer: Any, detail: Any = None) -> Exception:
        err = original(tracer, detail)
        prefix = on_escape(tracer)
        if prefix and err.args:
            err = type(err)(f"{prefix}\n{err.args[0]}")
        return err  # type: ignore[no-any-return]

    _core.escaped_tracer_error = escaped_tracer_error

    def undo() -> None:
        _core.escaped_tracer_error = original

    return undo


def unchecked_trace_types() -> tuple[type, ...]:
    """Trace classes whose end JAX never checks for leaks (JVP, top-level linearize,
    eager shard_map).

    Relies on: ``interpreters.ad.JVPTrace``, ``interpreters.ad.LinearizeTrace``,
    ``shard_map.ShardMapTrace`` (each optional).
    """
    from jax._src.interpreters import ad

    found: list[type] = []
    for owner, name in ((ad, "JVPTrace"), (ad, "LinearizeTrace")):
        cls = getattr(owner, name, None)
        if isinstance(cls, type):
            found.append(cls)
    try:
        from jax._src import shard_map as _sm
    except ImportError:  # pragma: no cover - older layouts
        _sm = None
    cls = getattr(_sm, "ShardMapTrace", None)
    if isinstance(cls, type):
        found.append(cls)
    return tuple(found)


def install_body_end_hook(
    trace_types: tuple[type, ...], on_body_end: Callable[[Any], None]
) -> Undo:
    """Call ``on_body_end(trace)`` when the outermost ``set_current_trace(trace)`` of a
    trace of ``trace_types`` exits: the traced function has returned.

    Relies on: ``core.set_current_trace`` being a context-manager class with
    ``trace`` and ``check_leaks`` attributes, looked up at call time by JAX.
    """
    original = require(_core, "set_current_trace", "check_leaks")
    if not isinstance(original, type):
        raise JaxscopeCompatError(
            "jaxscope.check_leaks needs jax._src.core.set_current_trace to be a class; "
            "install a JAX version jaxscope supports (see pyproject.toml)"
        )
    types = frozenset(trace_types)
    depth: dict[int, int] = {}

    class _Tracked(original):  # type: ignore[misc, valid-type]
        __slots__ = ("_ref",)

        def __enter__(self) -> Any:
            key = id(self.trace)
            depth[key] = depth.get(key, 0) + 1
            self._ref = weakref.ref(self.trace)
            return super().__enter__()

        def __exit__(self, *exc: Any) -> Any:
            ref = self._ref
            key = id(ref())
            result = super().__exit__(*exc)
            left = depth.get(key, 1) - 1
            if left <= 0:
                depth.pop(key, None)
                trace = ref()
                if trace is not None and exc[0] is None:
                    on_body_end(trace)
            else:
                depth[key] = left
            return result

    def set_current_trace(trace: Any, check_leaks: bool = False) -> Any:
        if type(trace) in types:
            return _Tracked(trace, check_leaks)
        return original(trace, check_leaks)

    _core.set_current_trace = set_current_trace

    def undo() -> None:
        _core.set_current_trace = original

    return undo


def tracer_types_without_line_info() -> tuple[type, ...]:
    """Tracer classes that record no creation line (JVP, linearize, eager shard_map).

    Relies on: ``interpreters.ad.JVPTracer``, ``interpreters.ad.LinearizeTracer``,
    ``shard_map.ShardMapTracer`` (each optional).
    """
    from jax._src.interpreters import ad

    found: list[type] = []
    for name in ("JVPTracer", "LinearizeTracer"):
        cls = getattr(ad, name, None)
        if isinstance(cls, type):
            found.append(cls)
    shard_map = sys.modules.get("jax._src.shard_map")
    cls = getattr(shard_map, "ShardMapTracer", None)
    if isinstance(cls, type):
        found.append(cls)
    return tuple(found)


def install_creation_hook(
    tracer_types: tuple[type, ...], on_created: Callable[[Any], None]
) -> Undo:
    """Call ``on_created(tracer)`` after each tracer of ``tracer_types`` is made.

    Relies on: each class defining its own ``__init__`` (restored by the undo).
    """
    saved: list[tuple[type, Any]] = []
    for cls in tracer_types:
        init = cls.__dict__.get("__init__")
        if init is None:
            continue

        def wrapped(self: Any, *args: Any, _init: Any = init, **kwargs: Any) -> None:
            _init(self, *args, **kwargs)
            on_created(self)

        saved.append((cls, init))
        cls.__init__ = wrapped  # type: ignore[misc]

    def undo() -> None:
        for cls, init in saved:
            cls.__init__ = init  # type: ignore[misc]

    return undo


_API_NAMES = {
    "grad_f": "grad",
    "grad_f_aux": "grad",
    "value_and_grad_f": "grad",
    "vjp": "vjp",
    "jvp": "jvp",
    "linearize": "linearize",
}


def api_transformation_on_stack() -> str | None:
    """The public JAX transformation running below the innermost user frame.

    ``"grad"``, ``"vjp"``, ``"jvp"`` or ``"linearize"`` (the outermost such call
    between here and the user's code), or None.

    Relies on: the inner function names of ``jax/_src/api.py`` (``grad_f``,
    ``value_and_grad_f``, ``vjp``, ``jvp``, ``linearize``).
    """
    frame: Any = sys._getframe(1)
    # the caller itself may be user code (a callback): skip it
    while frame is not None and _siu.is_user_filename(frame.f_code.co_filename):
        frame = frame.f_back
    found: str | None = None
    while frame is not None:
        filename = frame.f_code.co_filename.replace("\\", "/")
        if filename.endswith("jax/_src/api.py"):
            name = _API_NAMES.get(frame.f_code.co_name)
            if name is not None:
                found = name
        elif _siu.is_user_filename(filename):
            break
        frame = frame.f_back
    return found


def pmap_on_stack() -> bool:
    """Whether ``jax.pmap`` is running below the innermost user frame (pmap is
    implemented with shard_map, whose traces do not name pmap in jax 0.9).

    Relies on: ``jax.pmap`` living in ``jax/_src/pmap.py`` or ``jax/_src/api.py``
    (function ``pmap_f`` / ``cache_miss``).
    """
    frame: Any = sys._getframe(1)
    while frame is not None and _siu.is_user_filename(frame.f_code.co_filename):
        frame = frame.f_back
    while frame is not None:
        filename = frame.f_code.co_filename.replace("\\", "/")
        if filename.endswith("jax/_src/pmap.py") or (
            filename.endswith("jax/_src/api.py")
            and frame.f_code.co_name.startswith("pmap")
        ):
            return True
        if _siu.is_user_filename(filename):
            return False
        frame = frame.f_back
    return False


def is_argument(tracer: Any) -> bool:
    """Whether ``tracer`` is an input of the jaxpr being traced (an argument of the
    traced function) rather than an intermediate value.

    Relies on: ``DynamicJaxprTracer.val`` (a ``Var``) and
    ``DynamicJaxprTrace.frame.invars``; False for other tracers.
    """
    frame = getattr(trace_of(tracer), "frame", None)
    invars = getattr(frame, "invars", None)
    var = getattr(tracer, "val", None) if hasattr(type(tracer), "val") else None
    if invars is None or var is None:
        return False
    return any(v is var for v in list(invars))


def trace_is_valid(trace: Any) -> bool:
    """Whether ``trace`` is still running (JAX invalidates a jaxpr trace when it ends).

    Relies on: ``Trace.is_valid()``; True where absent.
    """
    is_valid = getattr(trace, "is_valid", None)
    return bool(is_valid()) if callable(is_valid) else True


def install_misuse_hook(on_misuse: Callable[[Any], str | None]) -> Undo:
    """Call ``on_misuse(tracer)`` when JAX builds a concretization error for a tracer
    (``float(t)``, ``np.asarray(t)``, ``bool(t)``, ``int(t)``); a returned string is put
    before the message. JAX's message alone says "while tracing the function f", even
    when ``t`` leaked and the trace ended long ago.

    Relies on: ``__init__(self, tracer, ...)`` of ``jax.errors.ConcretizationTypeError``,
    ``TracerArrayConversionError``, ``TracerBoolConversionError``,
    ``TracerIntegerConversionError``, each setting ``args[0]`` to the message.
    """
    import jax.errors as _errors

    saved: list[tuple[type, Any]] = []
    for name in (
        "ConcretizationTypeError",
        "TracerArrayConversionError",
        "TracerBoolConversionError",
        "TracerIntegerConversionError",
    ):
        cls = getattr(_errors, name, None)
        init = getattr(cls, "__dict__", {}).get("__init__")
        if cls is None or init is None:
            continue

        def wrapped(
            self: Any, tracer: Any, *args: Any, _init: Any = init, **kw: Any
        ) -> None:
            _init(self, tracer, *args, **kw)
            if not self.args or str(self.args[0]).startswith("jaxscope:"):
                return
            prefix = on_misuse(tracer)
            if prefix:
                self.args = (f"{prefix}\n{self.args[0]}", *self.args[1:])

        saved.append((cls, init))
        cls.__init__ = wrapped  # type: ignore[misc]

    def undo() -> None:
        for cls, init in saved:
            cls.__init__ = init  # type: ignore[misc]

    return undo
