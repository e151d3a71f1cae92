"""Values a traced function reads: how each is remembered, and how its names resolve.

A ``Fingerprint`` remembers a value without keeping a user array alive: plain data
is copied, arrays and other objects are held by weak reference, arrays also by a
digest of their contents (so a NumPy array changed in place is seen). A
``Comparison`` compares many captures in one pass, hashing each array once. ``lookup``
resolves a global or closure name of a function's code now; ``resolve_attrs`` follows
the attribute chain read after it. Nothing here lets a hostile object's
``__getattr__``, ``__repr__`` or ``__eq__`` raise into the user's program.
"""

from __future__ import annotations

import builtins
import functools
import sys
import types
import weakref
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from jaxscope._format import short_repr
from jaxscope._host import aval_text, dtype_name, host_array, is_key
from jaxscope._purity.bytecode import Access
from jaxscope._source import is_user_file
from jaxscope.compat.source import is_library_file

# JAX arrays are read back from the device to be hashed: only small ones. NumPy
# arrays can change in place, so their contents are hashed up to a much larger size.
_MAX_DEVICE_ELEMENTS = 100_000
_MAX_HOST_BYTES = 64 * 2**20
_SMALL_HOST_BYTES = 1 * 2**20

# What ``lookup`` returns for a name that resolves to nothing.
MISSING: Any = object()

_SIMPLE = (bool, int, float, complex, str, bytes, type(None))


@dataclass(frozen=True, slots=True)
class Fingerprint:
    kind: str  # "value" | "array" | "object" | "module"
    value: Any = None  # a copy, for "value"; weak references to the arrays, "module"
    ref: Any = None  # weakref (or None) for "array"/"object"
    ident: int = 0
    summary: str = ""
    digest: Any = None  # (shape, dtype, contents hash) of an array, when affordable


def is_array(value: Any) -> bool:
    """Whether ``value`` is an array (NumPy, JAX, or anything with shape, dtype and
    ``__array__``); never raises, whatever the object's ``__getattr__`` does."""
    if isinstance(value, np.ndarray):
        return True
    try:
        return (
            hasattr(value, "shape")
            and hasattr(value, "dtype")
            and hasattr(value, "__array__")
        )
    except Exception:
        return False


def _is_immutable_array(value: Any) -> bool:
    jax = sys.modules.get("jax")
    return jax is not None and isinstance(value, jax.Array)


def _freeze(value: Any, budget: list[int]) -> Any:
    """A comparable copy of plain data, or raise TypeError for anything else."""
    budget[0] -= 1
    if budget[0] < 0:
        raise TypeError("too large")
    if isinstance(value, (*_SIMPLE, np.generic)):
        return value
    if isinstance(value, tuple):
        return ("tuple", tuple(_freeze(v, budget) for v in value))
    if isinstance(value, list):
        return ("list", tuple(_freeze(v, budget) for v in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(_freeze(v, budget) for v in value))
    if isinstance(value, dict):
        return (
            "dict",
            tuple((_freeze(k, budget), _freeze(v, budget)) for k, v in value.items()),
        )
    raise TypeError(type(value).__name__)


def freeze(value: Any) -> Any:
    """A comparable copy of plain data (scalars, strings and containers of them), or
    raise TypeError for anything else."""
    return _freeze(value, [10_000])


def array_digest(value: Any) -> Any:
    """``(shape, dtype, hash of the contents)`` of an array, or None where reading it
    costs too much (a large device array) or is impossible (a tracer)."""
    try:
        if isinstance(value, np.ndarray):
            host = value
            if host.nbytes > _MAX_HOST_BYTES:
                return None
        else:
            if int(np.prod(value.shape)) > _MAX_DEVICE_ELEMENTS:
                return None
            host = host_array(value)  # a typed PRNG key: its key data
        if host.nbytes <= _SMALL_HOST_BYTES or host.dtype.hasobject:
            contents: Any = hash(host.tobytes())
        else:  # no copy of a large array: a checksum of its buffer
            flat = np.ascontiguousarray(host)
            contents = zlib.crc32(flat.data.cast("B"))
        return (tuple(value.shape), dtype_name(value.dtype), contents)
    except Exception:  # a tracer or a deleted array has no value to compare
        return None


def module_arrays(value: Any) -> list[Any] | None:
    """The arrays of a Flax NNX or Equinox module (its parameters and state), or
    None for anything else. A jitted function that reads a module it was not passed
    bakes these arrays in as constants."""
    try:
        nnx = sys.modules.get("flax.nnx")
        if nnx is not None and isinstance(value, nnx.Module):
            leaves = _tree_leaves(nnx.state(value))
        else:
            eqx = sys.modules.get("equinox")
            if eqx is None or not isinstance(value, eqx.Module):
                return None
            leaves = _tree_leaves(value)
    except Exception:  # a module the library cannot split: not watched as one
        return None
    return [leaf for leaf in leaves if is_array(leaf)]


def _tree_leaves(tree: Any) -> list[Any]:
    import jax

    return list(jax.tree_util.tree_leaves(tree))


def _describe_module(value: Any, arrays: list[Any]) -> str:
    return f"{type(value).__name__} ({len(arrays)} arrays)"


def describe_value(value: Any) -> str:
    """A short readable value: an array's few elements or its type, dtype and shape;
    anything else's repr, cut to 60 characters (``<TypeName>`` if repr fails)."""
    if is_array(value):
        try:
            small = int(np.prod(value.shape)) <= 4
            if is_key(value):  # key<fry>[2] and, when small, its key data
                data = f" {host_array(value).tolist()!r}" if small else ""
                return f"{aval_text(value)}{data}"
            shape = "x".join(str(d) for d in value.shape)
            text = f"{type(value).__name__}({value.dtype}[{shape}])"
            if small:
                text = repr(host_array(value).tolist())
            return text
        except Exception:
            return f"<{type(value).__name__}>"
    return short_repr(value, 60)


def fingerprint(value: Any, check: Comparison | None = None) -> Fingerprint:
    """How ``value`` is remembered: a copy of plain data, else a weak reference (and
    for an array a digest of its contents)."""
    if is_array(value):
        return Fingerprint(
            "array",
            ref=_weak(value),
            ident=id(value),
            summary=describe_value(value),
            digest=(check or Comparison()).digest(value),
        )
    arrays = module_arrays(value)
    if arrays is not None:
        comparison = check or Comparison()
        digests = tuple(comparison.digest(a) for a in arrays)
        return Fingerprint(
            "module",
            value=tuple(_weak(a) for a in arrays),
            ref=_weak(value),
            ident=id(value),
            summary=_describe_module(value, arrays),
            digest=digests,
        )
    try:
        return Fingerprint("value", value=freeze(value), summary=describe_value(value))
    except TypeError:
        return Fingerprint(
            "object", ref=_weak(value), ident=id(value), summary=describe_value(value)
        )


def _weak(value: Any) -> Any:
    try:
        return weakref.ref(value)
    except TypeError:
        return None


class Comparison:
    """One pass of comparisons: each array hashed, and each value copied and described
    once, however many captures hold it (the values are kept only for the pass, so
    their ids stay valid)."""

    __slots__ = ("_descriptions", "_digests", "_frozen")

    def __init__(self) -> None:
        self._digests: dict[int, tuple[Any, Any]] = {}
        self._frozen: dict[int, tuple[Any, Any]] = {}
        self._descriptions: dict[int, tuple[Any, str]] = {}

    def describe(self, value: Any) -> str:
        """``describe_value(value)``."""
        hit = self._descriptions.get(id(value))
        if hit is None:
            hit = self._descriptions[id(value)] = (value, describe_value(value))
        return hit[1]

    def digest(self, value: Any) -> Any:
        hit = self._digests.get(id(value))
        if hit is None:
            hit = self._digests[id(value)] = (value, array_digest(value))
        return hit[1]

    def frozen(self, value: Any) -> Any:
        """``freeze(value)``, or MISSING for what cannot be copied."""
        hit = self._frozen.get(id(value))
        if hit is None:
            try:
                copy = freeze(value)
            except TypeError:
                copy = MISSING
            hit = self._frozen[id(value)] = (value, copy)
        return hit[1]

    def same(self, fp: Fingerprint, value: Any) -> bool:
        """Whether ``value`` is what ``fp`` remembers: equal plain data, the same
        unchanged object, or an array with the same contents."""
        try:
            return self._same(fp, value)
        except Exception:  # a value whose comparison fails is not reported
            return True

    def _changed_arrays(self, fp: Fingerprint, arrays: list[Any]) -> int:
        """How many of a module's ``arrays`` hold other contents than ``fp``
        remembers. An array replaced by one of equal contents (``nnx.jit`` writes a
        module's arrays back after each call) is unchanged; one too large to read
        back is counted only when it is the same object."""
        changed = 0
        for ref, digest, array in zip(fp.value, fp.digest, arrays, strict=True):
            if ref is not None and ref() is array:
                continue
            now = self.digest(array) if digest is not None else None
            changed += now is not None and now != digest
        return changed

    def module_change(self, fp: Fingerprint, value: Any) -> str:
        """How the module ``value`` differs from the one ``fp`` remembers."""
        arrays = module_arrays(value)
        if arrays is None:
            return self.describe(value)
        alive = fp.ref() if fp.ref is not None else None
        if alive is not value or len(arrays) != len(fp.value):
            return f"another {_describe_module(value, arrays)}"
        changed = self._changed_arrays(fp, arrays)
        return f"{type(value).__name__} ({changed} of {len(arrays)} arrays changed)"

    def _same(self, fp: Fingerprint, value: Any) -> bool:
        if fp.kind == "module":
            arrays = module_arrays(value)
            if arrays is None or len(arrays) != len(fp.value):
                return False
            return self._changed_arrays(fp, arrays) == 0
        if fp.kind == "value":
            copy = self.frozen(value)
            return copy is not MISSING and bool(fp.value == copy)
        alive = fp.ref() if fp.ref is not None else None
        identical = alive is value if fp.ref is not None else fp.ident == id(value)
        if fp.kind != "array" or fp.digest is None:
            return identical
        if identical and _is_immutable_array(value):
            return True
        return is_array(value) and self.digest(value) == fp.digest


def same(fp: Fingerprint, value: Any) -> bool:
    """``Comparison().same(fp, value)``: one comparison."""
    return Comparison().same(fp, value)


def mutable_state(value: Any) -> Any:
    """A shallow picture of an object's contents, to see whether tracing changed it
    (None where there is none to take)."""
    try:
        if isinstance(value, (list, dict, set)):
            try:
                return freeze(value)
            except TypeError:
                items = value.values() if isinstance(value, dict) else value
                return ("ids", tuple(id(v) for v in items))
        state = getattr(value, "__dict__", None)
        if isinstance(state, dict):
            return tuple((k, id(v)) for k, v in state.items())
    except Exception:  # a hostile object: nothing to compare
        return None
    return None


@functools.lru_cache(maxsize=4096)
def in_scope(filename: str) -> bool:
    """Whether code in ``filename`` is the user's own: not JAX's, the standard
    library's, jaxscope's, or an installed library's (site-packages)."""
    return is_user_file(filename) and not is_library_file(filename)


def user_function(fn: Any) -> types.FunctionType | None:
    """The Python function inside ``fn``, through bound methods, partials and
    wrappers (``__wrapped__``: ``functools.wraps``, ``jax.jit``, ``eqx.filter_jit``,
    ``nnx.jit``), past the wrapper functions of libraries: the first of the user's own,
    else the innermost found, else None."""
    found: types.FunctionType | None = None
    for _ in range(20):
        try:
            if isinstance(fn, types.FunctionType):
                found = fn
                if in_scope(fn.__code__.co_filename):
                    return fn
                inner = getattr(fn, "__wrapped__", None)
            elif isinstance(fn, types.MethodType):
                inner = fn.__func__
            elif isinstance(fn, functools.partial):
                inner = fn.func
            else:
                inner = getattr(fn, "__wrapped__", None)
        except Exception:  # a hostile __getattr__
            return found
        if inner is None or inner is fn:
            return found
        fn = inner
    return found


def lookup(fn: types.FunctionType, code: types.CodeType, access: Access) -> Any:
    """The value ``access`` reads now: a global of ``fn``'s module (or a builtin), or a
    closure variable of ``fn`` read by its code or by code nested in it."""
    if access.scope == "global":
        value = fn.__globals__.get(access.name, MISSING)
        if value is MISSING:
            value = getattr(builtins, access.name, MISSING)
        return value
    freevars = fn.__code__.co_freevars
    if fn.__closure__ and access.name in freevars:
        cell = fn.__closure__[freevars.index(access.name)]
        try:
            return cell.cell_contents
        except ValueError:
            return MISSING
    return MISSING


def resolve_attrs(
    value: Any, attrs: tuple[str, ...], *, into_modules: bool = False
) -> Any:
    """``value.a.b`` for ``attrs == ("a", "b")``; MISSING where an attribute fails, and
    at a module unless ``into_modules``."""
    for attr in attrs:
        if isinstance(value, types.ModuleType) and not into_modules:
            return MISSING
        try:
            value = getattr(value, attr)
        except Exception:
            return MISSING
    return value


def ignorable(value: Any) -> bool:
    """Modules, functions, classes and JAX/NumPy machinery: reading them is not a risk."""
    if value is MISSING or isinstance(
        value,
        (
            types.ModuleType,
            type,
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodType,
            functools.partial,
        ),
    ):
        return True
    if callable(value) and not is_array(value):
        return True
    module = getattr(type(value), "__module__", "") or ""
    return module.startswith(
        ("jax.", "jaxlib", "numpy.dtypes", "typing")
    ) and not is_array(value)
