"""Recompilation causes: one ``RecompileEvent`` per jit cache miss, with its causes and cost.

``watch_recompiles()`` hooks only the miss path of ``jax.jit`` (see
``jaxscope.compat.recompiles``): a cache hit runs in C++ and never reaches Python, so
watching costs nothing there. On each miss the watcher records what JAX will key its
caches on (argument types with their pytree paths, static values, shardings, devices,
donation, jit options, the trace-context config) and, when the miss really traced,
lowered or compiled, compares that with the closest earlier compile of the same Python
function to say why: ``Cause(kind, path, before, after, hint)``.

JAX's own eager op dispatch (``jnp.ones(4)`` outside jit compiles
``jit(broadcast_in_dim)``) and functions defined inside JAX are never user events; they
are only counted in ``RecompileLog.internal_compiles``. ``jax.pmap`` (in jax 0.10 a jit
of a JAX-made ``shard_map`` wrapper) is reported as ``pmap(<user function>)``. Explicit
ahead-of-time ``f.trace(...)``/``f.lower(...).compile()`` are not call misses and are
not recorded. Watchers are process-wide: a watcher sees the misses of every thread while
it is active, and the compile history used to explain a miss is shared by all watchers
(kept by weak reference to each function, so nothing user-owned is held alive).

Internal API for other features (purity checks): ``add_trace_listener(callback)`` /
``remove_trace_listener(callback)``. ``callback(phase, function, info)`` is called on
the tracing thread with ``phase`` ``"trace_start"`` (JAX is about to trace ``function``,
the user's Python callable, for a jit cache miss; nested jitted functions included) and
``"trace_end"`` (that trace, and the lowering/compile of the miss, finished
successfully). ``info`` is a ``TraceInfo``. The callback must not keep ``function``
alive. While any listener is registered the miss hooks stay installed.
"""

from __future__ import annotations

import inspect
import re
import threading
import time
import warnings
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax

from jaxscope._display import Renderable
from jaxscope._exceptions import RecompileWatchError
from jaxscope._records import SourceLoc
from jaxscope._source import display_filename, loc_of_function, user_frame_of_stack
from jaxscope.compat import recompiles as _crec

CAUSE_KINDS = (
    "first_call",
    "new_function",
    "redefined_function",
    "shape",
    "dtype",
    "weak_type",
    "static_arg",
    "tree_structure",
    "sharding",
    "config",
    "donation",
    "device",
    "other",
)

_HISTORY_LIMIT = 64


# ----------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    """Why one cache miss happened.

    ``kind`` is one of ``CAUSE_KINDS``; ``path`` names the argument in the user's
    names (``"params['w'][0]"``, ``"y (keyword)"``) or the config option; ``before`` /
    ``after`` are short readable values; ``hint`` a concrete fix.
    """

    kind: str
    path: str
    before: str
    after: str
    hint: str

    def __str__(self) -> str:
        return describe_cause(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecompileEvent:
    """One jit cache miss that traced and/or compiled a user function.

    ``seconds`` is the trace + lowering + compile time this miss cost. ``traced`` and
    ``compiled`` say which of these happened (a new device or donation recompiles
    without a retrace). ``signature`` lists ``(path, type)`` of the call's arguments.
    """

    function: str
    defined_at: SourceLoc | None
    call_site: SourceLoc | None
    causes: list[Cause]
    seconds: float
    traced: bool = True
    compiled: bool = True
    signature: tuple[tuple[str, str], ...] = ()
    thread: str = ""

    @property
    def kinds(self) -> list[str]:
        return [c.kind for c in self.causes]

    def __str__(self) -> str:
        return describe_event(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceInfo:
    """What a trace listener learns about one trace of a jitted user function."""

    function: str
    defined_at: SourceLoc | None
    call_site: SourceLoc | None
    args: tuple[tuple[str, str], ...]
    nested: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class SummaryRow:
    """Per function: C++ cache misses seen, traces, compiles, seconds, top causes."""

    function: str
    defined_at: SourceLoc | None
    calls: int
    traces: int
    compiles: int
    seconds: float
    top_causes: list[tuple[str, int]]


class RecompileSummary(Renderable):
    """``log.summary()``: one row per function, worst (most compiles, then seconds) first.

    ``calls`` counts the calls that missed JAX's C++ cache (cache hits never reach
    Python, which is why watching is free).
    """

    __slots__ = ("internal_compiles", "rows")

    def __init__(self, rows: list[SummaryRow], internal_compiles: int = 0) -> None:
        self.rows = rows
        self.internal_compiles = internal_compiles

    @property
    def total_compiles(self) -> int:
        return sum(r.compiles for r in self.rows)

    @property
    def total_seconds(self) -> float:
        return sum(r.seconds for r in self.rows)

    def row(self, function: str) -> SummaryRow | None:
        """The row of the function named ``function`` (qualified or short name)."""
        for r in self.rows:
            if function_matches(r.function, function):
                return r
        return None

    def __repr__(self) -> str:
        return (
            f"<RecompileSummary: {len(self.rows)} functions, "
            f"{self.total_compiles} compiles, {self.total_seconds:.3f} s>"
        )


# ----------------------------------------------------------------------------------
# Text helpers shared by renderers, the pytest plugin and the CLI


def function_matches(qualname: str, wanted: str) -> bool:
    """``wanted`` names ``qualname`` exactly or as its last dotted component."""
    return qualname == wanted or qualname.rsplit(".", 1)[-1] == wanted


def describe_cause(cause: Cause) -> str:
    """``"shape x: f32[3] → f32[4]"``; ``"first call"`` for a first compile."""
    if cause.kind == "first_call":
        return "first call"
    head = cause.kind if not cause.path else f"{cause.kind} {cause.path}"
    if cause.before or cause.after:
        return f"{head}: {cause.before} → {cause.after}"
    return head


def describe_event(event: RecompileEvent) -> str:
    """One line: function, call site, causes, milliseconds."""
    where = f" at {event.call_site}" if event.call_site else ""
    causes = "; ".join(describe_cause(c) for c in event.causes) or "unknown cause"
    what = (
        ""
        if event.traced and event.compiled
        else " [compile only, no retrace]"
        if event.compiled
        else " [trace only]"
    )
    return f"{event.function}{where}: {causes}{what} ({event.seconds * 1000:.1f} ms)"


# ----------------------------------------------------------------------------------
# Signatures: what JAX keys its caches on, as strings


@dataclass(frozen=True, slots=True)
class _Leaf:
    shape: str
    dtype: str
    weak: bool
    placement: str  # "" for uncommitted single-device / host values
    device: str

    def type_str(self) -> str:
        weak = " (weak: Python scalar)" if self.weak else ""
        return f"{self.dtype}[{self.shape}]{weak}"


@dataclass(frozen=True, slots=True)
class _Arg:
    base: str  # parameter name
    keyword: bool
    static: bool
    static_repr: str = ""
    static_key: Any = None  # (type name, hash) or repr
    identity_hash: bool = False
    treedef: str = ""
    leaves: tuple[tuple[str, _Leaf], ...] = ()

    @property
    def display(self) -> str:
        return f"{self.base} (keyword)" if self.keyword else self.base

    def path(self, sub: str = "") -> str:
        return f"{self.base}{sub} (keyword)" if self.keyword else f"{self.base}{sub}"


@dataclass(frozen=True, slots=True)
class _Signature:
    options: tuple[tuple[str, str], ...]
    donated: tuple[str, ...]
    config: tuple[tuple[str, str], ...]
    args: tuple[_Arg, ...]

    def flat(self) -> tuple[tuple[str, str], ...]:
        out: list[tuple[str, str]] = []
        for arg in self.args:
            if arg.static:
                out.append((arg.path(), f"static {arg.static_repr}"))
            else:
                out.extend((arg.path(p), leaf.type_str()) for p, leaf in arg.leaves)
        return tuple(out)


def _short(value: Any, limit: int = 40) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _leaf(x: Any) -> _Leaf:
    try:
        shape, dtype, weak = _crec.leaf_type(x)
    except Exception:
        shape, dtype, weak = "?", type(x).__name__, False
    sharding, device, committed = _crec.leaf_placement(x)
    if not committed and (not sharding or device):
        placement, device = "", ""
    else:
        placement = sharding + ("" if committed else " (uncommitted)")
    return _Leaf(shape, dtype, weak, placement, device)


def _static_arg(base: str, keyword: bool, value: Any) -> _Arg:
    identity = type(value).__hash__ is object.__hash__
    try:
        key: Any = (type(value).__qualname__, hash(value))
    except TypeError:
        key = ("unhashable", _short(value, 200))
    return _Arg(
        base=base,
        keyword=keyword,
        static=True,
        static_repr=_short(value),
        static_key=key,
        identity_hash=identity,
    )


def _dynamic_arg(base: str, keyword: bool, value: Any) -> _Arg:
    leaves_with_paths, treedef = jax.tree_util.tree_flatten_with_path(value)
    leaves = tuple(
        (jax.tree_util.keystr(path), _leaf(leaf)) for path, leaf in leaves_with_paths
    )
    return _Arg(
        base=base, keyword=keyword, static=False, treedef=str(treedef), leaves=leaves
    )


def _signature(
    fun: Any,
    jit_info: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    user: Any = None,
) -> _Signature:
    static_nums, static_names, donate_nums, donate_names = _crec.jit_static_and_donated(
        jit_info
    )
    sig = _crec.jit_signature(jit_info)
    if user is not None:  # pmap: flat arguments; name them after the user's parameters
        try:
            user_sig = inspect.signature(user)
        except (TypeError, ValueError):
            user_sig = None
        if (
            user_sig is not None
            and len(user_sig.parameters) == len(args)
            and all(
                p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                for p in user_sig.parameters.values()
            )
        ):
            sig = user_sig
    positional: list[str] = []
    varargs = None
    if isinstance(sig, inspect.Signature):
        for p in sig.parameters.values():
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positional.append(p.name)
            elif p.kind == p.VAR_POSITIONAL:
                varargs = p.name
    n = len(args)
    statics = {i % n if i < 0 and n else i for i in static_nums}
    donated_idx = {i % n if i < 0 and n else i for i in donate_nums}
    out: list[_Arg] = []
    donated: list[str] = []
    for i, value in enumerate(args):
        if i < len(positional):
            base = positional[i]
        elif varargs is not None:
            base = f"{varargs}[{i - len(positional)}]"
        else:
            base = f"args[{i}]"
        if i in statics or base in static_names:
            out.append(_static_arg(base, False, value))
        else:
            out.append(_dynamic_arg(base, False, value))
        if i in donated_idx or base in donate_names:
            donated.append(base)
    for key, value in kwargs.items():
        idx = positional.index(key) if key in positional else -1
        if key in static_names or (idx >= 0 and idx in static_nums):
            out.append(_static_arg(key, True, value))
        else:
            out.append(_dynamic_arg(key, True, value))
        if key in donate_names or (idx >= 0 and idx in donate_nums):
            donated.append(f"{key} (keyword)")
    options = tuple(sorted(_crec.jit_options(jit_info).items()))
    return _Signature(options, tuple(donated), _crec.trace_config(), tuple(out))


# ----------------------------------------------------------------------------------
# Classification


def _diff_tree(prev: _Arg, cur: _Arg) -> Cause:
    prev_paths = {p for p, _ in prev.leaves}
    cur_paths = {p for p, _ in cur.leaves}
    added = sorted(cur_paths - prev_paths)
    removed = sorted(prev_paths - cur_paths)
    name = cur.display
    if added or removed:
        prefix = _common_prefix(added + removed)
        rel_add = [p[len(prefix) :] or p for p in added]
        rel_rem = [p[len(prefix) :] or p for p in removed]
        path = cur.path(prefix)
        if added and not removed:
            before, after = f"without {_join(rel_add)}", f"with {_join(rel_add)}"
        elif removed and not added:
            before, after = f"with {_join(rel_rem)}", f"without {_join(rel_rem)}"
        else:
            before, after = f"with {_join(rel_rem)}", f"with {_join(rel_add)}"
    else:
        path = name
        before, after = _short(prev.treedef, 50), _short(cur.treedef, 50)
    hint = (
        f"{path} changes pytree structure ({before} → {after}), and each structure "
        "compiles again: pass the same keys/lengths on every call (fill absent "
        "entries with placeholders) or mark it static"
    )
    return Cause(
        kind="tree_structure", path=path, before=before, after=after, hint=hint
    )


def _common_prefix(paths: list[str]) -> str:
    if not paths:
        return ""
    first = paths[0]
    # cut at the start of the last key component the paths share
    end = 0
    for i in range(len(first)):
        if any(len(p) <= i or p[i] != first[i] for p in paths):
            break
        if first[i] in "[.":
            end = i
    if len(paths) == 1:
        end = max(first.rfind("["), first.rfind("."), 0)
    return first[:end]


def _join(items: list[str], limit: int = 3) -> str:
    text = ", ".join(items[:limit])
    return text + (f" (+{len(items) - limit})" if len(items) > limit else "")


def _diff_leaves(prev: _Arg, cur: _Arg) -> list[Cause]:
    causes: list[Cause] = []
    for (path, a), (_, b) in zip(prev.leaves, cur.leaves):
        where = cur.path(path)
        if a.shape != b.shape:
            causes.append(
                Cause(
                    kind="shape",
                    path=where,
                    before=f"{a.dtype}[{a.shape}]",
                    after=f"{b.dtype}[{b.shape}]",
                    hint=f"{where} changes shape [{a.shape}] → [{b.shape}] and every new "
                    "shape compiles again: pad to a fixed size or bucket sizes (e.g. round "
                    "the batch up to a power of 2)",
                )
            )
        if a.dtype != b.dtype:
            causes.append(
                Cause(
                    kind="dtype",
                    path=where,
                    before=a.dtype,
                    after=b.dtype,
                    hint=f"{where} changes dtype {a.dtype} → {b.dtype}: cast it once "
                    f"before the call (e.g. jnp.asarray(v, jnp.{_np_name(a.dtype)}))",
                )
            )
        if a.weak != b.weak and a.dtype == b.dtype:
            causes.append(
                Cause(
                    kind="weak_type",
                    path=where,
                    before=a.type_str(),
                    after=b.type_str(),
                    hint=f"{where} is a Python scalar on one call and a JAX array on "
                    "another (weak_type differs): pass the same kind every time, e.g. "
                    f"jnp.asarray(v, jnp.{_np_name(b.dtype)}), or mark it static",
                )
            )
        if a.placement != b.placement:
            single = bool(a.device or b.device) and (
                "mesh" not in a.placement + b.placement
            )
            kind = "device" if single else "sharding"
            before = a.placement or "uncommitted (default device)"
            after = b.placement or "uncommitted (default device)"
            if kind == "device":
                hint = (
                    f"{where} moves from {before} to {after}; a committed array "
                    "on another device compiles again: keep arrays on one device, "
                    "or jax.device_put them to the same device before the call"
                )
            else:
                hint = (
                    f"{where} arrives with sharding {before} → {after}: "
                    "jax.device_put it with one NamedSharding before the call, "
                    "or fix in_shardings on jax.jit"
                )
            causes.append(
                Cause(kind=kind, path=where, before=before, after=after, hint=hint)
            )
    return causes


def _np_name(dtype: str) -> str:
    return (
        {"f": "float", "i": "int", "u": "uint", "c": "complex"}.get(dtype[:1], "")
        + dtype[1:]
        if dtype[:1] in "fiuc" and dtype[1:].isdigit()
        else dtype
    )


def _diff(prev: _Signature, cur: _Signature, fn: str) -> list[Cause]:
    causes: list[Cause] = []
    prev_cfg, cur_cfg = (
        (dict(prev.config), dict(cur.config))
        if (prev.config != cur.config)
        else ({}, {})
    )
    for name, value in cur_cfg.items():
        old = prev_cfg.get(name)
        if old is not None and old != value:
            if name == _crec.MESH_CONTEXT:
                hint = (
                    f"the active mesh changed ({old} → {value}) and jitted "
                    "functions trace again under each mesh: set the mesh once "
                    "around the whole program, not around individual calls"
                )
            else:
                hint = (
                    f"config option {name} changed {old} → {value} and every "
                    "jitted function traces again under it: set it once at "
                    "program start, not around individual calls"
                )
            causes.append(
                Cause(kind="config", path=name, before=old, after=value, hint=hint)
            )
    if prev.options != cur.options:
        po, co = dict(prev.options), dict(cur.options)
        diff = [k for k in sorted(set(po) | set(co)) if po.get(k) != co.get(k)]
        before = _short_text(", ".join(f"{k}={po.get(k)}" for k in diff), 70)
        after = _short_text(", ".join(f"{k}={co.get(k)}" for k in diff), 70)
        causes.append(
            Cause(
                kind="new_function",
                path=fn,
                before=before,
                after=after,
                hint=f"{fn} was compiled before through another jax.jit wrapper with "
                "different options: create the jitted function once and reuse it",
            )
        )
    if prev.donated != cur.donated:
        before = ", ".join(prev.donated) or "nothing donated"
        after = ", ".join(cur.donated) or "nothing donated"
        causes.append(
            Cause(
                kind="donation",
                path=", ".join(cur.donated or prev.donated),
                before=before,
                after=after,
                hint=f"{fn} is jitted both with and without donate_argnums "
                f"({before} → {after}), which compiles it twice: use one jitted wrapper",
            )
        )
    prev_args = {a.base: a for a in prev.args}
    cur_args = {a.base: a for a in cur.args}
    for base, ca in cur_args.items():
        pa = prev_args.get(base)
        if pa is None:
            causes.append(
                Cause(
                    kind="tree_structure",
                    path=ca.display,
                    before="not passed",
                    after="passed",
                    hint=f"{ca.display} is passed on this call but was not before "
                    "(its default was used): pass it the same way on every call",
                )
            )
            continue
        if pa.keyword != ca.keyword:
            how = ("positionally", "by keyword")
            causes.append(
                Cause(
                    kind="tree_structure",
                    path=ca.display,
                    before=f"passed {how[pa.keyword]}",
                    after=f"passed {how[ca.keyword]}",
                    hint=f"{base} is passed {how[pa.keyword]} on one call and "
                    f"{how[ca.keyword]} on another, which JAX keys as different "
                    "structures: pass it the same way every time",
                )
            )
            continue
        if pa.static != ca.static:
            causes.append(
                Cause(
                    kind="static_arg",
                    path=ca.display,
                    before="static" if pa.static else "traced",
                    after="static" if ca.static else "traced",
                    hint=f"{ca.display} switches between static and traced"
                    ": use one jitted wrapper",
                )
            )
            continue
        if ca.static:
            if pa.static_key != ca.static_key:
                if pa.static_repr == ca.static_repr and ca.identity_hash:
                    hint = (
                        f"static argument {ca.display} is a new "
                        f"{ca.static_key[0]} object on each call, hashed by "
                        "identity, so it never hits the cache: define __hash__ "
                        "and __eq__ by value or reuse one object"
                    )
                    before, after = (
                        f"{pa.static_repr} (object {pa.static_key[1]:#x})",
                        f"{ca.static_repr} (object {ca.static_key[1]:#x})",
                    )
                else:
                    hint = (
                        f"static argument {ca.display} changes value "
                        f"{pa.static_repr} → {ca.static_repr}; each distinct "
                        "value compiles again: pass it as a traced array if it is "
                        "data, or limit the values it takes"
                    )
                    before, after = pa.static_repr, ca.static_repr
                causes.append(
                    Cause(
                        kind="static_arg",
                        path=ca.display,
                        before=before,
                        after=after,
                        hint=hint,
                    )
                )
            continue
        if pa.treedef != ca.treedef:
            causes.append(_diff_tree(pa, ca))
            continue
        causes.extend(_diff_leaves(pa, ca))
    for base, pa in prev_args.items():
        if base not in cur_args:
            causes.append(
                Cause(
                    kind="tree_structure",
                    path=pa.display,
                    before="passed",
                    after="not passed",
                    hint=f"{pa.display} was passed before but not on this call (its "
                    "default is used): pass it the same way on every call",
                )
            )
    return causes


# ----------------------------------------------------------------------------------
# Global state: active watchers, per-thread miss frames, compile history


class _Frame:
    __slots__ = (
        "call_site",
        "compiles",
        "eager_key",
        "fun_id",
        "fun_name",
        "fun_ref",
        "generation",
        "internal",
        "lowers",
        "monitored",
        "nested",
        "sig",
        "start",
        "trace_started",
        "traces",
        "user_ref",
    )

    def __init__(self) -> None:
        self.traces = 0
        self.lowers = 0
        self.compiles = 0
        self.monitored = 0.0
        self.trace_started = False
        self.eager_key: tuple[str, str, int] | None = None


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.logs: list[RecompileLog] = []
        self.trace_listeners: list[Callable[[str, Any, TraceInfo], None]] = []
        self.local = threading.local()
        self.generation = 0
        # fun -> signatures it compiled with (most recent last)
        self.history: weakref.WeakKeyDictionary[Any, list[_Signature]] = (
            weakref.WeakKeyDictionary()
        )
        # (file, line, qualname) of functions compiled -> how many function objects
        self.code_seen: Counter[tuple[str, int, str]] = Counter()
        # (name, file, line) of computations compiled outside jit -> signatures
        self.eager_history: dict[tuple[str, str, int], list[_Signature]] = {}
        self.hooks = _crec.MissHooks(
            _on_start, _on_end, _on_test_event, _on_duration, _on_eager_start
        )

    def stack(self) -> list[_Frame]:
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    def refresh_hooks(self) -> None:
        if self.logs or self.trace_listeners:
            if not self.hooks.installed:
                self.generation += 1
                self.hooks.install()
        elif self.hooks.installed:
            self.hooks.uninstall()


def _on_start(
    fun: Any, jit_info: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    try:
        _start(fun, jit_info, args, kwargs)
    except Exception as exc:  # a bug here must never break the user's call
        _internal_error("start", exc)


def _internal_error(where: str, exc: Exception) -> None:
    warnings.warn(
        f"jaxscope: the recompile watcher failed at {where} "
        f"({type(exc).__name__}: {exc}); this miss is not recorded",
        RuntimeWarning,
        stacklevel=3,
    )


def _start(
    fun: Any, jit_info: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    stack = _STATE.stack()
    gen = _STATE.generation
    while stack and stack[-1].generation != gen:
        stack.pop()
    frame = _Frame()
    frame.generation = gen
    frame.fun_id = id(fun)
    frame.start = time.perf_counter()
    frame.nested = bool(stack)
    frame.internal = _crec.is_jax_internal(fun)
    frame.sig = None
    frame.fun_ref = None
    frame.user_ref = None
    frame.fun_name = ""
    frame.call_site = None
    user = _crec.pmap_user_function(fun) if frame.internal else None
    if (
        user is not None
    ):  # jax.pmap: jit of a JAX-made wrapper around the user's function
        frame.internal = False
    if not frame.internal:
        try:
            frame.fun_ref = weakref.ref(fun)
            frame.user_ref = weakref.ref(user) if user is not None else frame.fun_ref
        except TypeError:
            frame.fun_ref = None
        frame.fun_name = (
            f"pmap({_qualname(user)})" if user is not None else _qualname(fun)
        )
        if not frame.nested or _STATE.trace_listeners:
            try:
                frame.sig = _signature(fun, jit_info, args, kwargs, user)
            except Exception as exc:  # never break the user's call
                warnings.warn(
                    f"jaxscope: could not read the arguments of "
                    f"{frame.fun_name} ({type(exc).__name__}: {exc})",
                    RuntimeWarning,
                    stacklevel=2,
                )
            frame.call_site = user_frame_of_stack(3)
    stack.append(frame)


_SOURCE = re.compile(r"^(?P<fn>.*?) at (?P<file>.*):(?P<line>\d+)$")


def _on_eager_start(name: str, source: str, args: tuple[Any, ...]) -> Any:
    """A transformed jitted computation run outside jit (``jax.grad(jitted_f)``'s
    backward pass) missed the cache: a frame of its own unless inside another miss."""
    try:
        stack = _STATE.stack()
        gen = _STATE.generation
        while stack and stack[-1].generation != gen:
            stack.pop()
        if stack:
            return None  # part of the miss being recorded
        match = _SOURCE.match(source)
        file, line = (
            (match.group("file"), int(match.group("line"))) if match else ("", 0)
        )
        token = object()
        frame = _Frame()
        frame.generation = gen
        frame.fun_id = id(token)
        frame.start = time.perf_counter()
        frame.nested = False
        frame.internal = bool(file) and _crec.is_jax_file(file)
        frame.sig = None
        frame.fun_ref = frame.user_ref = None
        frame.fun_name = f"{name} (transformed, run outside jit)"
        frame.call_site = None
        if not frame.internal:
            frame.eager_key = (name, file, line)
            frame.call_site = user_frame_of_stack(3)
            frame.sig = _Signature(
                (),
                (),
                _crec.trace_config(),
                tuple(_dynamic_arg(f"args[{i}]", False, a) for i, a in enumerate(args)),
            )
        stack.append(frame)
        return token
    except Exception as exc:  # never break the user's call
        _internal_error("eager start", exc)
        return None


def _on_test_event(what: str) -> None:
    stack = getattr(_STATE.local, "stack", None)
    if not stack:
        return
    frame = stack[-1]
    if what == "trace":
        frame.traces += 1
        if (
            not frame.trace_started
            and not frame.internal
            and _STATE.trace_listeners
            and frame.fun_ref is not None
        ):
            frame.trace_started = True
            _notify_trace("trace_start", frame)
    elif what == "lower":
        frame.lowers += 1
    else:
        frame.compiles += 1


def _on_duration(seconds: float) -> None:
    stack = getattr(_STATE.local, "stack", None)
    if stack:
        stack[-1].monitored += seconds


def _on_end(fun: Any, error: BaseException | None) -> None:
    try:
        _end(fun, error)
    except Exception as exc:  # a bug here must never break the user's call
        _internal_error("end", exc)


def _end(fun: Any, error: BaseException | None) -> None:
    stack = getattr(_STATE.local, "stack", None)
    if not stack:
        return
    fid = id(fun)
    for i in range(len(stack) - 1, -1, -1):
        if stack[i].fun_id == fid:
            frame = stack[i]
            del stack[i:]
            break
    else:
        return
    if error is not None:
        return
    if frame.internal:
        if frame.compiles and not frame.nested:
            with _STATE.lock:
                for log in _STATE.logs:
                    log.internal_compiles += frame.compiles
        return
    if frame.traces and _STATE.trace_listeners and frame.fun_ref is not None:
        _notify_trace("trace_end", frame)
    if frame.nested:
        return
    _record(frame)


def _notify_trace(phase: str, frame: _Frame) -> None:
    fun = frame.user_ref() if frame.user_ref is not None else None
    if fun is None:
        return
    info = TraceInfo(
        function=frame.fun_name,
        defined_at=loc_of_function(fun),
        call_site=frame.call_site,
        args=frame.sig.flat() if frame.sig is not None else (),
        nested=frame.nested,
    )
    for cb in list(_STATE.trace_listeners):
        try:
            cb(phase, fun, info)
        except Exception as exc:
            warnings.warn(
                f"jaxscope: trace listener {cb!r} failed ({type(exc).__name__}: {exc})",
                RuntimeWarning,
                stacklevel=2,
            )


def _qualname(fun: Any) -> str:
    seen = 0
    while seen < 10 and not hasattr(fun, "__qualname__"):
        inner = getattr(fun, "func", None) or getattr(fun, "__wrapped__", None)
        if inner is None:
            break
        fun = inner
        seen += 1
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None)
    return str(name) if name else type(fun).__name__


def _code_key(fun: Any) -> tuple[str, int, str] | None:
    for _ in range(10):
        code = getattr(fun, "__code__", None)
        if code is not None:
            return (code.co_filename, code.co_firstlineno, code.co_name)
        fun = getattr(fun, "func", None) or getattr(fun, "__wrapped__", None)
        if fun is None:
            return None
    return None


def _record(frame: _Frame) -> None:
    fun = frame.fun_ref() if frame.fun_ref is not None else None
    with _STATE.lock:
        logs = list(_STATE.logs)
        if not logs:
            return
        if not (frame.traces or frame.compiles):
            for log in logs:
                log._count_miss(frame.fun_name, fun)
            return
        user = frame.user_ref() if frame.user_ref is not None else None
        defined_at = loc_of_function(user) if user is not None else None
        if frame.eager_key is not None:
            _, file, line = frame.eager_key
            if file:
                defined_at = SourceLoc(
                    file=display_filename(file), line=line, function=frame.eager_key[0]
                )
            causes = _classify_eager(frame, defined_at)
        else:
            causes = _classify(fun, user, frame, defined_at)
        seconds = frame.monitored or (time.perf_counter() - frame.start)
        event = RecompileEvent(
            function=frame.fun_name,
            defined_at=defined_at,
            call_site=frame.call_site,
            causes=causes,
            seconds=seconds,
            traced=bool(frame.traces),
            compiled=bool(frame.compiles),
            signature=frame.sig.flat() if frame.sig is not None else (),
            thread=threading.current_thread().name,
        )
        for log in logs:
            log._add(event, fun)


def _classify_eager(frame: _Frame, defined_at: SourceLoc | None) -> list[Cause]:
    key = frame.eager_key
    assert key is not None and frame.sig is not None
    name = frame.fun_name
    history = _STATE.eager_history.get(key)
    fix = (
        f"jit the transformed function once (e.g. jax.jit(jax.grad({key[0]}))) "
        "so the whole computation compiles together and is cached"
    )
    if not history:
        _STATE.eager_history[key] = [frame.sig]
        return [
            Cause(
                kind="first_call",
                path=name,
                before="",
                after="",
                hint=f"a transformation of the jitted {key[0]} (e.g. the backward pass of "
                f"jax.grad) ran outside jit and compiled on its own: {fix}",
            )
        ]
    best: list[Cause] | None = None
    for prev in reversed(history):
        diff = _diff(prev, frame.sig, name)
        if best is None or len(diff) < len(best):
            best = diff
        if not diff:
            break
    history.append(frame.sig)
    if len(history) > _HISTORY_LIMIT:
        del history[0]
    return best or [
        Cause(
            kind="other",
            path=name,
            before="",
            after="",
            hint=f"recompiled with identical arguments: {fix}",
        )
    ]


def _classify(
    fun: Any, user: Any, frame: _Frame, defined_at: SourceLoc | None
) -> list[Cause]:
    sig = frame.sig
    history = None
    if fun is not None:
        try:
            history = _STATE.history.get(fun)
        except TypeError:
            history = None
    name = frame.fun_name
    if not history:
        code = _code_key(user) if user is not None else None
        seen_code = bool(code and _STATE.code_seen[code])
        if code is not None:
            _STATE.code_seen[code] += 1
        if sig is not None and fun is not None:
            try:
                _STATE.history[fun] = [sig]
            except TypeError:
                pass
        where = str(defined_at) if defined_at else "its definition"
        if not frame.traces and frame.compiles:
            return [
                Cause(
                    kind="new_function",
                    path=name,
                    before="compiled before this watcher",
                    after="compiled again",
                    hint=f"{name} was already traced (before this watcher started), and "
                    "this jitted wrapper compiles it again: a second jax.jit(...) of the "
                    "same function with other options, or new arguments placement; create "
                    "the jitted function once and reuse it",
                )
            ]
        if seen_code:
            site = f" (called at {frame.call_site})" if frame.call_site else ""
            return [
                Cause(
                    kind="redefined_function",
                    path=name,
                    before=f"{_STATE.code_seen[code] - 1} earlier function object(s) "
                    f"from {where}",
                    after="a new function object",
                    hint=f"a new {name} is created at {where} and jitted again each "
                    f"time{site}: jit inside a loop or jax.jit(lambda ...) re-defined on "
                    "every pass never hits the cache; hoist the jax.jit(...) out of the "
                    "loop and reuse it",
                )
            ]
        return [
            Cause(
                kind="first_call",
                path=name,
                before="",
                after="",
                hint=f"the first compile of {name}: expected once per function; warm it "
                "up before timing",
            )
        ]
    if sig is None:
        return [
            Cause(
                kind="other",
                path=name,
                before="",
                after="",
                hint="jaxscope could not read this call's arguments",
            )
        ]
    best: list[Cause] | None = None
    for prev in reversed(history):
        diff = _diff(prev, sig, name)
        if best is None or len(diff) < len(best):
            best = diff
        if not diff:
            break
    history.append(sig)
    if len(history) > _HISTORY_LIMIT:
        del history[0]
    if best:
        return best
    what = "recompiled" if not frame.traces else "retraced"
    return [
        Cause(
            kind="other",
            path=name,
            before="",
            after="",
            hint=f"{name} was {what} with arguments, options and config identical to an "
            "earlier compile: its caches were cleared (jax.clear_caches(), "
            "f.clear_cache()) or evicted, or a cache key jaxscope does not see changed "
            "(layouts, compiler options, context managers)",
        )
    ]


_STATE = _State()


# ----------------------------------------------------------------------------------
# Public: the watcher


class RecompileLog(Renderable):
    """Every jit cache miss that traced or compiled a user function while watching.

    A context manager (``with js.watch_recompiles() as log:``) and also
    ``log.start()`` / ``log.stop()``; it may be started and stopped repeatedly and
    accumulates. Watchers nest: each records what happens while it is active.
    """

    __slots__ = (
        "__weakref__",
        "_calls",
        "_lock",
        "active",
        "events",
        "internal_compiles",
    )

    def __init__(self) -> None:
        self.events: list[RecompileEvent] = []
        self.internal_compiles = 0
        self.active = False
        self._calls: Counter[str] = Counter()
        self._lock = threading.Lock()

    def start(self) -> RecompileLog:
        """Start watching (raises if this log is already watching)."""
        with _STATE.lock:
            if self.active:
                raise RecompileWatchError(
                    "this recompile log is already watching; call stop() before "
                    "start(), or use a new js.watch_recompiles()"
                )
            self.active = True
            _STATE.logs.append(self)
            _STATE.refresh_hooks()
        return self

    def stop(self) -> RecompileLog:
        """Stop watching (no-op when not watching); removes the hooks if last."""
        with _STATE.lock:
            if self.active:
                self.active = False
                try:
                    _STATE.logs.remove(self)
                except ValueError:
                    pass
                _STATE.refresh_hooks()
        return self

    def __enter__(self) -> RecompileLog:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def clear(self) -> None:
        """Forget the events recorded so far (keeps watching if active)."""
        with self._lock:
            self.events = []
            self._calls = Counter()
            self.internal_compiles = 0

    def _add(self, event: RecompileEvent, fun: Any) -> None:
        with self._lock:
            self.events.append(event)
            self._calls[event.function] += 1

    def _count_miss(self, name: str, fun: Any) -> None:
        with self._lock:
            self._calls[name] += 1

    def compiles(self, function: str | None = None) -> int:
        """How many events compiled ``function`` (any user function if None)."""
        return sum(
            1
            for e in self.events
            if e.compiled
            and (function is None or function_matches(e.function, function))
        )

    def events_of(self, function: str) -> list[RecompileEvent]:
        """The events of the function named ``function`` (qualified or short name)."""
        return [e for e in self.events if function_matches(e.function, function)]

    def summary(self) -> RecompileSummary:
        """Per function: calls (C++ cache misses), traces, compiles, seconds, causes."""
        with self._lock:
            events = list(self.events)
            calls = Counter(self._calls)
        groups: dict[str, list[RecompileEvent]] = {}
        for e in events:
            groups.setdefault(e.function, []).append(e)
        rows = []
        for fn, evs in groups.items():
            kinds = Counter(c.kind for e in evs for c in e.causes)
            rows.append(
                SummaryRow(
                    function=fn,
                    defined_at=evs[0].defined_at,
                    calls=max(calls.get(fn, 0), len(evs)),
                    traces=sum(1 for e in evs if e.traced),
                    compiles=sum(1 for e in evs if e.compiled),
                    seconds=sum(e.seconds for e in evs),
                    top_causes=kinds.most_common(3),
                )
            )
        rows.sort(key=lambda r: (-r.compiles, -r.seconds, r.function))
        return RecompileSummary(rows, self.internal_compiles)

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[RecompileEvent]:
        return iter(list(self.events))

    def __repr__(self) -> str:
        state = "watching" if self.active else "stopped"
        return f"<RecompileLog ({state}): {len(self.events)} events>"


def watch_recompiles() -> RecompileLog:
    """Watch jit cache misses: ``with js.watch_recompiles() as log: ...``.

    Returns a ``RecompileLog``; as a context manager it watches inside the block
    (and stops on every exit path); ``log.start()`` / ``log.stop()`` do the same by hand.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> f = jax.jit(lambda x: x * 2)
        >>> with js.watch_recompiles() as log:
        ...     _ = f(jnp.ones(3)); _ = f(jnp.ones(4))
        >>> [e.causes[0].kind for e in log.events]
        ['first_call', 'shape']
    """
    return RecompileLog()


def add_trace_listener(callback: Callable[[str, Any, TraceInfo], None]) -> None:
    """Call ``callback(phase, function, info)`` around each trace of a jitted function.

    See the module docstring for the phases. Installs the miss hooks while registered.
    """
    with _STATE.lock:
        _STATE.trace_listeners.append(callback)
        _STATE.refresh_hooks()


def remove_trace_listener(callback: Callable[[str, Any, TraceInfo], None]) -> None:
    """Unregister a callback given to ``add_trace_listener`` (no-op if absent)."""
    with _STATE.lock:
        try:
            _STATE.trace_listeners.remove(callback)
        except ValueError:
            pass
        _STATE.refresh_hooks()


def hooks_installed() -> bool:
    """Whether the miss hooks are installed right now (only while watching)."""
    return _STATE.hooks.installed


class RecompileEvents(Renderable):
    """A list of events to display (one compact line each; details expand in HTML)."""

    __slots__ = ("events", "title")

    def __init__(self, events: list[RecompileEvent], title: str = "") -> None:
        self.events = list(events)
        self.title = title

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"<RecompileEvents: {len(self.events)}>"
