"""Where a leaked tracer is held: a walk up ``gc`` referrers to a named place.

``holder_of(obj)`` names the user-visible place that keeps ``obj`` alive: a global
(``global list `cache`[0]``), a module or class attribute, an attribute of an object
(``attribute `self.state` of a `Model` object (global `m`)``), a closure cell, a
default argument, a generator's local, or a local variable of a user function still
running (``local `model` of `test_step```). JAX's own objects and module state (its
caches: ``closure_convert`` keeps tracers there), tracers and jaxscope's bookkeeping
(``NotAHolder``) are never holders, with one exception once a transformation has
returned (``final``): a pytree's static data (a static argument, or the attribute of a
Flax NNX module carried in a ``GraphDef``), which jit keeps in its caches.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import os
import sys
import types
from dataclasses import dataclass
from typing import Any

from jaxscope._format import a_an, qualname
from jaxscope.compat import leaks as _cl


class NotAHolder:
    """Mixin of jaxscope objects that may refer to a tracer while checking but never
    hold one for the user (the walk does not go through them)."""

    __slots__ = ()


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
    kind: (
        str  # global | module | closure | default | generator | class | local | static
    )
    name: str
    owner: str = ""  # module name, function qualname
    owner_file: str = ""  # the module's file, for globals
    # closure: the named place holding the function (root, steps), when there is one
    held_by: tuple[_Root, list[_Step]] | None = None


class _Referrers(NotAHolder):
    """``gc`` referrers of an object, less the walk's own containers and frames, and
    the named roots one or two referrer steps above a cell, tuple or generator."""

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
        ][:_MAX_PARENTS]
        self.ignore.add(id(out))  # the list returned: a walk must not go through it
        return out

    def _cell_owner(self, cell: types.CellType) -> tuple[Any, str] | None:
        """(function, variable name) of the closure cell ``cell``."""
        for closure in self.referrers(cell):
            if not isinstance(closure, tuple):
                continue
            for fn in self.referrers(closure):
                if isinstance(fn, types.FunctionType) and fn.__closure__ is closure:
                    return fn, fn.__code__.co_freevars[closure.index(cell)]
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


class _Walker(_Referrers):
    """Finds the named place (global, attribute, closure cell, ...) holding an object.

    ``final``: the transformation has returned, so a pytree's static data that holds
    the object (jit's caches keep it) is a place of its own.
    """

    def __init__(self, final: bool = False) -> None:
        super().__init__()
        self.final = final
        # id(value) -> (variable, function) of the user frames running now; read
        # only when a walk finds no named place
        self._locals: dict[int, tuple[str, str]] | None = None

    def _local_root(self, obj: Any) -> _Root | None:
        if self._locals is None:
            self._locals = self._user_locals()
        entry = self._locals.get(id(obj))
        return _Root("local", entry[0], entry[1]) if entry is not None else None

    def _user_locals(self) -> dict[int, tuple[str, str]]:
        found: dict[int, tuple[str, str]] = {}
        frame: Any = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            if code.co_flags & inspect.CO_OPTIMIZED and _is_user_code(code):
                namespace = frame.f_locals
                self.ignore.add(id(namespace))
                for name, value in list(namespace.items()):
                    found.setdefault(id(value), (name, code.co_qualname))
            frame = frame.f_back
        return found

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
        static: tuple[_Root | None, list[_Step]] | None = None
        for i in range(len(parents)):  # no iterator object: it would refer to parents
            parent = parents[i]
            if id(parent) in on_path:
                continue
            found = self._through(parent, child, depth, on_path | {id(child)})
            if found is None:
                continue
            root = found[0]
            if root is not None and root.kind not in ("static", "local"):
                return found
            if root is not None and root.kind == "local":
                return found  # a running function's variable: as good as named
            if root is not None and static is None:
                static = found
            if root is None and unnamed is None:
                unnamed = found
        if depth > 0 and not _cl.is_jax_internal(child):
            local = self._local_root(child)
            if local is not None:
                return local, []
        if static is not None:
            return static
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
        if _cl.is_pytree_static_data(parent):
            return (_Root("static", ""), []) if self.final else None
        if isinstance(parent, tracer) or _cl.is_jax_internal(parent):
            return None
        if _cl.is_nnx_static(parent):
            return self._through_nnx_graph(parent, depth, on_path | {id(child)})
        if isinstance(parent, NotAHolder):
            return None
        if type(parent) is dict:
            return self._through_dict(parent, child, depth, on_path)
        if isinstance(parent, types.CellType):
            return self._through_cell(parent, depth, on_path | {id(child)})
        if isinstance(
            parent, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
        ):
            return self._generator_root(parent, child), []
        if isinstance(parent, tuple):
            owner = self._function_with_defaults(parent)
            if owner is not None:
                index = _index_of(parent, child)
                return _Root(
                    "default", _default_name(owner, index), qualname(owner)
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
                if _cl.is_jax_module(parent.__name__):
                    return None  # JAX's own state (a cache) holds no user leak
                return _Root("module", attr, parent.__name__), []
            step = _Step(f".{attr}", type(parent).__name__, attribute=True)
            if isinstance(parent, type):
                if _cl.is_jax_module(parent.__module__):
                    return None
                return _Root(
                    "class", f"{parent.__qualname__}.{attr}", parent.__module__
                ), []
            return self._above(parent, step, depth, on_path)
        if isinstance(parent, types.FunctionType):
            return None  # globals dict / code constants of a function: not a holder
        step = _Step(f" (in {a_an(type(parent).__name__)})", type(parent).__name__)
        return self._above(parent, step, depth, on_path)

    def _through_cell(
        self, cell: types.CellType, depth: int, on_path: set[int]
    ) -> tuple[_Root | None, list[_Step]] | None:
        """The closure variable ``cell`` is, and where its function is held."""
        owner = self._cell_owner(cell)
        if owner is None:
            return None
        fn, name = owner
        if _cl.is_jax_function(fn):
            return None  # JAX's own closures (its caches) hold no user leak
        root = _Root("closure", name, qualname(fn))
        outer = self._find(fn, depth + 1, on_path | {id(cell)})
        # a chain ending in the closure of a function only a frame holds says no more
        if outer is not None and outer[0] is not None and _anchored(outer[0]):
            root = dataclasses.replace(root, held_by=(outer[0], outer[1]))
        return root, []

    def _through_nnx_graph(
        self, static: Any, depth: int, on_path: set[int]
    ) -> tuple[_Root | None, list[_Step]] | None:
        """A static attribute of a Flax NNX module, kept in a ``GraphDef``: the
        module path of the attribute, then where the graph is held."""
        for entry in self.referrers(static):
            if not isinstance(entry, tuple):
                continue
            for attributes in self.referrers(entry):
                if not isinstance(attributes, list):
                    continue
                for graph in self.referrers(attributes):
                    if _cl.nnx_graph_attributes(graph) is not attributes:
                        continue
                    path = _cl.nnx_graph_path(graph, _index_of(attributes, entry))
                    if not path:
                        continue
                    found = self._find(
                        graph, depth + 1, on_path | {id(entry), id(attributes)}
                    )
                    if found is None:
                        return None
                    root, steps = found
                    return root, [*steps, *map(_graph_step, path)]
        return None

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
        if module is not None and _cl.is_jax_module(module):
            return None  # JAX's own state (a cache) holds no user leak
        if module is not None:
            kind = "global" if _is_user_namespace(module) else "module"
            owner_file = str(parent.get("__file__") or "")
            return _Root(kind, str(key), module, owner_file), []
        owners = self.referrers(parent)
        for i in range(len(owners)):
            owner = owners[i]
            if isinstance(owner, types.FunctionType) and owner.__kwdefaults__ is parent:
                return _Root("default", str(key), qualname(owner)), []
            if getattr(owner, "__dict__", None) is parent and not isinstance(
                owner, type
            ):
                if isinstance(owner, types.ModuleType):
                    if _cl.is_jax_module(owner.__name__):
                        return None
                    return _Root("module", str(key), owner.__name__), []
                if _cl.is_jax_internal(owner) or isinstance(owner, _cl.tracer_type()):
                    return None
                step = _Step(f".{key}", type(owner).__name__, attribute=True)
                return self._above(owner, step, depth, on_path | {id(parent)})
            if isinstance(owner, type) and owner.__dict__.get(key) is child:
                if _cl.is_jax_module(owner.__module__):
                    return None
                return _Root(
                    "class", f"{owner.__qualname__}.{key}", owner.__module__
                ), []
        step = _Step(f"[{key!r}]", "dict")
        return self._above(parent, step, depth, on_path)


_MISSING = object()


def _graph_step(owner_key: tuple[str, str]) -> _Step:
    owner, key = owner_key
    if owner in ("dict", "Dict"):
        return _Step(f"[{key!r}]", owner)
    if key.isdigit():  # an index of a list, a tuple or an nnx.List
        return _Step(f"[{key}]", owner)
    return _Step(f".{key}", owner, attribute=True)


def _is_user_code(code: types.CodeType) -> bool:
    from jaxscope._source import is_library_file, is_user_file  # loads JAX

    filename = code.co_filename
    return is_user_file(filename) and not is_library_file(filename)


def _anchored(root: _Root) -> bool:
    """Whether ``root`` outlives every frame: not a local variable, nor the closure
    of a function that nothing but a frame holds."""
    if root.kind == "local":
        return False
    return root.kind != "closure" or root.held_by is not None


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
    if root.kind == "local":
        return f"local variable {container}`{root.name}`{accessors} of `{root.owner}`"
    if root.kind == "static":
        return "static (non-array) data of a pytree, kept in JAX's caches"
    if root.kind == "closure":
        if not steps:
            text = f"nonlocal (closure) variable `{root.name}` of `{root.owner}`"
        else:
            text = (
                f"closure variable {container}`{root.name}`{accessors} "
                f"of `{root.owner}`"
            )
        if root.held_by is not None:  # the whole chain, from the named root
            text = f"{_format_holder(root.held_by, home_file)} -> {text}"
        return text
    if root.kind == "default":
        return f"default argument {container}`{root.name}`{accessors} of `{root.owner}`"
    if root.kind == "generator":
        local = f" (local `{root.name}`{accessors})" if root.name else accessors
        return f"generator `{root.owner}`{local}"
    return f"{root.kind} `{root.name}`{accessors}"  # pragma: no cover


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def holder_of(
    obj: Any, ignore: tuple[Any, ...] = (), home_file: str = "", *, final: bool = False
) -> tuple[str, bool] | None:
    """(description, named) of the user-visible place holding ``obj``; None when only
    JAX's own objects hold it. ``named`` is False for a container nothing names.

    ``ignore``: the caller's own containers that hold ``obj``. ``home_file``: the file
    the leak happened in; its module's globals are "global", others' "module
    attribute".
    """
    walker = _Walker(final)
    walker.ignore.update(id(x) for x in ignore)
    found = walker.find(obj)
    if found is None:
        return None
    return _format_holder(found, home_file), found[0] is not None
