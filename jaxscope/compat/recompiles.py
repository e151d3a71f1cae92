"""Hooks on JAX's jit cache misses, and the facts about arguments a miss depends on.

The jitted call's cache-hit path runs in C++ (``PjitFunction``) and no Python frame;
only a C++ cache miss calls back into ``jax._src.pjit``: ``cache_miss`` calls
``_infer_params`` (jax 0.10; ``_trace_for_jit`` in 0.9), then ``_run_python_pjit``.
Both are module globals looked up at call time, so replacing them sees every miss of
every jitted function, already made or not, at no cost on hits. The trace, lowering and
XLA compile that a miss triggers are seen through ``jax._src.util.test_event`` (a single
listener slot; chained) and timed through the public ``jax.monitoring`` duration events.

Every function here is small and names what it relies on; tested on jax 0.9.0 and
0.10.2 (``tests/compat/test_recompiles.py``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxscope._format import short_dtype, short_repr
from jaxscope.compat import PrivateModule, require
from jaxscope.compat.source import is_jax_file

_util = PrivateModule("jax._src.util", "compat.recompiles")
_pjit = PrivateModule("jax._src.pjit", "compat.recompiles")
_core = PrivateModule("jax._src.core", "compat.recompiles")
_config = PrivateModule("jax._src.config", "compat.recompiles")
_pe = PrivateModule("jax._src.interpreters.partial_eval", "compat.recompiles")

# Monitoring events whose durations add up to the time one miss cost.
DURATION_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)

# test_event names -> what happened ("trace", "lower", "compile").
TEST_EVENTS = {
    "trace_to_jaxpr": "trace",
    "lower_jaxpr_to_module": "lower",
    "pxla_cached_compilation": "compile",
}


# Options that change what a trace produces, for JAX versions without names for them.
_FALLBACK_CONFIG_NAMES = (
    "jax_enable_x64",
    "jax_default_device",
    "jax_default_matmul_precision",
    "jax_numpy_rank_promotion",
    "jax_numpy_dtype_promotion",
    "jax_threefry_partitionable",
    "jax_softmax_custom_jvp",
    "jax_disable_jit",
    "jax_debug_key_reuse",
    "jax_use_direct_linearize",
)


def _miss_entry_name() -> str:
    return "_infer_params" if hasattr(_pjit, "_infer_params") else "_trace_for_jit"


class MissHooks:
    """Replacements of the pjit miss path; ``install``/``uninstall`` swap them in and out.

    ``on_start(fun, jit_info, args, kwargs)`` runs when a C++ cache miss of a jitted
    call starts (never for ``.trace``/``.lower``), ``on_end(fun, error)`` when it has
    been traced, lowered, compiled and run (or failed); ``on_test_event(what)`` for each
    trace/lower/compile; ``on_duration(seconds)`` for each timed phase.

    ``on_eager_start(name, source, args)`` runs when a jitted computation made by a
    transformation outside jit (the backward pass of ``jax.grad(jitted_f)``) misses
    JAX's cache; what it returns is later passed to ``on_end`` in place of ``fun``.
    ``on_run(fun, jaxpr)`` runs when the traced (or cached) jaxpr of a miss is about to
    be lowered and compiled.

    Relies on: ``pjit._infer_params`` (0.10) or ``pjit._trace_for_jit`` (0.9) called as
    ``(fun, jit_info, args, kwargs)`` from a closure named ``cache_miss``;
    ``pjit._run_python_pjit``; ``pjit._pjit_call_impl_python`` called from a closure
    named ``call_impl_cache_miss``; ``util.test_event_listener``.
    """

    def __init__(
        self,
        on_start: Callable[[Any, Any, tuple[Any, ...], dict[str, Any]], None],
        on_end: Callable[[Any, BaseException | None], None],
        on_test_event: Callable[[str], None],
        on_duration: Callable[[float], None],
        on_eager_start: Callable[[str, str, tuple[Any, ...]], Any] | None = None,
        on_run: Callable[[Any, Any], None] | None = None,
    ) -> None:
        self.on_eager_start = on_eager_start
        self.on_run = on_run
        self.on_start = on_start
        self.on_end = on_end
        self.on_test_event = on_test_event
        self.on_duration = on_duration
        self.installed = False
        self._entry_name = ""
        self._orig_entry: Any = None
        self._orig_run: Any = None
        self._orig_impl: Any = None
        self._prev_listener: Any = None
        self._wrappers: tuple[Any, Any, Any, Any, Any] | None = None

    def install(self) -> None:
        """Patch the miss path (idempotent)."""
        if self.installed:
            return
        self._entry_name = _miss_entry_name()
        orig_entry = require(_pjit, self._entry_name, "watch_recompiles")
        orig_run = require(_pjit, "_run_python_pjit", "watch_recompiles")
        require(_util, "test_event_listener", "watch_recompiles")
        orig_impl = getattr(_pjit, "_pjit_call_impl_python", None)
        prev = _util.test_event_listener
        entry = _entry_wrapper(orig_entry, self.on_start, self.on_end)
        run = _run_wrapper(orig_run, self.on_end, self.on_run)
        impl = (
            _impl_wrapper(orig_impl, self.on_eager_start, self.on_end)
            if orig_impl is not None and self.on_eager_start is not None
            else None
        )
        listener = _listener_wrapper(prev, self.on_test_event)
        on_duration = self.on_duration

        def duration(event: str, duration_secs: float, **kwargs: Any) -> None:
            if event in DURATION_EVENTS:
                on_duration(duration_secs)

        self._orig_entry, self._orig_run, self._prev_listener = (
            orig_entry,
            orig_run,
            prev,
        )
        self._orig_impl = orig_impl
        self._wrappers = (entry, run, listener, duration, impl)
        setattr(_pjit, self._entry_name, entry)
        _pjit._run_python_pjit = run
        if impl is not None:
            _pjit._pjit_call_impl_python = impl
        _util.test_event_listener = listener
        jax.monitoring.register_event_duration_secs_listener(duration)
        self.installed = True

    def uninstall(self) -> None:
        """Restore what ``install`` replaced (where nobody patched over it since)."""
        if not self.installed or self._wrappers is None:
            return
        entry, run, listener, duration, impl = self._wrappers
        if impl is not None and getattr(_pjit, "_pjit_call_impl_python", None) is impl:
            _pjit._pjit_call_impl_python = self._orig_impl
        if getattr(_pjit, self._entry_name, None) is entry:
            setattr(_pjit, self._entry_name, self._orig_entry)
        if getattr(_pjit, "_run_python_pjit", None) is run:
            _pjit._run_python_pjit = self._orig_run
        if _util.test_event_listener is listener:
            _util.test_event_listener = self._prev_listener
        unregister = getattr(jax.monitoring, "unregister_event_duration_listener", None)
        if unregister is not None:
            with contextlib.suppress(AssertionError, ValueError):
                unregister(duration)
        self._wrappers = None
        self.installed = False


# The replacements, each closing over the original it stands in for. A miss is told
# from other calls by the name of the calling frame (``cache_miss``).


def _entry_wrapper(orig_entry: Any, on_start: Any, on_end: Any) -> Any:
    getframe = sys._getframe

    def entry(fun: Any, jit_info: Any, args: Any, kwargs: Any, *rest: Any) -> Any:
        if rest or getframe(1).f_code.co_name != "cache_miss":
            return orig_entry(fun, jit_info, args, kwargs, *rest)
        on_start(fun, jit_info, args, kwargs)
        try:
            return orig_entry(fun, jit_info, args, kwargs)
        except BaseException as exc:
            on_end(fun, exc)
            raise

    return entry


def _run_wrapper(orig_run: Any, on_end: Any, on_run: Any) -> Any:
    getframe = sys._getframe

    def run(p: Any, args_flat: Any, fun: Any, *rest: Any) -> Any:
        if getframe(1).f_code.co_name != "cache_miss":
            return orig_run(p, args_flat, fun, *rest)
        if on_run is not None:
            on_run(fun, getattr(p, "params", {}).get("jaxpr"))
        try:
            result = orig_run(p, args_flat, fun, *rest)
        except BaseException as exc:
            on_end(fun, exc)
            raise
        on_end(fun, None)
        return result

    return run


def _impl_wrapper(orig_impl: Any, on_eager_start: Any, on_end: Any) -> Any:
    getframe = sys._getframe

    def impl(*args: Any, **params: Any) -> Any:
        if getframe(1).f_code.co_name != "call_impl_cache_miss":
            return orig_impl(*args, **params)
        token = on_eager_start(
            str(params.get("name", "")), jaxpr_source(params.get("jaxpr")), args
        )
        if token is None:
            return orig_impl(*args, **params)
        try:
            result = orig_impl(*args, **params)
        except BaseException as exc:
            on_end(token, exc)
            raise
        on_end(token, None)
        return result

    return impl


def _listener_wrapper(prev: Any, on_test_event: Any) -> Any:
    def listener(name: str, *args: Any) -> None:
        what = TEST_EVENTS.get(name)
        if what is not None:
            on_test_event(what)
        if prev is not None:
            prev(name, *args)

    return listener


def jaxpr_source(closed_jaxpr: Any) -> str:
    """``"loss at /path/file.py:3"``: where the function a jaxpr was traced from lives.

    Relies on: ``ClosedJaxpr.jaxpr.debug_info.func_src_info``.
    """
    jaxpr = getattr(closed_jaxpr, "jaxpr", None)
    info = getattr(getattr(jaxpr, "debug_info", None), "func_src_info", None)
    return str(info) if info else ""


def is_jax_internal(fun: Any) -> bool:
    """Whether ``fun`` is defined inside JAX itself (eager op dispatch, ``jnp`` helpers).

    Relies on: nothing private (the code object's file under ``jax``/``jaxlib``).
    """
    seen = 0
    while seen < 10:
        code = getattr(fun, "__code__", None)
        if code is not None:
            return is_jax_file(code.co_filename)
        inner = getattr(fun, "__wrapped__", None) or getattr(fun, "func", None)
        if inner is None:
            module = getattr(fun, "__module__", "") or ""
            return module.startswith(("jax.", "jaxlib."))
        fun = inner
        seen += 1
    return False


# JAX's names of the functions its transformations return -> the transformation.
_TRANSFORM_NAMES = {
    "grad_f": "grad",
    "grad_f_aux": "grad",
    "value_and_grad_f": "value_and_grad",
    "vmap_f": "vmap",
    "jacfun": "jacobian",
    "fun_remat": "checkpoint",
    "hessian": "hessian",
}


def transformed_user_function(fun: Any) -> tuple[str, Any] | None:
    """``("grad", loss)`` for a function a JAX transformation made of a user
    function (``jax.jit(jax.grad(loss))`` jits JAX's ``grad_f``); None otherwise.

    Relies on: the functions ``jax.grad``/``value_and_grad``/``vmap``/``jacfwd``/
    ``jacrev``/``checkpoint`` return (maybe inside ``traceback_util``'s wrapper) being
    closures in JAX's files that hold the function they transform in a cell (``fun``,
    or another of JAX's closures such as ``value_and_grad_f``).
    """
    transform = ""
    for depth in range(8):
        code = getattr(fun, "__code__", None)
        if code is None:
            return None
        if not is_jax_file(code.co_filename):
            return (transform or "transformed", fun) if depth else None
        transform = transform or _TRANSFORM_NAMES.get(code.co_name, "")
        fun = _held_function(fun)
        if fun is None:
            return None
    return None


def _held_function(fun: Any) -> Any:
    """The function a closure holds in its ``fun``/``f`` cell, else in its only cell
    holding a function; None if none."""
    code = fun.__code__
    cells = dict(
        zip(code.co_freevars, getattr(fun, "__closure__", None) or (), strict=False)
    )
    held = []
    for name, cell in cells.items():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if name in ("fun", "f") and callable(value):
            return value
        if hasattr(value, "__code__"):
            held.append(value)
    return held[0] if len(held) == 1 else None


# Primitives with functions as parameters -> the lax call that binds them.
_PRIMITIVE_APIS = {"while": "lax.while_loop", "cond": "lax.cond", "scan": "lax.scan"}


class EagerPrimitive(NamedTuple):
    """One primitive JAX compiles on its own because it ran outside jit, with the
    functions its jaxprs were traced from: ``api`` ``"lax.while_loop"``; ``bodies``
    ``(("step_fn", "/path/linesearch.py", 1217), ...)``, those not defined in JAX."""

    api: str
    bodies: tuple[tuple[str, str, int], ...]


def eager_primitive(fun: Any) -> EagerPrimitive | None:
    """What ``fun`` runs when it is JAX's jit of a single higher-order primitive
    (``lax.while_loop``/``cond``/``scan`` called outside jit) whose functions are
    not JAX's; None for any other function (``jnp.sin(x)`` outside jit included).

    Relies on: ``dispatch.xla_primitive_callable``'s ``prim_fun`` (attribute
    ``_apply_primitive``; closure cells ``prim`` and ``params``) and the jaxprs in
    ``params`` (``ClosedJaxpr``, alone or in tuples) carrying ``debug_info``.
    """
    if not getattr(fun, "_apply_primitive", False):
        return None
    code = getattr(fun, "__code__", None)
    cells: dict[str, Any] = dict(
        zip(getattr(code, "co_freevars", ()), fun.__closure__ or (), strict=False)
    )
    try:
        prim = cells["prim"].cell_contents
        params = cells["params"].cell_contents
    except (KeyError, ValueError):
        return None
    bodies: list[tuple[str, str, int]] = []
    for value in params.values() if isinstance(params, dict) else ():
        for jaxpr in value if isinstance(value, tuple) else (value,):
            match = _SOURCE.match(jaxpr_source(jaxpr))
            if match is None or is_jax_file(match.group("file")):
                continue
            body = (match.group("fn"), match.group("file"), int(match.group("line")))
            if body not in bodies:
                bodies.append(body)
    if not bodies:
        return None
    name = str(getattr(prim, "name", ""))
    return EagerPrimitive(_PRIMITIVE_APIS.get(name, name), tuple(bodies))


_SOURCE = re.compile(r"^(?P<fn>.*?) at (?P<file>.*):(?P<line>\d+)$")


def pmap_user_function(fun: Any) -> Any:
    """The user's function behind ``jax.pmap``'s jitted ``shard_map`` wrapper, or None.

    Since jax 0.9 ``pmap`` is ``jit(shard_map(...))`` of a function defined in JAX, so
    its misses look like JAX-internal ones; this finds the user's function inside.

    Relies on: the jitted function's ``__wrapped__`` being either (0.10) the inner
    ``_fun`` of ``jax._src.pmap._cached_shard_map``, closing over ``fun``, or (0.9)
    ``shard_map``'s wrapper of the bound ``call_wrapped`` method of a
    ``linear_util.WrappedFun``; either way a ``WrappedFun`` whose ``.f`` is the user's
    callable. Anything else gives None.
    """
    inner = getattr(fun, "__wrapped__", None)
    wrapped = _pmap_wrapped_fun(inner)
    if wrapped is None:
        return None
    user = getattr(wrapped, "f", None)
    while user is not None and not hasattr(user, "__code__"):
        nxt = getattr(user, "func", None) or getattr(user, "__wrapped__", None)
        if nxt is None:
            break
        user = nxt
    return user if user is not None and not is_jax_internal(user) else None


def pmap_in_tree(fun: Any) -> Any:
    """The ``PyTreeDef`` of ``(args, kwargs)`` that ``jax.pmap``'s jitted wrapper
    ``fun`` rebuilds from its flat arguments, or None.

    Relies on: (jax 0.10) ``fun.__wrapped__`` being the inner ``_fun`` of
    ``jax._src.pmap._cached_shard_map``, closing over ``in_tree``; (jax 0.9) the
    call running under ``pmap``'s ``wrapped`` (in ``jax/_src/pmap.py``) whose local
    ``p`` has ``in_tree``.
    """
    inner = getattr(fun, "__wrapped__", None)
    code = getattr(inner, "__code__", None)
    if code is None or os.path.basename(code.co_filename) != "pmap.py":
        return _pmap_in_tree_09() if _pmap_wrapped_fun(inner) is not None else None
    closure = getattr(inner, "__closure__", None) or ()
    if "in_tree" not in code.co_freevars or not closure:
        return None
    try:
        tree = closure[code.co_freevars.index("in_tree")].cell_contents
    except (ValueError, IndexError):
        return None
    return tree if hasattr(tree, "num_leaves") else None


def _pmap_in_tree_09() -> Any:
    frame = sys._getframe(2)
    for _ in range(40):
        if frame is None:
            return None
        code = frame.f_code
        if (
            code.co_name == "wrapped"
            and os.path.basename(code.co_filename) == "pmap.py"
        ):
            tree = getattr(frame.f_locals.get("p"), "in_tree", None)
            return tree if hasattr(tree, "num_leaves") else None
        frame = frame.f_back
    return None


def _pmap_wrapped_fun(inner: Any) -> Any:
    """The ``WrappedFun`` inside pmap's jitted function's ``__wrapped__``, or None."""
    code = getattr(inner, "__code__", None)
    if code is not None and os.path.basename(code.co_filename) == "pmap.py":
        closure = getattr(inner, "__closure__", None)
        if "fun" not in code.co_freevars or not closure:
            return None
        try:
            return closure[code.co_freevars.index("fun")].cell_contents
        except (ValueError, IndexError):
            return None
    # jax 0.9: shard_map(wrapped_fun.call_wrapped), a bound method of the WrappedFun
    if getattr(inner, "__name__", "") == "call_wrapped":
        owner = getattr(inner, "__self__", None)
        if owner is not None and is_jax_internal(inner):
            return owner
    return None


def jit_options(jit_info: Any) -> dict[str, str]:
    """The options a ``jax.jit`` wrapper was made with, as short strings (no donation).

    Relies on: ``pjit.PjitInfo`` (a NamedTuple; fields read by name where present).
    """
    skip = {
        "fun_sourceinfo",
        "fun_signature",
        "donate_argnums",
        "donate_argnames",
        "in_shardings_treedef",
        "out_shardings_treedef",
        "in_layouts_treedef",
        "out_layouts_treedef",
    }
    fields = getattr(jit_info, "_fields", ())
    return {
        name: short_repr(getattr(jit_info, name)) for name in fields if name not in skip
    }


def jit_static_and_donated(
    jit_info: Any,
) -> tuple[tuple[int, ...], tuple[str, ...], tuple[int, ...], tuple[str, ...]]:
    """``(static_argnums, static_argnames, donate_argnums, donate_argnames)``.

    Relies on: those four ``PjitInfo`` fields.
    """
    return (
        tuple(getattr(jit_info, "static_argnums", ()) or ()),
        tuple(getattr(jit_info, "static_argnames", ()) or ()),
        tuple(getattr(jit_info, "donate_argnums", ()) or ()),
        tuple(getattr(jit_info, "donate_argnames", ()) or ()),
    )


def jit_signature(jit_info: Any) -> Any:
    """The ``inspect.Signature`` of the jitted Python function, or None.

    Relies on: ``PjitInfo.fun_signature``.
    """
    return getattr(jit_info, "fun_signature", None)


def leaf_type(x: Any) -> tuple[str, str, bool]:
    """``(shape, dtype, weak_type)`` JAX sees for one argument leaf: ``("3,4", "f32", False)``.

    Relies on: ``core.shaped_abstractify`` (ShapedArray with shape/dtype/weak_type).
    """
    return aval_type(require(_core, "shaped_abstractify", "watch_recompiles")(x))


def leaf_placement(x: Any) -> tuple[str, str, bool]:
    """``(sharding, device, committed)`` of an argument leaf as short strings.

    ``device`` is ``"cpu:1"`` for an array on one device, ``""`` otherwise; numpy arrays
    and Python scalars are ``("", "", False)``.

    Relies on: ``jax.Array.sharding`` (public) and ``ArrayImpl._committed`` (private).
    """
    sharding = getattr(x, "sharding", None)
    if sharding is None or not isinstance(x, jax.Array):
        return "", "", False
    committed = bool(getattr(x, "_committed", True))
    device = ""
    try:
        devices = sharding.device_set
        if len(devices) == 1:
            (dev,) = tuple(devices)
            device = f"{dev.platform}:{dev.id}"
    except Exception:
        pass
    return describe_sharding(sharding), device, committed


def describe_sharding(sharding: Any) -> str:
    """A short description of a sharding: ``"P('x',) on mesh x=8"`` or ``"cpu:0"``.

    Relies on: public ``NamedSharding.spec/mesh`` and ``Sharding.device_set``.
    """
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    if spec is not None and mesh is not None:
        try:
            axes = " ".join(f"{k}={v}" for k, v in dict(mesh.shape).items())
        except Exception:
            axes = "?"
        return f"{spec} on mesh {axes}"
    try:
        devices = sharding.device_set
        if len(devices) == 1:
            (dev,) = tuple(devices)
            return f"{dev.platform}:{dev.id}"
        return f"{type(sharding).__name__} over {len(devices)} devices"
    except Exception:
        return short_repr(sharding)


def trace_config() -> tuple[tuple[str, str], ...]:
    """The config options in JAX's trace context as ``(name, value)`` strings.

    A change in any of them makes every jitted function retrace.

    Relies on: ``config.trace_context()`` and, where present (0.10),
    ``config.trace_context_names()``; else public option names read from ``jax.config``.
    """
    ctx_fn = getattr(_config, "trace_context", None)
    if ctx_fn is not None:
        try:
            named = _named_context(ctx_fn())
        except Exception:
            named = None
        if named is not None:
            return named
    out = []
    for name in _FALLBACK_CONFIG_NAMES:
        try:
            value = getattr(jax.config, name)
        except AttributeError:
            continue
        out.append((name, short_repr(value, 40)))
    get_mesh = getattr(jax.sharding, "get_abstract_mesh", None)
    if get_mesh is not None:
        out.append((MESH_CONTEXT, _mesh_str(get_mesh())))
    return tuple(out)


def _named_context(values: Any) -> tuple[tuple[str, str], ...] | None:
    """A trace-context tuple as ``(name, value)`` strings, or None where this JAX
    does not name its entries (``config.trace_context_names``, 0.10)."""
    names_fn = getattr(_config, "trace_context_names", None)
    if names_fn is None:
        return None
    names = names_fn()
    if len(names) != len(values):
        return None
    out = []
    for name, value in zip(names, values, strict=True):
        if name.startswith("jax_"):
            out.append((name, short_repr(value, 40)))
        elif name == "abstract_mesh_context_manager":
            out.append((MESH_CONTEXT, _mesh_str(value)))
        elif name == "user_context":
            out.append((USER_CONTEXT, short_repr(value, 80)))
    return tuple(out)


# The name under which ``jax.make_user_context`` values appear in ``trace_config``.
USER_CONTEXT = "user context (jax.make_user_context)"


# The name under which the active mesh (``jax.set_mesh``) appears in ``trace_config``.
MESH_CONTEXT = "mesh (jax.set_mesh)"


def _mesh_str(mesh: Any) -> str:
    """``"x=8"`` for an abstract mesh, ``"None"`` when none is active."""
    if mesh is None or getattr(mesh, "empty", False):
        return "None"
    try:
        return " ".join(f"{k}={v}" for k, v in dict(mesh.shape).items())
    except Exception:
        return short_repr(mesh, 60)


# ----------------------------------------------------------------------------------
# JAX's own caches: what was traced and lowered before a watcher started


class TraceKey(NamedTuple):
    """One earlier trace of a jitted function, read from JAX's trace cache.

    ``jit_info``: None where the key has none (0.9: options unknown);
    ``static_args``: positional static values (at ``static_positions`` where known
    from the key) then keyword ones (named by ``static_arg_names``); ``treedefs``: one
    per dynamic argument, positional first, then keywords named by
    ``dynamic_arg_names``; ``avals``: ``(shape, dtype, weak_type)`` of every dynamic
    leaf in that order; ``config``: as ``trace_config`` names it (empty where this JAX
    does not name its context). Holds what JAX's cache holds; read it and let it go.
    """

    jit_info: Any
    static_args: tuple[Any, ...]
    static_arg_names: tuple[str, ...]
    dynamic_arg_names: tuple[str, ...]
    treedefs: tuple[Any, ...]
    avals: tuple[tuple[str, str, bool], ...]
    config: tuple[tuple[str, str], ...]
    static_positions: tuple[int, ...] | None = None


def earlier_trace_keys(fun: Any, limit: int = 64) -> list[TraceKey] | None:
    """Every trace of ``fun`` (the function a ``jax.jit`` wraps) in JAX's trace cache;
    None where the cache cannot be read safely now (``trace_cache_readable``).

    Relies on: ``pjit._infer_params_cached`` (a ``weakref_lru_cache``) whose
    ``cache_keys()`` are ``(weakref(fun), trace_context, (jit_info, ArgumentSignature,
    avals, ctx_mesh), kwargs)`` (jax 0.10), and ``ArgumentSignature.static_args``,
    ``.static_arg_names``, ``.dynamic_arg_names``, ``.dynamic_arg_treedefs``; in jax
    0.9, ``_trace_keys_09``.
    """
    keys_fn = getattr(getattr(_pjit, "_infer_params_cached", None), "cache_keys", None)
    if keys_fn is None:
        if not trace_cache_readable():
            return None
        return _trace_keys_09(fun)[-limit:]
    out: list[TraceKey] = []
    for key in keys_fn():
        try:
            if key[0]() is not fun:
                continue
            jit_info, sig, avals, _mesh = key[2]
            out.append(
                TraceKey(
                    jit_info,
                    tuple(sig.static_args),
                    tuple(sig.static_arg_names),
                    tuple(sig.dynamic_arg_names),
                    tuple(sig.dynamic_arg_treedefs),
                    tuple(aval_type(a) for a in avals),
                    _named_context(key[1]) or (),
                )
            )
        except Exception:  # a key of another shape: not one we can read
            continue
    return out[-limit:]


# Threads of IPython and ipykernel that never trace JAX code.
_NON_TRACING_THREADS = frozenset(
    {
        "HistorySavingThread",
        "Heartbeat",
        "IOPubThread",
        "ControlThread",
        "ParentPollerUnix",
        "ParentPollerWindows",
    }
)


def trace_cache_readable() -> bool:
    """Whether jax 0.9's ``trace_to_jaxpr`` cache may be listed now.

    Its ``cache_keys()`` waits for the cache's lock while holding the GIL, and a
    thread tracing through that cache holds the lock while it waits for the GIL: the
    two deadlock (seen with four threads jitting at once). So it is listed only when
    no other thread could be tracing: none runs but the caller and IPython's or
    ipykernel's own. jax 0.10's cache (``_infer_params_cached``) is not affected.
    """
    current = threading.current_thread()
    return all(
        t is current or type(t).__name__ in _NON_TRACING_THREADS
        for t in threading.enumerate()
    )


def _trace_keys_09(fun: Any) -> list[TraceKey]:
    """jax 0.9: ``partial_eval.trace_to_jaxpr`` keys ``(weakref(fun), context,
    (in_avals, debug_info, qdd_token), kwargs)``, ``in_avals`` a ``FlatTree`` whose
    ``tree`` is ``(args, kwargs)`` with each static argument a node of type ``Static``
    (``.val``) and whose ``vals`` are the leaves' avals."""
    keys_fn = getattr(getattr(_pe, "trace_to_jaxpr", None), "cache_keys", None)
    out: list[TraceKey] = []
    for key in keys_fn() if keys_fn is not None else ():
        try:
            if not _refers_to(key, fun):
                continue
            flat = key[2][0]
            avals = tuple(aval_type(a) for a in flat.vals)
            leaves = [_Index(i) for i in range(len(avals))]
            args, kwargs = jax.tree_util.tree_unflatten(flat.tree, leaves)
            out.append(_key_of_parts(tuple(args), dict(kwargs), avals))
        except Exception:  # a key of another shape: not one we can read
            continue
    return out


class _Index:
    """A placeholder leaf: the index of its aval."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


def _key_of_parts(
    args: tuple[Any, ...], kwargs: dict[str, Any], avals: tuple[Any, ...]
) -> TraceKey:
    def static(x: Any) -> bool:
        return type(x).__name__ == "Static" and hasattr(x, "val")

    positions = tuple(i for i, a in enumerate(args) if static(a))
    statics = [a.val for a in args if static(a)]
    static_names = tuple(k for k, v in kwargs.items() if static(v))
    statics += [kwargs[k].val for k in static_names]
    dynamic = [a for a in args if not static(a)]
    dynamic_names = tuple(k for k, v in kwargs.items() if not static(v))
    dynamic += [kwargs[k] for k in dynamic_names]
    order = [x.i for d in dynamic for x in jax.tree_util.tree_leaves(d)]
    return TraceKey(
        None,
        tuple(statics),
        static_names,
        dynamic_names,
        tuple(jax.tree_util.tree_structure(d) for d in dynamic),
        tuple(avals[i] for i in order),
        (),
        positions,
    )


def traced_before(fun: Any, holding: Any = None) -> bool | None:
    """Whether JAX's trace cache holds a trace of ``fun`` (any JAX version), None
    where it cannot be read safely now (``trace_cache_readable``); with
    ``holding``, one whose static arguments hold that very object (a library's inner
    function shared by several user functions, each passed as a static argument).

    Relies on: ``pjit._infer_params_cached`` (0.10: static arguments in the key's
    ``ArgumentSignature``) or ``partial_eval.trace_to_jaxpr`` (0.9),
    ``weakref_lru_cache``s whose keys start with a weak reference to ``fun``.
    """
    for module, name in ((_pjit, "_infer_params_cached"), (_pe, "trace_to_jaxpr")):
        jax_09 = name == "trace_to_jaxpr" and not hasattr(_pjit, "_infer_params_cached")
        if jax_09 and not trace_cache_readable():
            return None
        try:
            keys = getattr(module, name).cache_keys()
        except Exception:  # absent or different in this JAX
            continue
        for key in keys:
            if _refers_to(key, fun) and (
                holding is None or _holds(_static_args_of(key), holding, 4)
            ):
                return True
    return False


def _refers_to(key: Any, fun: Any) -> bool:
    try:
        return key[0]() is fun
    except Exception:
        return False


def _static_args_of(key: Any) -> Any:
    try:
        return key[2][1].static_args
    except Exception:
        return ()


def _holds(value: Any, obj: Any, depth: int) -> bool:
    if value is obj:
        return True
    if depth and isinstance(value, (tuple, list)):
        return any(_holds(v, obj, depth - 1) for v in value)
    return False


def aval_type(aval: Any) -> tuple[str, str, bool]:
    """``(shape, dtype, weak_type)`` of an abstract value, as ``leaf_type`` gives them."""
    shape = ",".join(str(d) for d in getattr(aval, "shape", ()))
    dtype = getattr(aval, "dtype", None)
    dtype_s = short_dtype(dtype) if dtype is not None else type(aval).__name__
    return shape, dtype_s, bool(getattr(aval, "weak_type", False))


def lowered_input_types(
    fun_sourceinfo: Any,
) -> list[tuple[tuple[str, str, bool], ...]] | None:
    """The input types (``aval_type``, consts first) of every traced computation of
    the function at ``fun_sourceinfo`` (``"step at /path/train.py:3"``) that JAX's
    lowering cache holds: the traces that were lowered, and so compiled or about to
    be, not those only looked at (``.trace``, ``jax.make_jaxpr``, ``js.jaxpr``).
    None where this JAX's cache cannot be read.

    Relies on: ``pjit._pjit_lower`` (a ``weakref_lru_cache``) whose ``cache_keys()``
    start with a weak reference to the ``ClosedJaxpr``, whose
    ``jaxpr.debug_info.func_src_info`` is ``PjitInfo.fun_sourceinfo``.
    """
    keys_fn = getattr(getattr(_pjit, "_pjit_lower", None), "cache_keys", None)
    if keys_fn is None or not fun_sourceinfo:
        return None
    out = []
    for key in keys_fn():
        try:
            closed = key[0]()
            if jaxpr_source(closed) != fun_sourceinfo:
                continue
            out.append(tuple(aval_type(a) for a in closed.in_avals))
        except Exception:  # a key of another shape: not one we can read
            continue
    return out


def lowerings(jaxpr: Any) -> list[tuple[str, ...]]:
    """How JAX's lowering cache holds ``jaxpr`` (a traced jit) lowered: per lowering,
    the placement of each input as ``describe_sharding`` spells it, ``""`` where JAX
    chose (uncommitted inputs); consts first, as JAX orders them.

    Relies on: ``pjit._pjit_lower`` (a ``weakref_lru_cache``) whose ``cache_keys()``
    are ``(weakref(jaxpr), trace_context, (in_shardings, ...), kwargs)``.
    """
    keys_fn = getattr(getattr(_pjit, "_pjit_lower", None), "cache_keys", None)
    if keys_fn is None or jaxpr is None:
        return []
    out = []
    for key in keys_fn():
        try:
            if key[0]() is not jaxpr:
                continue
            out.append(tuple(_placement_of(s) for s in key[2][0]))
        except Exception:  # a key of another shape: not one we can read
            continue
    return out


def _placement_of(sharding: Any) -> str:
    if sharding is None or type(sharding).__name__ == "UnspecifiedValue":
        return ""
    return describe_sharding(sharding)
