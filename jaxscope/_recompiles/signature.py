"""What JAX keys its jit caches on, read from one call as short strings.

A ``Signature`` names each argument after the user's parameters and each leaf by its
pytree path, kept as key components (``("['encoder.layer0.bias']",)``) so a key with
``.`` or ``[`` in it is never cut. It describes each array leaf (shape, dtype, weak
type, placement), each static value (with its fields, so a changed config names the
field), each pytree node (type and metadata fields), plus the jit options, donation
and trace-context config of the call. It holds no user array or function.

Signatures come from a live call (``signature_of``), from a library's jit seen at
the user's level (``library_signature``), or from an entry of JAX's own trace cache
(``signature_from_key``: leaves without placement, which JAX does not key traces on).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from jaxscope._format import qualname, short_repr
from jaxscope.compat import libraries as _clib
from jaxscope.compat import recompiles as _crec

Path = tuple[str, ...]  # pytree key components as keystr spells each one

_FIELD_DEPTH = 3  # how deep the fields of a static value are read
_FIELD_LIMIT = 64  # at most this many fields per static value
_NODE_LIMIT = 512  # at most this many pytree nodes per argument


def join(path: Path) -> str:
    """``("['w']", "[0]")`` → ``"['w'][0]"``."""
    return "".join(path)


@dataclass(frozen=True, slots=True)
class Leaf:
    """An array leaf: ``placement`` is ``""`` for uncommitted single-device and host
    values, None where unknown (a signature read from JAX's trace cache)."""

    shape: str
    dtype: str
    weak: bool
    placement: str | None
    device: str

    def type_str(self) -> str:
        weak = " (weak: Python scalar)" if self.weak else ""
        return f"{self.dtype}[{self.shape}]{weak}"


@dataclass(frozen=True, slots=True)
class Static:
    """A value JAX keys by hash and equality: a static argument, a non-array leaf of
    ``eqx.filter_jit``, or a metadata field of a pytree node. ``fields``: ``(subpath,
    text, key, identity)`` of the values inside it (dataclass fields, items), to name
    what changed."""

    text: str
    key: Any  # (type name, hash), or ("unhashable", repr)
    identity: bool  # hashed by identity: a new object never hits the cache
    fields: tuple[tuple[Path, str, Any, bool], ...] = ()

    def type_str(self) -> str:
        return f"static {self.text}"


@dataclass(frozen=True, slots=True)
class Arg:
    """One argument: ``static`` for a static argument, else its pytree (``treedef``
    string, ``leaves``, ``nodes`` as ``(path, type name)``, and ``meta``: metadata
    fields of its nodes, which JAX keys in the tree structure)."""

    base: str  # parameter name
    keyword: bool
    static: Static | None = None
    treedef: str = ""
    leaves: tuple[tuple[Path, Leaf | Static], ...] = ()
    nodes: tuple[tuple[Path, str], ...] = ()
    meta: tuple[tuple[Path, Static], ...] = ()

    @property
    def display(self) -> str:
        return self.path()

    def path(self, sub: Path | str = ()) -> str:
        text = self.base + (sub if isinstance(sub, str) else join(sub))
        return f"{text} (keyword)" if self.keyword else text


@dataclass(frozen=True, slots=True)
class Signature:
    """``options`` and ``donated``: None where unknown (read from a JAX cache key
    that does not hold them)."""

    options: tuple[tuple[str, str], ...] | None
    donated: tuple[str, ...] | None
    config: tuple[tuple[str, str], ...]
    args: tuple[Arg, ...]
    api: str = "jax.jit"  # what the user jitted with: jax.jit, eqx.filter_jit, nnx.jit

    def flat(self) -> tuple[tuple[str, str], ...]:
        """``(path, type)`` of every leaf and static argument."""
        out: list[tuple[str, str]] = []
        for arg in self.args:
            if arg.static is not None:
                out.append((arg.path(), arg.static.type_str()))
            else:
                out.extend((arg.path(p), leaf.type_str()) for p, leaf in arg.leaves)
        return tuple(out)

    def placements(self) -> tuple[str | None, ...]:
        """The placement of every array leaf, in JAX's flat order."""
        return tuple(
            leaf.placement
            for arg in self.args
            if arg.static is None
            for _, leaf in arg.leaves
            if isinstance(leaf, Leaf)
        )


# ------------------------------------------------------------------ values


def leaf_of(x: Any) -> Leaf:
    """The description of one argument leaf."""
    try:
        shape, dtype, weak = _crec.leaf_type(x)
    except Exception:
        shape, dtype, weak = "?", type(x).__name__, False
    sharding, device, committed = _crec.leaf_placement(x)
    if not committed and (not sharding or device):
        placement, device = "", ""
    else:
        placement = sharding + ("" if committed else " (uncommitted)")
    return Leaf(shape, dtype, weak, placement, device)


def _hash_key(value: Any) -> Any:
    try:
        return (type(value).__qualname__, hash(value))
    except Exception:
        return ("unhashable", short_repr(value, 200))


def _text_of(value: Any) -> str:
    """A short text for a static value; a function by its name, not its long repr
    (``<function relu>``, not the long repr of JAX's ``custom_jvp`` object)."""
    if isinstance(value, _FUNCTIONS) or (
        callable(value)
        and hasattr(value, "__wrapped__")
        and not dataclasses.is_dataclass(value)
    ):
        return f"<function {qualname(value)}>"
    return short_repr(value, 40)


_FUNCTIONS = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    functools.partial,
)


def static_of(value: Any, depth: int = _FIELD_DEPTH) -> Static:
    """A static value: its short repr, the key JAX hashes it by, and its fields."""
    fields: list[tuple[Path, str, Any, bool]] = []
    if depth > 0:
        _fields_of(value, (), depth, fields)
    return Static(
        text=_text_of(value),
        key=_hash_key(value),
        identity=_by_identity(value),
        fields=tuple(fields),
    )


def _by_identity(value: Any) -> bool:
    """Whether JAX's cache compares ``value`` by identity (default ``__hash__``)."""
    return type(value).__hash__ is object.__hash__ or isinstance(value, _FUNCTIONS)


def _children(value: Any) -> list[tuple[str, Any]] | None:
    """The named parts of a value a static key is made of, or None for an atom."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            (f".{f.name}", getattr(value, f.name, None))
            for f in dataclasses.fields(value)
            if f.name != "parent"  # a Linen module's scope, not its config
        ]
    names = getattr(value, "_fields", None)  # a NamedTuple
    if isinstance(value, tuple) and isinstance(names, tuple):
        return [(f".{name}", getattr(value, name)) for name in names]
    if isinstance(value, (tuple, list)):
        return [(f"[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return [(f"[{k!r}]", v) for k, v in value.items()]
    return None


def _fields_of(value: Any, path: Path, depth: int, out: list[Any]) -> None:
    children = _children(value)
    if children is None or depth <= 0:
        if path:
            out.append((path, _text_of(value), _hash_key(value), _by_identity(value)))
        return
    for name, child in children:
        if len(out) >= _FIELD_LIMIT:
            return
        _fields_of(child, (*path, name), depth - 1, out)


def is_array(x: Any) -> bool:
    """An array leaf as ``eqx.filter_jit`` tells them (traced; everything else static)."""
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


@dataclass(frozen=True, slots=True)
class Flavor:
    """How a jit API sees the leaves of an argument."""

    api: str = "jax.jit"
    static_leaf: Callable[[Any], bool] | None = None  # eqx.filter_jit: non-arrays
    is_leaf: Callable[[Any], bool] | None = None  # nnx.jit: a Variable is one leaf
    leaf_value: Callable[[Any], Any] | None = None  # nnx.jit: the Variable's array


JAX_JIT = Flavor()
EQX_JIT = Flavor(api="eqx.filter_jit", static_leaf=lambda x: not is_array(x))
NNX_JIT = Flavor(
    api="nnx.jit", is_leaf=_clib.is_nnx_variable, leaf_value=_clib.nnx_variable_value
)


EQX_PMAP = Flavor(api="eqx.filter_pmap", static_leaf=EQX_JIT.static_leaf)
_FLAVORS = {
    "eqx.filter_jit": EQX_JIT,
    "eqx.filter_pmap": EQX_PMAP,
    "nnx.jit": NNX_JIT,
    "nnx.pmap": Flavor(
        api="nnx.pmap", is_leaf=NNX_JIT.is_leaf, leaf_value=NNX_JIT.leaf_value
    ),
    "jax.pmap": Flavor(api="jax.pmap"),
}


def dynamic_arg(
    base: str,
    keyword: bool,
    value: Any,
    flavor: Flavor = JAX_JIT,
    leaf_fn: Callable[[Any], Leaf | Static] | None = None,
) -> Arg:
    """A traced argument: its pytree structure and the description of each leaf.

    ``leaf_fn`` describes a leaf (default: ``leaf_of``, or ``static_of`` for the
    leaves the flavor keeps static).
    """
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(
        value, is_leaf=flavor.is_leaf
    )
    leaves = []
    for key_path, x in with_paths:
        path = tuple(jax.tree_util.keystr((k,)) for k in key_path)
        if leaf_fn is not None:
            leaves.append((path, leaf_fn(x)))
        elif flavor.static_leaf is not None and flavor.static_leaf(x):
            leaves.append((path, static_of(x, depth=1)))
        else:
            x = flavor.leaf_value(x) if flavor.leaf_value is not None else x
            leaves.append((path, leaf_of(x)))
    nodes, meta = _nodes_of(value, flavor)
    return Arg(
        base=base,
        keyword=keyword,
        treedef=str(treedef),
        leaves=tuple(leaves),
        nodes=nodes,
        meta=meta,
    )


_ATOMS = (jax.Array, np.ndarray, np.generic, int, float, complex, str)


def _is_atom(x: Any, flavor: Flavor) -> bool:
    if isinstance(x, (*_ATOMS, _KeyLeaf)):
        return True
    return flavor.is_leaf is not None and flavor.is_leaf(x)


def _nodes_of(
    value: Any, flavor: Flavor
) -> tuple[tuple[tuple[Path, str], ...], tuple[tuple[Path, Static], ...]]:
    """Every pytree node of ``value`` (path, type name) and the metadata fields of
    its custom nodes (attributes that are not children: JAX keys them by value)."""
    nodes: list[tuple[Path, str]] = []
    meta: list[tuple[Path, Static]] = []
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack and len(nodes) < _NODE_LIMIT:
        path, node = stack.pop()
        if _is_atom(node, flavor):
            continue
        children = _plain_children(node)
        if children is None:
            children = _custom_children(node)
            if children is None:
                continue  # a leaf
            child_ids = {id(c) for _, c in children}
            for name, attr in _metadata_fields(node, child_ids):
                meta.append(((*path, f".{name}"), static_of(attr, depth=2)))
        nodes.append((path, type(node).__name__))
        for key, child in children:
            if not key.startswith("._"):  # a library's private state
                stack.append(((*path, key), child))
    nodes.sort()
    meta.sort(key=lambda item: item[0])
    return tuple(nodes), tuple(meta)


_CONTAINERS = (dict, list, tuple, type(None))


def _plain_children(node: Any) -> list[tuple[str, Any]] | None:
    """The children of a dict, list, tuple or None as ``keystr`` spells their keys
    (no metadata: their structure is their keys), or None for any other node."""
    kind = type(node)
    if kind is dict:
        return [(f"[{k!r}]", v) for k, v in node.items()]
    if kind is list or kind is tuple:
        return [(f"[{i}]", v) for i, v in enumerate(node)]
    if node is None:
        return []
    return None


def _custom_children(node: Any) -> list[tuple[str, Any]] | None:
    """One level of a registered pytree node's children, or None for a leaf."""
    try:
        children = jax.tree_util.tree_flatten_with_path(
            node,
            is_leaf=lambda n: n is not node,  # one level down
        )[0]
    except Exception:
        return None
    if len(children) == 1 and children[0][0] == () and children[0][1] is node:
        return None
    return [
        ("".join(jax.tree_util.keystr((k,)) for k in key_path), child)
        for key_path, child in children
    ]


def _metadata_fields(node: Any, child_ids: set[int]) -> list[tuple[str, Any]]:
    """The attributes of a custom pytree node that are not among its children."""
    if isinstance(node, _CONTAINERS):
        return []
    if dataclasses.is_dataclass(node):
        names = [f.name for f in dataclasses.fields(node)]
    elif hasattr(node, "__dict__"):
        names = [k for k in vars(node) if not k.startswith("_")]
    else:
        return []
    out = []
    for name in names:
        try:
            attr = getattr(node, name)
        except Exception:
            continue
        if id(attr) not in child_ids and not _clib.is_nnx_variable(attr):
            out.append((name, attr))
    return out


def static_arg(base: str, keyword: bool, value: Any) -> Arg:
    """A static argument: its short repr, the key JAX hashes it by, its fields."""
    return Arg(base=base, keyword=keyword, static=static_of(value))


# ------------------------------------------------------------------ live calls


def _parameters(sig: Any, user: Any, nargs: int) -> tuple[list[str], str | None]:
    """``(positional parameter names, *args name)`` of a jitted function.

    ``user``: the user's function behind ``jax.pmap``, whose flat arguments are named
    after its parameters when they match one to one.
    """
    if user is not None:
        try:
            user_sig = inspect.signature(user)
        except (TypeError, ValueError):
            user_sig = None
        if (
            user_sig is not None
            and len(user_sig.parameters) == nargs
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
    return positional, varargs


def _base(i: int, positional: list[str], varargs: str | None) -> str:
    if i < len(positional):
        return positional[i]
    if varargs is not None:
        return f"{varargs}[{i - len(positional)}]"
    return f"args[{i}]"


def _normalize(nums: tuple[int, ...], n: int) -> set[int]:
    return {i % n if i < 0 and n else i for i in nums}


def signature_of(
    jit_info: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    user: Any = None,
    library: _clib.LibraryJitCall | None = None,
) -> Signature:
    """The signature of one jitted call (``user``: see ``_parameters``; ``library``:
    the user's call behind ``eqx.filter_jit`` / ``nnx.jit``, named at its level)."""
    static_nums, static_names, donate_nums, donate_names = _crec.jit_static_and_donated(
        jit_info
    )
    flavor = JAX_JIT
    sig = _crec.jit_signature(jit_info)
    if library is not None:
        args, kwargs, sig = library.args, library.kwargs, library.signature
        static_nums = library.static_argnums
        flavor = _FLAVORS.get(library.api, JAX_JIT)
        if library.api != "nnx.jit":  # the inner jit's donation is of other arguments
            donate_nums, donate_names = (), ()
    positional, varargs = _parameters(sig, user, len(args))
    n = len(args)
    statics, donated_idx = _normalize(static_nums, n), _normalize(donate_nums, n)
    out: list[Arg] = []
    donated: list[str] = []
    for i, value in enumerate(args):
        base = _base(i, positional, varargs)
        if i in statics or base in static_names:
            out.append(static_arg(base, False, value))
        else:
            out.append(dynamic_arg(base, False, value, flavor))
        if i in donated_idx or base in donate_names:
            donated.append(base)
    for key, value in kwargs.items():
        idx = positional.index(key) if key in positional else -1
        if key in static_names or (idx >= 0 and idx in statics):
            out.append(static_arg(key, True, value))
        else:
            out.append(dynamic_arg(key, True, value, flavor))
        if key in donate_names or (idx >= 0 and idx in donated_idx):
            donated.append(f"{key} (keyword)")
    options = tuple(sorted(_crec.jit_options(jit_info).items()))
    if flavor.api.endswith("pmap"):  # options pmap derived from its own structure
        options = None
    return Signature(
        options, tuple(donated), _crec.trace_config(), tuple(out), flavor.api
    )


def eager_signature(args: tuple[Any, ...]) -> Signature:
    """The signature of a computation run outside jit: flat traced arguments only."""
    return Signature(
        (),
        (),
        _crec.trace_config(),
        tuple(dynamic_arg(f"args[{i}]", False, a) for i, a in enumerate(args)),
    )


def with_input_types(
    sig: Signature, types: tuple[tuple[str, str, bool], ...]
) -> Signature | None:
    """``sig`` with its array leaves of the types of an earlier compile's inputs
    (``types``, in JAX's flat order); None where the count of array leaves differs
    (never guess an alignment). Options and donation are unknown there."""
    keyword = sorted((a for a in sig.args if a.keyword), key=lambda a: a.base)
    ordered = [a for a in sig.args if not a.keyword] + keyword
    n = sum(
        isinstance(leaf, Leaf)
        for arg in ordered
        if arg.static is None
        for _, leaf in arg.leaves
    )
    if n == 0 or len(types) != n:
        return None
    it = iter(types)
    replaced = {}
    for arg in ordered:
        if arg.static is not None:
            continue
        leaves = tuple(
            (
                path,
                Leaf(*_typed(next(it)), None, "") if isinstance(leaf, Leaf) else leaf,
            )
            for path, leaf in arg.leaves
        )
        replaced[id(arg)] = dataclasses.replace(arg, leaves=leaves)
    args = tuple(replaced.get(id(a), a) for a in sig.args)
    return Signature(None, None, sig.config, args, sig.api)


def _typed(t: tuple[str, str, bool]) -> tuple[str, str, bool]:
    return str(t[0]), str(t[1]), bool(t[2])


# ------------------------------------------------------------------ JAX's cache


class _KeyLeaf:
    """A placeholder leaf standing for one abstract value of a cached trace."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _cached_arg(
    base: str, keyword: bool, treedef: Any, avals: tuple[tuple[str, str, bool], ...]
) -> Arg:
    placeholders = [_KeyLeaf(i) for i in range(treedef.num_leaves)]
    try:
        value = jax.tree_util.tree_unflatten(treedef, placeholders)
    except Exception:  # a node that will not rebuild from placeholders
        value = placeholders if treedef.num_leaves != 1 else placeholders[0]

    def leaf_fn(x: Any) -> Leaf:
        shape, dtype, weak = avals[x.index] if isinstance(x, _KeyLeaf) else ("?",) * 3
        return Leaf(str(shape), str(dtype), bool(weak), None, "")

    arg = dynamic_arg(base, keyword, value, leaf_fn=leaf_fn)
    return dataclasses.replace(arg, treedef=str(treedef))


def signature_from_key(
    key: _crec.TraceKey, user: Any = None, jit_info: Any = None
) -> Signature:
    """The signature of an earlier trace held in JAX's cache (see ``TraceKey``);
    ``jit_info``: the current call's, naming the parameters where the key has none."""
    info = key.jit_info if key.jit_info is not None else jit_info
    static_nums, _, donate_nums, donate_names = _crec.jit_static_and_donated(info)
    n_kw_static, n_kw_dynamic = len(key.static_arg_names), len(key.dynamic_arg_names)
    pos_static = list(key.static_args[: len(key.static_args) - n_kw_static])
    pos_trees = list(key.treedefs[: len(key.treedefs) - n_kw_dynamic])
    n = len(pos_static) + len(pos_trees)
    positional, varargs = _parameters(_crec.jit_signature(info), user, n)
    statics = (
        set(key.static_positions)
        if key.static_positions is not None
        else _normalize(static_nums, n)
    )
    donated_idx = _normalize(donate_nums, n)
    out: list[Arg] = []
    donated: list[str] = []
    offset = 0
    for i in range(n):
        base = _base(i, positional, varargs)
        if i in statics and pos_static:
            out.append(static_arg(base, False, pos_static.pop(0)))
            continue
        tree = pos_trees.pop(0)
        out.append(
            _cached_arg(base, False, tree, key.avals[offset : offset + tree.num_leaves])
        )
        offset += tree.num_leaves
        if i in donated_idx or base in donate_names:
            donated.append(base)
    kw_static = key.static_args[len(key.static_args) - n_kw_static :]
    for name, value in zip(key.static_arg_names, kw_static, strict=True):
        out.append(static_arg(name, True, value))
    kw_trees = key.treedefs[len(key.treedefs) - n_kw_dynamic :]
    for name, tree in zip(key.dynamic_arg_names, kw_trees, strict=True):
        out.append(
            _cached_arg(name, True, tree, key.avals[offset : offset + tree.num_leaves])
        )
        offset += tree.num_leaves
        idx = positional.index(name) if name in positional else -1
        if name in donate_names or (idx >= 0 and idx in donated_idx):
            donated.append(f"{name} (keyword)")
    if key.jit_info is None:  # options and donation are not in this key
        return Signature(None, None, key.config, tuple(out))
    options = tuple(sorted(_crec.jit_options(key.jit_info).items()))
    return Signature(options, tuple(donated), key.config, tuple(out))


def call_signature(
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    static_argnums: tuple[int, ...] = (),
    static_argnames: tuple[str, ...] = (),
) -> Signature:
    """The signature of ``fn(*args, **kwargs)`` as a ``jax.jit`` of it would key it,
    its arguments named after ``fn``'s parameters (for ``js.diff``'s causes)."""
    try:
        sig: Any = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    positional, varargs = _parameters(sig, None, len(args))
    statics = _normalize(static_argnums, len(args))
    out: list[Arg] = []
    for i, value in enumerate(args):
        base = _base(i, positional, varargs)
        if i in statics or base in static_argnames:
            out.append(static_arg(base, False, value))
        else:
            out.append(dynamic_arg(base, False, value))
    for key, value in kwargs.items():
        if key in static_argnames:
            out.append(static_arg(key, True, value))
        else:
            out.append(dynamic_arg(key, True, value))
    return Signature(None, None, _crec.trace_config(), tuple(out))
