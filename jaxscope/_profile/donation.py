# pyright: strict
"""Donation findings of a lowered call, from JAX's public ``Lowered.args_info``
(each input's aval and whether it is donated) and ``Lowered.out_info``.

An argument the call returns updated (an output with the same tree structure,
shapes and dtypes: a train step's ``params``, ``opt_state``; a pytree of two
arrays or more, never a single array) but does not donate
keeps two copies alive; a donated input no output matches is one JAX warns about
("Some donated buffers were not usable") without saying which argument it is.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxscope._profile.records import MemoryFinding
from jaxscope._records import SourceLoc


def _leaf_key(leaf: Any) -> tuple[tuple[int, ...], str] | None:
    shape = getattr(leaf, "shape", None)
    dtype = getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        return None
    return tuple(int(d) for d in shape), str(np.dtype(dtype))


def _nbytes(key: tuple[tuple[int, ...], str]) -> int:
    shape, dtype = key
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def _signature(tree: Any) -> tuple[Any, tuple[tuple[tuple[int, ...], str], ...]] | None:
    """The tree structure and leaf (shape, dtype) of ``args_info`` / ``out_info``
    subtrees (``ArgInfo`` and ``ShapeDtypeStruct`` leaves both have them)."""
    leaves: list[Any] = jax.tree_util.tree_leaves(tree)
    structure: Any = getattr(jax.tree_util, "tree_structure")  # noqa: B009 (typed Any)
    treedef: Any = structure(tree)
    keys: list[tuple[tuple[int, ...], str]] = []
    for leaf in leaves:
        key = _leaf_key(leaf)
        if key is None:
            return None
        keys.append(key)
    if not keys:
        return None
    return treedef, tuple(keys)


def _subtrees(tree: Any, depth: int = 2) -> list[Any]:
    """``tree`` and its children (tuple, list and dict elements), ``depth`` deep."""
    out = [tree]
    children: list[Any] = []
    if depth and isinstance(tree, (tuple, list)):
        children = list(tree)  # pyright: ignore[reportUnknownArgumentType]
    elif depth and isinstance(tree, dict):
        children = list(tree.values())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    for child in children:
        out += _subtrees(child, depth - 1)
    return out


def _argument_name(names: Sequence[str], fallback: str) -> str:
    """The parameter a run of leaf names (``params[0]['w']``, ...) belongs to."""
    if not names:
        return fallback
    first = names[0]
    for i, ch in enumerate(first):
        if ch in "[.( ":
            return first[:i] or fallback
    return first


def donation_findings(
    lowered: Any,
    input_names: Sequence[str] = (),
    *,
    source: SourceLoc | None = None,
    function: str = "f",
) -> list[MemoryFinding]:
    """Arguments returned updated but not donated, and donated arguments no output
    can reuse. ``input_names`` names the flattened inputs (``Staged.input_names``);
    ``source`` is the function's definition line."""
    args_info = getattr(lowered, "args_info", None)
    out_info = getattr(lowered, "out_info", None)
    if args_info is None or out_info is None:
        return []
    try:
        positional, keywords = args_info
    except (TypeError, ValueError):
        return []
    groups: list[tuple[str, Any]] = []
    offset = 0
    names = list(input_names)
    for position, arg in enumerate(positional):
        n = len(jax.tree_util.tree_leaves(arg))
        groups.append(
            (_argument_name(names[offset : offset + n], f"args[{position}]"), arg)
        )
        offset += n
    for key in sorted(keywords):
        groups.append((str(key), keywords[key]))
    out: list[MemoryFinding] = []
    outputs = [_signature(t) for t in _subtrees(out_info)]
    used: set[int] = set()
    for name, arg in groups:
        infos = jax.tree_util.tree_leaves(arg)
        # a state pytree (params, an optimizer state), never one array: a
        # function returning an array shaped like its input need not update it
        if len(infos) < 2 or any(getattr(i, "donated", False) for i in infos):
            continue
        signature = _signature(arg)
        if signature is None:
            continue
        match = next(
            (i for i, s in enumerate(outputs) if s == signature and i not in used), None
        )
        if match is None:
            continue
        used.add(match)
        size = sum(_nbytes(k) for k in signature[1])
        out.append(
            MemoryFinding(
                kind="not_donated",
                message=(
                    f"{name} is returned updated (an output with its structure, "
                    f"shapes and dtypes) but not donated: its {size} bytes are held "
                    "twice while the call runs"
                ),
                fix=(
                    f"donate it, if the caller does not use the old {name} after "
                    f"the call: decorate {function} with @functools.partial("
                    f"jax.jit, donate_argnames=({name!r},)) in place of @jax.jit"
                ),
                source=source,
                bytes=size,
            )
        )
    out += _unusable(positional, keywords, out_info, names, source)
    return out


def _unusable(
    positional: Any,
    keywords: Any,
    out_info: Any,
    names: Sequence[str],
    source: SourceLoc | None,
) -> list[MemoryFinding]:
    free = Counter(
        k for k in (_leaf_key(o) for o in jax.tree_util.tree_leaves(out_info)) if k
    )
    infos = jax.tree_util.tree_leaves((positional, keywords))
    donated: list[tuple[str, tuple[tuple[int, ...], str]]] = []
    for index, info in enumerate(infos):
        key = _leaf_key(info)
        if key is None or not getattr(info, "donated", False):
            continue
        name = names[index] if index < len(names) else f"input {index}"
        if free[key] > 0:
            free[key] -= 1
        else:
            donated.append((name, key))
    out: list[MemoryFinding] = []
    for name, key in donated:
        shape = ",".join(map(str, key[0]))
        out.append(
            MemoryFinding(
                kind="donation_unusable",
                message=(
                    f"{name} ({key[1]}[{shape}]) is donated, but no output has its "
                    "shape and dtype, so XLA cannot reuse its buffer: this is JAX's "
                    "'Some donated buffers were not usable' warning"
                ),
                fix=(
                    f"stop donating {name} (drop it from donate_argnums / "
                    "donate_argnames), or return an updated value of the same shape "
                    "and dtype"
                ),
                source=source,
                bytes=_nbytes(key),
            )
        )
    return out
