"""Tracer leaks: every leaked tracer, where it was created and what holds it.

``check_leaks()`` turns on JAX's leak checking for a block and takes over the
moment JAX checks a finished trace: instead of raising on the first leak with a raw
referrer chain, each leaked tracer becomes a ``Leak`` record (abstract value,
transformation, the user's line that created it, and the named place that holds it:
``global list `cache`[0]``, ``attribute `self.state` of a `Model` object``, ...).
It also checks the traces JAX never checks (``jax.jvp``, ``jax.grad``'s linearize
trace, eager ``shard_map``), makes every trace in the block miss JAX's caches (a
cached trace would never rerun the Python function, hiding its leak), and adds the
same facts to the ``UnexpectedTracerError`` JAX raises when a leaked tracer is used.

Only tracers held by a user-visible place are reported: tracers kept alive by JAX's
own objects (the inputs of an equation that produced a leaked tracer) are not leaks
of their own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import sys
import threading
import types
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jaxscope._display import Renderable
from jaxscope._exceptions import InvalidCallError, TracerLeakError
from jaxscope._records import SourceLoc
from jaxscope._source import loc_of_traceback, user_frame_of_stack
from jaxscope.compat import leaks as _cl

__all__ = ["Leak", "LeakReport", "check_leaks"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Leak:
    """One leaked tracer.

    Attributes:
        aval: its abstract value, short form (``"f32[3]"``).
        transformation: the transformation that created it (``"jit"``, ``"grad"``,
            ``"vmap"``, ``"scan"``, ``"while"``, ``"cond"``, ``"pmap"``,
            ``"shard_map"``, ``"custom_jvp"``, ``"jvp"``, ``"vjp"``, ...).
        created_at: the user's line that produced it; for a leaked argument, the
            line that called the transformation.
        found_in: what holds it (``"global list `cache`[0]"``,
            ``"attribute `self.state` of a `Model` object (global `m`)"``, ...), or
            ``""`` when the leak was seen only when the tracer was used.
        function: the function being traced (``"f at file.py:3"``), where known.
        argument: True when the leaked tracer is an argument of the traced function.
        used_at: where a leaked tracer was used outside its transformation (the
            ``UnexpectedTracerError`` case), else None.
    """

    aval: str
    transformation: str
    created_at: SourceLoc | None
    found_in: str
    function: str = ""
    argument: bool = False
    used_at: SourceLoc | None = None

    def describe(self) -> str:
        """One line: what leaked, from where, created where, held where."""
        what = "argument" if self.argument else "tracer"
        text = f"{self.aval} {what} from {self.transformation}"
        if self.created_at is not None:
            verb = "traced at" if self.argument else "created at"
            text += f", {verb} {self.created_at}"
            if self.created_at.function and not self.argument:
                text += f" ({self.created_at.function})"
        if self.found_in:
            text += f", stored in {self.found_in}"
        if self.used_at is not None:
            text += f", used at {self.used_at} outside its transformation"
        return text

    def __str__(self) -> str:
        return self.describe()


class LeakReport(Renderable):
    """The leaks found in one ``check_leaks`` block, in the order they were found.

    ``len(report)`` is the number of leaks; ``str(report)`` a table.
    """

    __slots__ = ("_seen", "leaks", "raise_on_leak")

    def __init__(self, raise_on_leak: bool = True) -> None:
        self.leaks: list[Leak] = []
        self.raise_on_leak = raise_on_leak
        # id(tracer) -> (weakref to it, index in leaks); ids are checked against the ref
        self._seen: dict[int, tuple[Any, int]] = {}

    def __len__(self) -> int:
        return len(self.leaks)

    def __iter__(self) -> Iterator[Leak]:
        return iter(list(self.leaks))

    def summary(self) -> str:
        """One line: how many leaked, and the first one."""
        n = len(self.leaks)
        if n == 0:
            return "no tracer leaked"
        first = self.leaks[0].describe()
        more = f" (and {n - 1} more)" if n > 1 else ""
        return f"{n} leaked tracer{'s' if n > 1 else ''}: {first}{more}"

    def message(self) -> str:
        """The summary line, then one line per leak and a hint."""
        if not self.leaks:
            return self.summary()
        lines = [self.summary()]
        lines += [f"  {i}. {leak.describe()}" for i, leak in enumerate(self.leaks, 1)]
        lines.append(
            "  fix: return values from the transformed function instead of storing "
            "them; keep only concrete values (outside the transformation) in "
            "globals, attributes and caches"
        )
        return "\n".join(lines)

    def _add(self, tracer: Any, leak: Leak) -> None:
        key = id(tracer)
        entry = self._seen.get(key)
        if entry is not None and entry[0]() is tracer:
            index = entry[1]
            old = self.leaks[index]
            merged = old
            if leak.used_at is not None and old.used_at is None:
                merged = dataclasses.replace(merged, used_at=leak.used_at)
            if not old.found_in and leak.found_in:
                merged = dataclasses.replace(merged, found_in=leak.found_in)
            self.leaks[index] = merged
            return
        try:
            ref = weakref.ref(tracer)
        except TypeError:
            ref = lambda: None  # noqa: E731
        self._seen[key] = (ref, len(self.leaks))
        self.leaks.append(leak)

    def _record(self, tracer: Any) -> Leak | None:
        entry = self._seen.get(id(tracer))
        if entry is not None and entry[0]() is tracer:
            return self.leaks[entry[1]]
        return None

    def __repr__(self) -> str:
        return f"<LeakReport: {len(self.leaks)} leak(s)>"


# ---------------------------------------------------------------------------------
# where a tracer is held: a walk up gc referrers to a named root

_MAX_DEPTH = 7
_MAX_NODES = 120
_MAX_PARENTS = 40


@dataclass(frozen=True, slots=True)
class _Step:
    accessor: str  # "[0]", "['k']", ".state"
    container: str  # type name of the container this accessor indexes
    attribute: bool = False


@dataclass(frozen=True, slots=True)
class _Root:
    kind: str  # global | module | closure | default | generator | class
    name: str
    owner: str = ""  # module name, function qualname
    owner_file: str = ""  # the module's file, for globals


class _Walker:
    """Finds the named place (global, attribute, closure cell, ...) holding an object."""

    def __init__(self) -> None:
        self.ignore: set[int] = set()
        self.nodes = 0
        self.modules: dict[int, str] = {}
        for name, module in list(sys.modules.items()):
            namespace = getattr(module, "__dict__", None)
            if isinstance(namespace, dict):
                self.modules.setdefault(id(namespace), name)

    def referrers(self, obj: Any) -> list[Any]:
        refs = gc.get_referrers(obj)
        self.ignore.add(id(refs))
        out = [
            r
            for r in refs
            if id(r) not in self.ignore and not isinstance(r, types.FrameType)
        ]
        self.ignore.add(id(out))
        return out[:_MAX_PARENTS]

    def find(self, obj: Any) -> tuple[_Root | None, list[_Step]] | None:
        """(root, steps outermost first); root None for an unnamed user container;
        None when only JAX's own objects hold ``obj``."""
        self.ignore.add(id(sys._getframe()))
        return self._find(obj, 0, set())

    def _find(
        self, child: Any, depth: int, on_path: set[int]
    ) -> tuple[_Root | None, list[_Step]] | None:
        self.nodes += 1
        if depth > _MAX_DEPTH or self.nodes > _MAX_NODES:
            return None
        parents = self.referrers(child)
        unnamed: tuple[_Root | None, list[_Step]] | None = None
        for i in range(len(parents)):  # no iterator object: it would refer to parents
            parent = parents[i]
            if id(parent) in on_path:
                continue
            found = self._through(parent, child, depth, on_path | {id(child)})
            if found is None:
                continue
            if found[0] is not None:
                return found
            if unnamed is None:
                unnamed = found
        if (
            unnamed is None
            and depth > 0
            and not parents
            and not _cl.is_jax_internal(child)
        ):
            return (None, [])
        return unnamed

    def _through(
        self, parent: Any, child: Any, depth: int, on_path: set[int]
    ) -> tuple[_Root | None, list[_Step]] | None:
        """The path to ``child`` through ``parent``."""
        tracer = _cl.tracer_type()
        if isinstance(parent, tracer) or _cl.is_jax_internal(parent):
            return None
        if isinstance(parent, (type(self), LeakReport, _Session)):
            return None
        if type(parent) is dict:
            return self._through_dict(parent, child, depth, on_path)
        if isinstance(parent, types.CellType):
            root = self._cell_root(parent)
            return (root, []) if root is not None else None
        if isinstance(
            parent, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
        ):
            return self._generator_root(parent, child), []
        if isinstance(parent, tuple):
            owner = self._function_with_defaults(parent)
            if owner is not None:
                index = _index_of(parent, child)
                return _Root(
                    "default", _default_name(owner, index), _qualname(owner)
                ), []
        if isinstance(parent, (list, tuple)):
            step = _Step(f"[{_index_of(parent, child)}]", type(parent).__name__)
            return self._above(parent, step, depth, on_path)
        if isinstance(parent, (set, frozenset)):
            return self._above(
                parent, _Step(" (element)", type(parent).__name__), depth, on_path
            )
        attr = _attribute_of(parent, child)
        if attr is not None:
            if isinstance(parent, types.ModuleType):
                return _Root("module", attr, parent.__name__), []
            step = _Step(f".{attr}", type(parent).__name__, attribute=True)
            if isinstance(parent, type):
                return _Root(
                    "class", f"{parent.__qualname__}.{attr}", parent.__module__
                ), []
            return self._above(parent, step, depth, on_path)
        if isinstance(parent, types.FunctionType):
            return None  # globals dict / code constants of a function: not a holder
        step = _Step(f" (in a {type(parent).__name__})", type(parent).__name__)
        return self._above(parent, step, depth, on_path)

    def _above(
        self, parent: Any, step: _Step, depth: int, on_path: set[int]
    ) -> tuple[_Root | None, list[_Step]] | None:
        found = self._find(parent, depth + 1, on_path)
        if found is None:
            return None
        root, steps = found
        return root, [*steps, step]

    def _through_dict(
        self, parent: dict[Any, Any], child: Any, depth: int, on_path: set[int]
    ) -> tuple[_Root | None, list[_Step]] | None:
        key = _key_of(parent, child)
        if key is _MISSING:
            return None
        module = self.modules.get(id(parent))
        if module is not None:
            kind = "global" if _is_user_namespace(module) else "module"
            owner_file = str(parent.get("__file__") or "")
            return _Root(kind, str(key), module, owner_file), []
        owners = self.referrers(parent)
        for i in range(len(owners)):
            owner = owners[i]
            if isinstance(owner, types.FunctionType) and owner.__kwdefaults__ is parent:
                return _Root("default", str(key), _qualname(owner)), []
            if getattr(owner, "__dict__", None) is parent and not isinstance(
                owner, type
            ):
                if isinstance(owner, types.ModuleType):
                    return _Root("module", str(key), owner.__name__), []
                if _cl.is_jax_internal(owner) or isinstance(owner, _cl.tracer_type()):
                    return None
                step = _Step(f".{key}", type(owner).__name__, attribute=True)
                return self._above(owner, step, depth, on_path | {id(parent)})
            if isinstance(owner, type) and owner.__dict__.get(key) is child:
                return _Root(
                    "class", f"{owner.__qualname__}.{key}", owner.__module__
                ), []
        step = _Step(f"[{key!r}]", "dict")
        return self._above(parent, step, depth, on_path)

    def _cell_root(self, cell: types.CellType) -> _Root | None:
        for closure in self.referrers(cell):
            if not isinstance(closure, tuple):
                continue
            for fn in self.referrers(closure):
                if isinstance(fn, types.FunctionType) and fn.__closure__ is closure:
                    index = closure.index(cell)
                    return _Root(
                        "closure", fn.__code__.co_freevars[index], _qualname(fn)
                    )
        return None  # a cell of a running frame only: not a place that outlives it

    def _generator_root(self, gen: Any, child: Any) -> _Root:
        frame = (
            getattr(gen, "gi_frame", None)
            or getattr(gen, "cr_frame", None)
            or getattr(gen, "ag_frame", None)
        )
        local = ""
        if frame is not None:
            for name, value in frame.f_locals.items():
                if value is child:
                    local = name
                    break
        return _Root(
            "generator", local, getattr(gen, "__qualname__", type(gen).__name__)
        )

    def _function_with_defaults(self, values: tuple[Any, ...]) -> Any:
        for owner in self.referrers(values):
            if isinstance(owner, types.FunctionType) and owner.__defaults__ is values:
                return owner
        return None


_MISSING = object()


def _key_of(mapping: dict[Any, Any], child: Any) -> Any:
    for key, value in list(mapping.items()):
        if value is child:
            return key
    return _MISSING


def _index_of(seq: Any, child: Any) -> int:
    for i, value in enumerate(seq):
        if value is child:
            return i
    return -1


def _attribute_of(obj: Any, child: Any) -> str | None:
    try:
        namespace = vars(obj)
    except TypeError:
        namespace = None
    if isinstance(namespace, dict):
        for key, value in list(namespace.items()):
            if value is child:
                return str(key)
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()) or ():
            if isinstance(slot, str) and getattr(obj, slot, None) is child:
                return slot
    return None


def _qualname(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", getattr(fn, "__name__", "?")))


def _default_name(fn: Any, index: int) -> str:
    code = fn.__code__
    names = code.co_varnames[: code.co_argcount]
    defaults = fn.__defaults__ or ()
    position = len(names) - len(defaults) + index
    return names[position] if 0 <= position < len(names) else f"#{index}"


def _is_user_namespace(module: str) -> bool:
    return module == "__main__" or module.startswith("__ipython")


def _format_holder(found: tuple[_Root | None, list[_Step]], home_file: str = "") -> str:
    root, steps = found
    if (
        root is not None
        and root.kind == "module"
        and home_file
        and root.owner_file
        and _same_file(root.owner_file, home_file)
    ):
        root = dataclasses.replace(root, kind="global")
    attr_at = max((i for i, s in enumerate(steps) if s.attribute), default=-1)
    if attr_at >= 0:
        obj = steps[attr_at]
        inner = "".join(s.accessor for s in steps[attr_at:])
        where = (
            _format_holder((root, steps[:attr_at]), home_file)
            if (root or attr_at)
            else ""
        )
        text = f"attribute `self{inner}` of a `{obj.container}` object"
        return f"{text} ({where})" if where else text
    accessors = "".join(s.accessor for s in steps)
    container = f"{steps[0].container} " if steps else ""
    if root is None:
        kind = steps[0].container if steps else "object"
        return f"a `{kind}`{accessors} that no global refers to (a local variable?)"
    if root.kind == "global":
        return f"global {container}`{root.name}`{accessors}"
    if root.kind == "module":
        return f"module attribute {container}`{root.owner}.{root.name}`{accessors}"
    if root.kind == "class":
        return f"class attribute {container}`{root.name}`{accessors}"
    if root.kind == "closure":
        if not steps:
            return f"nonlocal (closure) variable `{root.name}` of `{root.owner}`"
        return f"closure variable {container}`{root.name}`{accessors} of `{root.owner}`"
    if root.kind == "default":
        return f"default argument {container}`{root.name}`{accessors} of `{root.owner}`"
    if root.kind == "generator":
        local = f" (local `{root.name}`{accessors})" if root.name else accessors
        return f"generator `{root.owner}`{local}"
    return f"{root.kind} `{root.name}`{accessors}"  # pragma: no cover


def _same_file(a: str, b: str) -> bool:
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def holder_of(
    obj: Any, ignore: tuple[Any, ...] = (), home_file: str = ""
) -> tuple[str, bool] | None:
    """(description, named) of the user-visible place holding ``obj``; None when only
    JAX's own objects hold it. ``named`` is False for a container nothing names.

    ``ignore``: the caller's own containers that hold ``obj``. ``home_file``: the file
    the leak happened in; its module's globals are "global", others' "module
    attribute".
    """
    walker = _Walker()
    walker.ignore.update(id(x) for x in ignore)
    found = walker.find(obj)
    if found is None:
        return None
    return _format_holder(found, home_file), found[0] is not None


# ---------------------------------------------------------------------------------
# the session: hooks installed while at least one block is active


class _Session:
    """Hooks shared by every active ``check_leaks`` block (process-wide)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.reports: list[LeakReport] = []
        self.undo: list[Any] = []
        self.local = threading.local()
        # id(tracer) -> (weakref, JAX traceback at creation), for tracers JAX gives no line
        self.born: dict[int, tuple[Any, Any]] = {}
        self.hints: dict[int, tuple[Any, str]] = {}

    # -- install / remove --------------------------------------------------------

    def start(self, report: LeakReport) -> None:
        with self.lock:
            if not self.reports:
                self._install()
            self.reports.append(report)

    def stop(self, report: LeakReport) -> None:
        with self.lock:
            if report in self.reports:
                self.reports.remove(report)
            if not self.reports:
                self._uninstall()

    def _install(self) -> None:
        try:
            self.undo.append(_cl.install_trace_end_hook(self.on_trace_end))
            self.undo.append(_cl.install_escape_hook(self.on_escape))
            self.undo.append(_cl.install_misuse_hook(self.on_misuse))
            self.undo.append(
                _cl.install_body_end_hook(_cl.unchecked_trace_types(), self.on_body_end)
            )
            self.undo.append(
                _cl.install_creation_hook(
                    _cl.tracer_types_without_line_info(), self.on_created
                )
            )
        except BaseException:
            self._uninstall()
            raise

    def _uninstall(self) -> None:
        while self.undo:
            self.undo.pop()()
        self.born.clear()
        self.hints.clear()

    # -- hooks --------------------------------------------------------------------

    @contextlib.contextmanager
    def _guard(self) -> Iterator[bool]:
        busy = getattr(self.local, "busy", False)
        self.local.busy = True
        try:
            yield not busy
        finally:
            self.local.busy = busy

    def on_created(self, tracer: Any) -> None:
        if getattr(self.local, "busy", False):
            return
        with contextlib.suppress(TypeError):
            self.born[id(tracer)] = (weakref.ref(tracer), _cl.current_traceback())
        if len(self.born) > 50_000:
            self.born = {k: v for k, v in self.born.items() if v[0]() is not None}

    def on_trace_end(self, trace: Any) -> None:
        with self._guard() as free:
            if free:
                gc.collect()
                self._check(trace, hint="pmap" if _cl.pmap_on_stack() else None)

    def on_body_end(self, trace: Any) -> None:
        with self._guard() as free:
            if not free:
                return
            hint = _cl.api_transformation_on_stack()
            if hint is not None:
                self.hints[id(trace)] = (weakref.ref(trace), hint)
            self._check(trace)

    def on_escape(self, tracer: Any) -> str | None:
        with self._guard() as free:
            if not free:
                return None
            try:
                leak = self._leak(tracer, None)
                if leak is None:  # pragma: no cover - found_in "" is still a leak
                    return None
                leak = dataclasses.replace(leak, used_at=user_frame_of_stack(1))
                for report in list(self.reports):
                    report._add(tracer, leak)
                    leak = report._record(tracer) or leak
                return f"jaxscope: leaked {leak.describe()}"
            except Exception as exc:  # never replace JAX's error with ours
                _warn(exc)
                return None

    def on_misuse(self, tracer: Any) -> str | None:
        """``float(t)`` / ``np.asarray(t)`` / ``bool(t)`` of a tracer: if ``t`` leaked
        (its trace has ended), the same account as ``on_escape``."""
        trace = _cl.trace_of(tracer)
        leaked = not _cl.trace_is_valid(trace) or any(
            id(tracer) in r._seen and r._seen[id(tracer)][0]() is tracer
            for r in self.reports
        )
        if not leaked:
            return None
        return self.on_escape(tracer)

    # -- finding ------------------------------------------------------------------

    def _check(self, trace: Any, *, hint: str | None = None) -> None:
        """Report each tracer of ``trace`` that a named, user-visible place holds."""
        if not self.reports:
            return
        try:
            tracer_cls = _cl.tracer_type()
            refs = gc.get_referrers(trace)
            tracers = [r for r in refs if isinstance(r, tracer_cls)]
            del refs
            for i in range(len(tracers)):
                tracer = tracers[i]
                leak = self._leak(tracer, (tracers,), hint=hint)
                if leak is None:
                    continue
                for report in list(self.reports):
                    report._add(tracer, leak)
        except Exception as exc:  # the user's program must go on
            _warn(exc)

    def _leak(
        self,
        tracer: Any,
        ignore: tuple[Any, ...] | None,
        *,
        hint: str | None = None,
    ) -> Leak | None:
        """The ``Leak`` record of ``tracer``; None if nothing user-visible holds it.

        ``ignore`` None: the tracer is being used (escaped), report it regardless.
        """
        trace = _cl.trace_of(tracer)
        hint_entry = self.hints.get(id(trace))
        if hint_entry is not None and hint_entry[0]() is trace:
            hint = hint_entry[1]
        tb = _cl.creation_traceback(tracer)
        if tb is None:
            entry = self.born.get(id(tracer))
            if entry is not None and entry[0]() is tracer:
                tb = entry[1]
        created_at = loc_of_traceback(tb) if tb is not None else None
        home_file = _raw_user_file(tb) if tb is not None else ""
        if not home_file:
            home_file = _file_of_src_info(_cl.traced_function(tracer))
        holder = holder_of(tracer, ignore or (), home_file)
        if holder is None or not holder[1]:
            # Only JAX's objects, or a container nothing names, hold it: JAX keeps such
            # containers alive around a finished trace, so they are not reported.
            if ignore is not None:
                return None
            found_in = ""
        else:
            found_in = holder[0]
        argument = created_at is None or _cl.is_argument(tracer)
        if created_at is None:
            created_at = user_frame_of_stack(1)
        return Leak(
            aval=_cl.aval_str(tracer),
            transformation=_cl.transformation_of(tracer, hint),
            created_at=created_at,
            found_in=found_in,
            function=_cl.traced_function(tracer),
            argument=argument,
        )


def _raw_user_file(tb: Any) -> str:
    from jaxscope.compat import source as _csource

    raw = _csource.innermost_user_frame(tb)
    return raw.file if raw is not None else ""


def _file_of_src_info(src: str) -> str:
    """``"f at /a/b.py:3"`` -> ``"/a/b.py"``."""
    _, sep, where = src.rpartition(" at ")
    if not sep:
        return ""
    return where.rsplit(":", 1)[0]


def _warn(exc: BaseException) -> None:
    import warnings

    warnings.warn(
        f"jaxscope.check_leaks could not analyse a trace ({type(exc).__name__}: {exc})",
        RuntimeWarning,
        stacklevel=3,
    )


_SESSION = _Session()
_SALT_COUNTER = itertools.count(1)
_SALT: list[Any] = []


def _cache_salt() -> Any:
    """A JAX user context that is part of every jit and trace cache key."""
    if not _SALT:
        import jax

        _SALT.append(jax.make_user_context(None))
    return _SALT[0]


class check_leaks:
    """Check a block for leaked tracers; ``__enter__`` returns the ``LeakReport``.

    Every trace that ends inside the block is checked (jit, grad, vjp, jvp, vmap,
    scan/while/cond bodies, pmap, shard_map, custom_jvp/vjp, remat): each tracer a
    global, an attribute, a closure cell, a default argument or a generator still
    holds becomes a ``Leak``. Traces inside the block miss JAX's caches, so a
    function traced before still has its leaks found (it is traced and compiled
    again). JAX's config is restored on every exit.

    Args:
        raise_on_leak: raise ``TracerLeakError`` on exit when anything leaked.
        retrace: True (default): every function is traced again inside the block,
            so a trace cached before (or in an earlier block) cannot hide a leak;
            the price is one recompile per jitted function and eager op used in the
            block. False: share one cache with every other ``retrace=False`` block
            (functions traced before any checking block are still retraced).

    Raises:
        TracerLeakError: on exit, listing every leak (first line: a summary).

    Example:
        >>> import jax, jaxscope as js
        >>> saved = []
        >>> def f(x):
        ...     saved.append(x * 2)
        ...     return x
        >>> with js.check_leaks(raise_on_leak=False) as report:
        ...     _ = jax.jit(f)(1.0)
        >>> report.leaks[0].transformation
        'jit'
    """

    def __init__(self, raise_on_leak: bool = True, *, retrace: bool = True) -> None:
        for name, value in (("raise_on_leak", raise_on_leak), ("retrace", retrace)):
            if not isinstance(value, bool):
                raise InvalidCallError(
                    f"check_leaks({name}=...) takes True or False, got {value!r}; "
                    "pass a bool"
                )
        self.raise_on_leak = raise_on_leak
        self.retrace = retrace
        self.report = LeakReport(raise_on_leak)
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self) -> LeakReport:
        if self._stack is not None:
            raise InvalidCallError(
                "this check_leaks() block is already active; use a new js.check_leaks()"
            )
        import jax

        stack = contextlib.ExitStack()
        try:
            stack.enter_context(jax.checking_leaks())
            token = next(_SALT_COUNTER) if self.retrace else 0
            stack.enter_context(_cache_salt()(("jaxscope.check_leaks", token)))
            _SESSION.start(self.report)
            stack.callback(_SESSION.stop, self.report)
        except BaseException:
            stack.close()
            raise
        self._stack = stack
        return self.report

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()
        if exc_type is None and self.raise_on_leak and self.report.leaks:
            err = TracerLeakError(self.report.message())
            err.report = self.report  # type: ignore[attr-defined]
            raise err


def hooks_installed() -> bool:
    """Whether a ``check_leaks`` block is active (its JAX hooks are installed)."""
    return bool(_SESSION.undo)
