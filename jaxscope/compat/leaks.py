"""Private JAX hooks of the tracer-leak checker (``jaxscope._leaks``).

JAX checks a finished trace for leaks where it ends: ``core.ensure_no_leaks(trace)``
(jaxpr traces, vmap) and ``core.set_current_trace(trace, check_leaks=True)``
(linearize sub-traces, remat), both only while ``jax_check_tracer_leaks`` is on. A
leaked tracer used later is reported through ``core.escaped_tracer_error``. These are
module globals looked up at call time, so replacing them while a ``check_leaks``
block is active sees every such moment without touching JAX's config (the one cache
that flag turns off because it keeps tracers, ``closure_convert``'s, is skipped the
same way). JVP and top-level linearize (``grad``) traces are never checked by JAX;
the exit of their outermost ``set_current_trace`` is seen too. Each ``install_*``
returns a function that undoes it.

All hooks tested on jax 0.9.0 and 0.10.2.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from jaxscope._exceptions import JaxscopeCompatError
from jaxscope.compat import PrivateModule, require

_siu = PrivateModule("jax._src.source_info_util", "compat.leaks")
_core = PrivateModule("jax._src.core", "compat.leaks")
_custom = PrivateModule("jax._src.custom_derivatives", "compat.leaks")
_tree = PrivateModule("jax._src.tree_util", "compat.leaks")

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

    Looks at the tracer itself, the equation that made it (a partial-eval tracer's
    recipe), then at the tracers it wraps (a ``grad`` tracer's tangent carries the
    line of the operation that made it). A traceback with a frame of the user's
    own code is preferred to one whose frames are all an installed library's (a
    tracer Flax's ``nn.scan`` makes while re-tracing a body records only Flax's).

    Relies on: ``Tracer._line_info`` (a ``SourceInfo``), ``BatchTracer.source_info``,
    ``JaxprTracer.recipe.source_info``, ``LinearizeTracer.tangent/primal``,
    ``JVPTracer.tangent/primal``, ``BatchTracer.val``.
    """
    from jaxscope.compat.source import frames_of, is_library_file

    base = tracer_type()
    todo = [tracer]
    seen = 0
    found = None
    while todo and seen < 8:
        t = todo.pop(0)
        seen += 1
        recipe = getattr(t, "recipe", None) if hasattr(type(t), "recipe") else None
        for info in (
            _attribute(t, "_line_info"),
            _attribute(t, "source_info"),
            getattr(recipe, "source_info", None),
        ):
            tb = getattr(info, "traceback", None)
            if tb is None or _siu.user_frame(tb) is None:
                continue
            if any(not is_library_file(f.file) for f in frames_of(tb)):
                return tb
            found = found or tb
        for attr in ("tangent", "primal", "val"):
            inner = _attribute(t, attr)
            if isinstance(inner, base):
                todo.append(inner)
    return found


def _attribute(obj: Any, name: str) -> Any:
    """``obj.name`` where its type defines it (a tracer's ``__getattr__`` forwards
    unknown names to its aval), else None."""
    return getattr(obj, name, None) if hasattr(type(obj), name) else None


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


def is_pytree_static_data(obj: Any) -> bool:
    """Whether ``obj`` is a pytree structure (``PyTreeDef``) or JAX's wrapper of a
    static value in one: what it refers to is a pytree's static (non-array) data,
    which jit keeps in its caches (static arguments, output structures).

    Relies on: ``jax.tree_util.PyTreeDef`` and ``jax._src.tree_util.Static`` (the
    wrapper of ``jit``'s static arguments; optional).
    """
    import jax

    if isinstance(obj, jax.tree_util.PyTreeDef):
        return True
    static = getattr(_tree, "Static", None)
    return isinstance(static, type) and type(obj) is static


def is_nnx_static(obj: Any) -> bool:
    """Whether ``obj`` is Flax NNX's wrapper of a module's static attribute value
    (``flax.nnx.graphlib.Static``), kept in a ``GraphDef``."""
    cls = type(obj)
    return cls.__name__ == "Static" and cls.__module__ == "flax.nnx.graphlib"


def nnx_graph_attributes(obj: Any) -> list[Any] | None:
    """The ``attributes`` list of a Flax NNX ``GraphDef``, or None for anything else.

    Relies on: ``flax.nnx.graphlib.GraphDef.attributes``, a list of ``(key, kind)``.
    """
    cls = type(obj)
    if cls.__name__ != "GraphDef" or cls.__module__ != "flax.nnx.graphlib":
        return None
    attributes = getattr(obj, "attributes", None)
    return attributes if isinstance(attributes, list) else None


def nnx_graph_path(graphdef: Any, index: int) -> list[tuple[str, str]] | None:
    """``[(type name, key), ...]`` from the root module of a Flax NNX ``GraphDef`` to
    its attribute number ``index`` (``[("Net", "block"), ("Block", "last_h")]``), or
    None when the graph cannot be read.

    Relies on (flax 0.12): ``GraphDef.nodes`` in depth-first order, each node with
    ``num_attributes`` (``NodeDef``) owning that many entries of
    ``GraphDef.attributes`` in order, an entry whose kind is ``NodeAttr`` followed by
    its child node's; nodes without ``num_attributes`` (variables, references) own
    none.
    """
    nodes = getattr(graphdef, "nodes", None)
    attributes = nnx_graph_attributes(graphdef)
    if not isinstance(nodes, list) or attributes is None:
        return None
    position = {"node": 0, "attribute": 0}

    def walk(path: list[tuple[str, str]]) -> list[tuple[str, str]] | None:
        if position["node"] >= len(nodes):
            return None
        node = nodes[position["node"]]
        position["node"] += 1
        count = getattr(node, "num_attributes", None)
        if not isinstance(count, int):
            return None
        owner = getattr(getattr(node, "type", None), "__name__", "?")
        for _ in range(count):
            at = position["attribute"]
            if at >= len(attributes):
                return None
            key, kind = attributes[at]
            position["attribute"] += 1
            step = [*path, (str(owner), str(key))]
            if at == index:
                return step
            if type(kind).__name__ == "NodeAttr":
                found = walk(step)
                if found is not None:
                    return found
        return None

    try:
        return walk([])
    except Exception:  # a graph of another Flax version: no path
        return None


def is_jax_module(name: str) -> bool:
    """Whether ``name`` names one of JAX's own modules (``jax.*``, ``jaxlib.*``)."""
    return name in ("jax", "jaxlib") or name.startswith(("jax.", "jaxlib."))


def is_jax_function(fn: Any) -> bool:
    """Whether ``fn`` is a function defined in JAX's own modules.

    Relies on: JAX's functions having a ``__module__`` named ``jax.*`` /
    ``jaxlib.*``.
    """
    return is_jax_module(getattr(fn, "__module__", "") or "")


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


def install_trace_hooks(
    active: Callable[[], bool],
    on_trace_end: Callable[[Any], None],
    body_types: tuple[type, ...],
    on_body_end: Callable[[Any], None],
) -> Undo:
    """See the end of every trace that runs while ``active()`` is true on its thread.

    ``on_trace_end(trace)``: a trace that JAX checks for leaks when
    ``jax_check_tracer_leaks`` is on (jaxpr traces, vmap, linearize sub-traces, remat)
    has ended and is still alive: something may hold one of its tracers. It is called
    where JAX would check, without that flag (whose thread-local value a block could
    not restore from another thread, and which turns some of JAX's caches off): the
    trace is invalidated as the flag would, then called while it is alive.

    ``on_body_end(trace)``: the outermost ``set_current_trace(trace)`` of a trace of
    ``body_types`` (which JAX never checks) has exited: the traced function returned,
    though its outputs are still alive.

    Where ``active()`` is false JAX's own code runs unchanged (its own leak check
    included, when the user turned it on).

    Relies on: ``core.ensure_no_leaks(trace)`` (a context manager) and
    ``core.set_current_trace`` (a context-manager class with ``trace`` and
    ``check_leaks`` attributes), both looked up at call time by JAX;
    ``Trace.invalidate()`` and ``Trace._weakref``.
    """
    ensure_original = require(_core, "ensure_no_leaks", "check_leaks")
    current_original = require(_core, "set_current_trace", "check_leaks")
    if not isinstance(current_original, type):
        raise JaxscopeCompatError(
            "jaxscope.check_leaks needs jax._src.core.set_current_trace to be a class; "
            "install a JAX version jaxscope supports (see pyproject.toml)"
        )

    def report_if_alive(ref: Any) -> None:
        trace = ref()
        if trace is not None:
            on_trace_end(trace)

    @contextlib.contextmanager
    def checked(trace: Any) -> Iterator[None]:
        inner = ensure_original(trace)
        ref = trace._weakref
        del trace  # JAX's own test of the trace being alive must not see ours
        with inner:
            yield
        if active():
            report_if_alive(ref)

    def ensure_no_leaks(trace: Any) -> Any:
        return checked(trace) if active() else ensure_original(trace)

    types = frozenset(body_types)
    tracked = _tracked_trace_class(
        current_original, types, active, report_if_alive, on_body_end
    )

    def set_current_trace(trace: Any, check_leaks: bool = False) -> Any:
        if (check_leaks or type(trace) in types) and active():
            return tracked(trace, check_leaks)
        return current_original(trace, check_leaks)

    _core.ensure_no_leaks = ensure_no_leaks
    _core.set_current_trace = set_current_trace

    def undo() -> None:
        _core.set_current_trace = current_original
        _core.ensure_no_leaks = ensure_original

    return undo


def _tracked_trace_class(
    original: type,
    body_types: frozenset[type],
    active: Callable[[], bool],
    report_if_alive: Callable[[Any], None],
    on_body_end: Callable[[Any], None],
) -> type:
    """JAX's ``set_current_trace`` class, also calling ``on_body_end`` at the
    outermost exit of a trace of ``body_types`` and checking, as the leak flag
    would, a ``check_leaks=True`` trace when it exits."""
    depth: dict[int, int] = {}  # id(trace) -> nesting of its set_current_trace

    class Tracked(original):  # type: ignore[misc, valid-type]
        __slots__ = ("_ref",)

        def __enter__(self) -> Any:
            trace = self.trace
            self._ref = trace._weakref
            if type(trace) in body_types:
                depth[id(trace)] = depth.get(id(trace), 0) + 1
            return super().__enter__()

        def __exit__(self, *exc: Any) -> Any:
            result = super().__exit__(*exc)
            ref = self._ref
            trace = ref()
            if trace is not None and type(trace) in body_types:
                left = depth.get(id(trace), 1) - 1
                if left > 0:
                    depth[id(trace)] = left
                else:
                    depth.pop(id(trace), None)
                    if exc[0] is None and active():
                        on_body_end(trace)
            if self.check_leaks and exc[0] is None and active():
                if trace is not None:
                    trace.invalidate()
                del trace
                with contextlib.suppress(AttributeError):
                    del self.trace  # JAX's own exit deletes it only under the flag
                report_if_alive(ref)
            return result

    return Tracked


def install_uncached_closure_convert(active: Callable[[], bool]) -> Undo:
    """While ``active()``, ``jax.closure_convert`` skips its cache, as it does when
    ``jax_check_tracer_leaks`` is on: the cache would keep the tracers it hoists (and
    the function closing over them) alive after their trace ended.

    Relies on: ``custom_derivatives._closure_convert_for_avals``, a ``util.cache``
    function looked up at call time, whose ``__wrapped__`` is the uncached one.
    """
    original = require(_custom, "_closure_convert_for_avals", "check_leaks")
    uncached = getattr(original, "__wrapped__", None)
    if not callable(uncached):
        return lambda: None

    def _closure_convert_for_avals(*args: Any, **kwargs: Any) -> Any:
        return (uncached if active() else original)(*args, **kwargs)

    _closure_convert_for_avals.__wrapped__ = uncached  # type: ignore[attr-defined]
    _custom._closure_convert_for_avals = _closure_convert_for_avals

    def undo() -> None:
        _custom._closure_convert_for_avals = original

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


# (file suffix, function) of library code that traces a user's function with a
# partial-evaluation trace of its own, and the transformation the user called
_PARTIAL_EVAL_CALLERS = {
    ("flax/core/axes_scan.py", "scan_fn"): "scan",  # Linen nn.scan's first pass
}


def partial_eval_transformation_on_stack() -> str | None:
    """The transformation the user called that runs a partial-evaluation trace
    (``JaxprTrace``) now: ``"scan"`` for Flax Linen's ``nn.scan``, whose first pass
    over the body (finding the loop-invariant values) is such a trace; or None.

    Relies on: ``flax/core/axes_scan.py``'s ``scan_fn`` (inside ``scan``) calling
    ``pe.trace_to_jaxpr_nounits`` on the body (flax 0.12).
    """
    from jaxscope.compat.source import is_library_file, is_user_file

    def users(filename: str) -> bool:
        return is_user_file(filename) and not is_library_file(filename)

    frame: Any = sys._getframe(1)
    # the caller itself may be user code (the traced function): skip it
    while frame is not None and users(frame.f_code.co_filename):
        frame = frame.f_back
    for _ in range(60):
        if frame is None:
            return None
        filename = frame.f_code.co_filename.replace("\\", "/")
        for (suffix, function), name in _PARTIAL_EVAL_CALLERS.items():
            if filename.endswith(suffix) and frame.f_code.co_name == function:
                return name
        if users(filename):
            return None
        frame = frame.f_back
    return None


def is_partial_eval_trace(trace: Any) -> bool:
    """Whether ``trace`` is a partial-evaluation trace (``JaxprTrace``), which carries
    no name of the transformation that made it.

    Relies on: the class name ``JaxprTrace``.
    """
    return type(trace).__name__ == "JaxprTrace"


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
