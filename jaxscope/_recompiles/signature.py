"""What JAX keys its jit caches on, read from one call as short strings.

A ``Signature`` names each argument after the user's parameters (``params['w'][0]``,
``y (keyword)``) and describes each leaf (shape, dtype, weak type, placement) and each
static value, plus the jit options, donation and trace-context config of the call. It
holds no user array or function.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import jax

from jaxscope._format import short_repr
from jaxscope.compat import recompiles as _crec


@dataclass(frozen=True, slots=True)
class Leaf:
    shape: str
    dtype: str
    weak: bool
    placement: str  # "" for uncommitted single-device / host values
    device: str

    def type_str(self) -> str:
        weak = " (weak: Python scalar)" if self.weak else ""
        return f"{self.dtype}[{self.shape}]{weak}"


@dataclass(frozen=True, slots=True)
class Arg:
    base: str  # parameter name
    keyword: bool
    static: bool
    static_repr: str = ""
    static_key: Any = None  # (type name, hash) or repr
    identity_hash: bool = False
    treedef: str = ""
    leaves: tuple[tuple[str, Leaf], ...] = ()

    @property
    def display(self) -> str:
        return f"{self.base} (keyword)" if self.keyword else self.base

    def path(self, sub: str = "") -> str:
        return f"{self.base}{sub} (keyword)" if self.keyword else f"{self.base}{sub}"


@dataclass(frozen=True, slots=True)
class Signature:
    options: tuple[tuple[str, str], ...]
    donated: tuple[str, ...]
    config: tuple[tuple[str, str], ...]
    args: tuple[Arg, ...]

    def flat(self) -> tuple[tuple[str, str], ...]:
        """``(path, type)`` of every leaf and static argument."""
        out: list[tuple[str, str]] = []
        for arg in self.args:
            if arg.static:
                out.append((arg.path(), f"static {arg.static_repr}"))
            else:
                out.extend((arg.path(p), leaf.type_str()) for p, leaf in arg.leaves)
        return tuple(out)


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


def static_arg(base: str, keyword: bool, value: Any) -> Arg:
    """A static argument: its short repr and the key JAX hashes it by."""
    identity = type(value).__hash__ is object.__hash__
    try:
        key: Any = (type(value).__qualname__, hash(value))
    except TypeError:
        key = ("unhashable", short_repr(value, 200))
    return Arg(
        base=base,
        keyword=keyword,
        static=True,
        static_repr=short_repr(value, 40),
        static_key=key,
        identity_hash=identity,
    )


def dynamic_arg(base: str, keyword: bool, value: Any) -> Arg:
    """A traced argument: its pytree structure and the description of each leaf."""
    leaves_with_paths, treedef = jax.tree_util.tree_flatten_with_path(value)
    leaves = tuple(
        (jax.tree_util.keystr(path), leaf_of(leaf)) for path, leaf in leaves_with_paths
    )
    return Arg(
        base=base, keyword=keyword, static=False, treedef=str(treedef), leaves=leaves
    )


def _parameters(jit_info: Any, user: Any, nargs: int) -> tuple[list[str], str | None]:
    """``(positional parameter names, *args name)`` of the jitted function.

    ``user``: the user's function behind ``jax.pmap``, whose flat arguments are named
    after its parameters when they match one to one.
    """
    sig = _crec.jit_signature(jit_info)
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


def signature_of(
    jit_info: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    user: Any = None,
) -> Signature:
    """The signature of one jitted call (``user``: see ``_parameters``)."""
    static_nums, static_names, donate_nums, donate_names = _crec.jit_static_and_donated(
        jit_info
    )
    positional, varargs = _parameters(jit_info, user, len(args))
    n = len(args)
    statics = {i % n if i < 0 and n else i for i in static_nums}
    donated_idx = {i % n if i < 0 and n else i for i in donate_nums}
    out: list[Arg] = []
    donated: list[str] = []
    for i, value in enumerate(args):
        if i < len(positional):
            base = positional[i]
        elif varargs is not None:
            base = f"{varargs}[{i - len(positional)}]"
        else:
            base = f"args[{i}]"
        if i in statics or base in static_names:
            out.append(static_arg(base, False, value))
        else:
            out.append(dynamic_arg(base, False, value))
        if i in donated_idx or base in donate_names:
            donated.append(base)
    for key, value in kwargs.items():
        idx = positional.index(key) if key in positional else -1
        if key in static_names or (idx >= 0 and idx in static_nums):
            out.append(static_arg(key, True, value))
        else:
            out.append(dynamic_arg(key, True, value))
        if key in donate_names or (idx >= 0 and idx in donate_nums):
            donated.append(f"{key} (keyword)")
    options = tuple(sorted(_crec.jit_options(jit_info).items()))
    return Signature(options, tuple(donated), _crec.trace_config(), tuple(out))


def eager_signature(args: tuple[Any, ...]) -> Signature:
    """The signature of a computation run outside jit: flat traced arguments only."""
    return Signature(
        (),
        (),
        _crec.trace_config(),
        tuple(dynamic_arg(f"args[{i}]", False, a) for i, a in enumerate(args)),
    )
