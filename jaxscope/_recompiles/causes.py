"""Why a call missed the cache: the differences between two signatures, as ``Cause``s.

``diff(prev, cur, fn)`` compares the signature of an earlier compile of the same
function with this call's; each difference JAX keys its caches on becomes one
``Cause`` with the values before and after and a concrete fix.
"""

from __future__ import annotations

from jaxscope._format import short_repr, truncate
from jaxscope._recompiles.records import Cause
from jaxscope._recompiles.signature import Arg, Leaf, Signature
from jaxscope.compat import recompiles as _crec

_HOW_PASSED = ("positionally", "by keyword")
_UNCOMMITTED = "uncommitted (default device)"


def diff(prev: Signature, cur: Signature, fn: str) -> list[Cause]:
    """Every difference between ``prev`` and ``cur`` that makes JAX compile again."""
    causes = _diff_config(prev, cur)
    causes += _diff_options(prev, cur, fn)
    causes += _diff_donation(prev, cur, fn)
    prev_args = {a.base: a for a in prev.args}
    cur_args = {a.base: a for a in cur.args}
    for base, ca in cur_args.items():
        pa = prev_args.get(base)
        causes += _diff_arg(pa, ca) if pa is not None else [_passed_now(ca)]
    causes += [_passed_before(pa) for b, pa in prev_args.items() if b not in cur_args]
    return causes


def _diff_config(prev: Signature, cur: Signature) -> list[Cause]:
    if prev.config == cur.config:
        return []
    causes: list[Cause] = []
    prev_cfg = dict(prev.config)
    for name, value in dict(cur.config).items():
        old = prev_cfg.get(name)
        if old is None or old == value:
            continue
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
    return causes


def _diff_options(prev: Signature, cur: Signature, fn: str) -> list[Cause]:
    if prev.options == cur.options:
        return []
    po, co = dict(prev.options), dict(cur.options)
    changed = [k for k in sorted(set(po) | set(co)) if po.get(k) != co.get(k)]
    return [
        Cause(
            kind="new_function",
            path=fn,
            before=truncate(", ".join(f"{k}={po.get(k)}" for k in changed), 70),
            after=truncate(", ".join(f"{k}={co.get(k)}" for k in changed), 70),
            hint=f"{fn} was compiled before through another jax.jit wrapper with "
            "different options: create the jitted function once and reuse it",
        )
    ]


def _diff_donation(prev: Signature, cur: Signature, fn: str) -> list[Cause]:
    if prev.donated == cur.donated:
        return []
    before = ", ".join(prev.donated) or "nothing donated"
    after = ", ".join(cur.donated) or "nothing donated"
    return [
        Cause(
            kind="donation",
            path=", ".join(cur.donated or prev.donated),
            before=before,
            after=after,
            hint=f"{fn} is jitted both with and without donate_argnums "
            f"({before} → {after}), which compiles it twice: use one jitted wrapper",
        )
    ]


def _passed_now(arg: Arg) -> Cause:
    return Cause(
        kind="tree_structure",
        path=arg.display,
        before="not passed",
        after="passed",
        hint=f"{arg.display} is passed on this call but was not before "
        "(its default was used): pass it the same way on every call",
    )


def _passed_before(arg: Arg) -> Cause:
    return Cause(
        kind="tree_structure",
        path=arg.display,
        before="passed",
        after="not passed",
        hint=f"{arg.display} was passed before but not on this call (its "
        "default is used): pass it the same way on every call",
    )


def _diff_arg(pa: Arg, ca: Arg) -> list[Cause]:
    """The causes of one argument passed on both calls: how it is passed first, then
    its static value, pytree structure or leaves."""
    if pa.keyword != ca.keyword:
        how_before, how_now = _HOW_PASSED[pa.keyword], _HOW_PASSED[ca.keyword]
        return [
            Cause(
                kind="tree_structure",
                path=ca.display,
                before=f"passed {how_before}",
                after=f"passed {how_now}",
                hint=f"{ca.base} is passed {how_before} on one call and "
                f"{how_now} on another, which JAX keys as different "
                "structures: pass it the same way every time",
            )
        ]
    if pa.static != ca.static:
        return [
            Cause(
                kind="static_arg",
                path=ca.display,
                before="static" if pa.static else "traced",
                after="static" if ca.static else "traced",
                hint=f"{ca.display} switches between static and traced"
                ": use one jitted wrapper",
            )
        ]
    if ca.static:
        return [_static_cause(pa, ca)] if pa.static_key != ca.static_key else []
    if pa.treedef != ca.treedef:
        return [_diff_tree(pa, ca)]
    return _diff_leaves(pa, ca)


def _static_cause(pa: Arg, ca: Arg) -> Cause:
    if pa.static_repr == ca.static_repr and ca.identity_hash:
        hint = (
            f"static argument {ca.display} is a new "
            f"{ca.static_key[0]} object on each call, hashed by "
            "identity, so it never hits the cache: define __hash__ "
            "and __eq__ by value or reuse one object"
        )
        before = f"{pa.static_repr} (object {pa.static_key[1]:#x})"
        after = f"{ca.static_repr} (object {ca.static_key[1]:#x})"
    else:
        hint = (
            f"static argument {ca.display} changes value "
            f"{pa.static_repr} → {ca.static_repr}; each distinct "
            "value compiles again: pass it as a traced array if it is "
            "data, or limit the values it takes"
        )
        before, after = pa.static_repr, ca.static_repr
    return Cause(
        kind="static_arg", path=ca.display, before=before, after=after, hint=hint
    )


def _diff_tree(prev: Arg, cur: Arg) -> Cause:
    prev_paths = {p for p, _ in prev.leaves}
    cur_paths = {p for p, _ in cur.leaves}
    added = sorted(cur_paths - prev_paths)
    removed = sorted(prev_paths - cur_paths)
    if added or removed:
        prefix = _common_prefix(added + removed)
        rel_add = _join([p[len(prefix) :] or p for p in added])
        rel_rem = _join([p[len(prefix) :] or p for p in removed])
        path = cur.path(prefix)
        if added and not removed:
            before, after = f"without {rel_add}", f"with {rel_add}"
        elif removed and not added:
            before, after = f"with {rel_rem}", f"without {rel_rem}"
        else:
            before, after = f"with {rel_rem}", f"with {rel_add}"
    else:
        path = cur.display
        before, after = short_repr(prev.treedef, 50), short_repr(cur.treedef, 50)
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


def _diff_leaves(prev: Arg, cur: Arg) -> list[Cause]:
    causes: list[Cause] = []
    for (path, a), (_, b) in zip(prev.leaves, cur.leaves, strict=False):
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
            causes.append(_placement_cause(where, a, b))
    return causes


def _placement_cause(where: str, a: Leaf, b: Leaf) -> Cause:
    single = bool(a.device or b.device) and "mesh" not in a.placement + b.placement
    before = a.placement or _UNCOMMITTED
    after = b.placement or _UNCOMMITTED
    if single:
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
    kind = "device" if single else "sharding"
    return Cause(kind=kind, path=where, before=before, after=after, hint=hint)


_NP_PREFIX = {"f": "float", "i": "int", "u": "uint", "c": "complex"}


def _np_name(dtype: str) -> str:
    """The ``jnp`` name of a short dtype: ``f32`` → ``float32``, ``bf16`` → ``bfloat16``."""
    if dtype == "bf16":
        return "bfloat16"
    if dtype[:1] in _NP_PREFIX and dtype[1:].isdigit():
        return _NP_PREFIX[dtype[:1]] + dtype[1:]
    return dtype
