"""Why a call missed the cache: the differences between two signatures, as ``Cause``s.

``diff(prev, cur, fn)`` compares the signature of an earlier compile of the same
function with this call's; each difference JAX keys its caches on becomes one
``Cause`` with the values before and after and a concrete fix, worded for the API the
user jitted with (``jax.jit``, ``eqx.filter_jit``, ``nnx.jit``).
"""

from __future__ import annotations

from jaxscope._format import truncate
from jaxscope._recompiles.records import Cause
from jaxscope._recompiles.signature import Arg, Leaf, Path, Signature, Static, join
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
        causes += _diff_arg(pa, ca, cur.api) if pa is not None else [_passed_now(ca)]
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
    if prev.options is None or cur.options is None or prev.options == cur.options:
        return []
    po, co = dict(prev.options), dict(cur.options)
    changed = [k for k in sorted(set(po) | set(co)) if po.get(k) != co.get(k)]
    return [
        Cause(
            kind="new_function",
            path=fn,
            before=truncate(", ".join(f"{k}={po.get(k)}" for k in changed), 70),
            after=truncate(", ".join(f"{k}={co.get(k)}" for k in changed), 70),
            hint=f"{fn} was compiled before through another {cur.api} wrapper with "
            "different options: create the jitted function once and reuse it",
        )
    ]


def _diff_donation(prev: Signature, cur: Signature, fn: str) -> list[Cause]:
    if prev.donated is None or cur.donated is None or prev.donated == cur.donated:
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
            f"({before} → {after}), which compiles it twice: use one {cur.api} "
            "wrapper",
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


def _diff_arg(pa: Arg, ca: Arg, api: str) -> list[Cause]:
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
    if (pa.static is None) != (ca.static is None):
        return [
            Cause(
                kind="static_arg",
                path=ca.display,
                before="traced" if pa.static is None else "static",
                after="traced" if ca.static is None else "static",
                hint=f"{ca.display} switches between static and traced"
                f": use one {api} wrapper",
            )
        ]
    if pa.static is not None and ca.static is not None:
        if pa.static.key == ca.static.key:
            return []
        return [_static_arg_cause(ca, pa.static, ca.static, api)]
    if pa.treedef == ca.treedef:
        return _diff_leaves(pa, ca, api)
    causes = [_diff_tree(pa, ca, api)]
    if [p for p, _ in pa.leaves] == [p for p, _ in ca.leaves]:
        causes += _diff_leaves(pa, ca, api)  # a node's metadata and its leaves changed
    return causes


# ------------------------------------------------------------------ static values


def _static_change(a: Static, b: Static) -> tuple[Path, str, str, bool]:
    """``(field subpath, before, after, new object)``: the field of two static values
    that differs (no subpath: the whole value); ``new object``: equal text, compared
    by identity."""
    fa = {p: (t, k, i) for p, t, k, i in a.fields}
    fb = {p: (t, k, i) for p, t, k, i in b.fields}
    if fa and fb:
        for path in [f[0] for f in b.fields] + [p for p in fa if p not in fb]:
            old, new = fa.get(path), fb.get(path)
            if old is not None and new is not None and old[1] == new[1]:
                continue
            if old is None or new is None:
                break  # a different shape of value: show it whole
            return path, old[0], new[0], old[0] == new[0] and new[2]
    return (), a.text, b.text, a.text == b.text and b.identity


def _static_arg_cause(arg: Arg, a: Static, b: Static, api: str) -> Cause:
    sub, before, after, new_object = _static_change(a, b)
    where = arg.path(sub)
    if new_object:
        what = "static argument" if not sub else f"field of static argument {arg.base}"
        hint = (
            f"{what} {where} is a new {b.key[0] if not sub else 'value'} object on "
            "each call, hashed by identity, so it never hits the cache: define "
            "__hash__ and __eq__ by value or reuse one object"
        )
        after = f"{after} (new object)"
    else:
        hint = (
            f"static argument {arg.display} changes"
            + (f" {where}" if sub else " value")
            + f" {before} → {after}; each distinct value compiles again"
            f" under {api}: pass it as a traced array if it is data, or limit the "
            "values it takes"
        )
    return Cause(kind="static_arg", path=where, before=before, after=after, hint=hint)


# ------------------------------------------------------------------ pytree structure


def _diff_tree(prev: Arg, cur: Arg, api: str) -> Cause:
    prev_paths = [p for p, _ in prev.leaves]
    cur_paths = [p for p, _ in cur.leaves]
    prev_set, cur_set = set(prev_paths), set(cur_paths)
    added = [p for p in cur_paths if p not in prev_set]
    removed = [p for p in prev_paths if p not in cur_set]
    if added or removed:
        return _leaves_changed(cur, added, removed)
    node = _node_change(prev, cur)
    if node is not None:
        path, before, after = node
        hint = (
            f"{path} changes container type ({before} → {after}), and each pytree "
            "structure compiles again: pass the same container type every time"
        )
        return Cause(
            kind="tree_structure", path=path, before=before, after=after, hint=hint
        )
    meta = _meta_change(prev, cur, api)
    if meta is not None:
        return meta
    before, after = _text_difference(prev.treedef, cur.treedef)
    hint = (
        f"{cur.display} changes pytree structure ({before} → {after}), and each "
        "structure compiles again: pass the same structure on every call"
    )
    return Cause(
        kind="tree_structure", path=cur.display, before=before, after=after, hint=hint
    )


def _leaves_changed(cur: Arg, added: list[Path], removed: list[Path]) -> Cause:
    prefix = _common_prefix(added + removed)
    rel_add = _join([join(p[len(prefix) :]) or join(p) for p in added])
    rel_rem = _join([join(p[len(prefix) :]) or join(p) for p in removed])
    path = cur.path(prefix)
    if added and not removed:
        before, after = f"without {rel_add}", f"with {rel_add}"
    elif removed and not added:
        before, after = f"with {rel_rem}", f"without {rel_rem}"
    else:
        before, after = f"with {rel_rem}", f"with {rel_add}"
    hint = (
        f"{path} changes pytree structure ({before} → {after}), and each structure "
        "compiles again: pass the same keys/lengths on every call (fill absent "
        "entries with placeholders) or mark it static"
    )
    return Cause(
        kind="tree_structure", path=path, before=before, after=after, hint=hint
    )


def _common_prefix(paths: list[Path]) -> Path:
    """The key components every path starts with; a single path's parent."""
    if not paths:
        return ()
    if len(paths) == 1:
        return paths[0][:-1]
    first = paths[0]
    n = 0
    while n < len(first) and all(len(p) > n and p[n] == first[n] for p in paths):
        n += 1
    return first[:n]


def _join(items: list[str], limit: int = 3) -> str:
    text = ", ".join(items[:limit])
    return text + (f" (+{len(items) - limit})" if len(items) > limit else "")


def _node_change(prev: Arg, cur: Arg) -> tuple[str, str, str] | None:
    pn, cn = dict(prev.nodes), dict(cur.nodes)
    for path in sorted(set(pn) | set(cn)):
        a, b = pn.get(path, "leaf"), cn.get(path, "leaf")
        if a != b:
            return cur.path(path), a, b
    return None


def _meta_change(prev: Arg, cur: Arg, api: str) -> Cause | None:
    pm, cm = dict(prev.meta), dict(cur.meta)
    for path in sorted(set(pm) | set(cm)):
        a, b = pm.get(path), cm.get(path)
        if a is None or b is None or a.key == b.key:
            continue
        sub, before, after, new_object = _static_change(a, b)
        where = cur.path((*path, *sub))
        if new_object:
            hint = (
                f"{where} is a new object on this call, compared by identity as "
                f"part of the pytree structure {api} keys on: create it once "
                "(outside the loop) and reuse it"
            )
            after = f"{after} (new object)"
        else:
            hint = (
                f"{where} is a static field of a pytree node (part of the structure "
                f"{api} keys on); it changes {before} → {after} and each value "
                f"compiles again: {_keep_fixed(api)}"
            )
        return Cause(
            kind="tree_structure", path=where, before=before, after=after, hint=hint
        )
    return None


def _keep_fixed(api: str) -> str:
    if api == "nnx.jit":
        return (
            "keep the module's static attributes fixed between calls, or hold a "
            "value that changes in an nnx.Variable (traced)"
        )
    if api == "eqx.filter_jit":
        return (
            "keep eqx.field(static=True) fields fixed between calls, or make a value "
            "that changes an array field (traced)"
        )
    return "keep it fixed between calls, or make it a data field (traced)"


def _text_difference(a: str, b: str, context: int = 24) -> tuple[str, str]:
    """The parts of two strings around where they first differ."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    lo = max(0, start - context)
    lead = "..." if lo else ""
    return (
        lead + truncate(a[lo:], 2 * context + 3),
        lead + truncate(b[lo:], 2 * context + 3),
    )


# ------------------------------------------------------------------ leaves


def _diff_leaves(prev: Arg, cur: Arg, api: str) -> list[Cause]:
    causes: list[Cause] = []
    for (path, a), (_, b) in zip(prev.leaves, cur.leaves, strict=False):
        where = cur.path(path)
        if isinstance(a, Static) or isinstance(b, Static):
            causes += _static_leaf(where, a, b, api)
            continue
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
            causes.append(dtype_cause(where, a.dtype, b.dtype, a.dtype))
        if a.weak != b.weak and a.dtype == b.dtype:
            causes.append(
                Cause(
                    kind="weak_type",
                    path=where,
                    before=a.type_str(),
                    after=b.type_str(),
                    hint=f"{where} is a Python scalar on one call and a JAX array on "
                    "another (weak_type differs): pass the same kind every time, e.g. "
                    f"jnp.asarray({where if where.isidentifier() else 'v'}, "
                    f"jnp.{np_name(b.dtype)}) on every call",
                )
            )
        if (
            a.placement is not None
            and b.placement is not None
            and a.placement != b.placement
        ):
            causes.append(placement_cause(where, a.placement, b.placement))
    return causes


def dtype_cause(where: str, before: str, after: str, usual: str) -> Cause:
    """A dtype change; the hint casts to ``usual``, the dtype most earlier compiles
    had (not the last one, which may itself be the odd one out)."""
    seen = f" (earlier compiles had {usual})" if usual != before else ""
    return Cause(
        kind="dtype",
        path=where,
        before=before,
        after=after,
        hint=f"{where} changes dtype {before} → {after}{seen}: cast it once "
        f"before the call (e.g. jnp.asarray(v, jnp.{np_name(usual)}))",
    )


def _static_leaf(
    where: str, a: Leaf | Static, b: Leaf | Static, api: str
) -> list[Cause]:
    """A leaf that ``eqx.filter_jit`` keeps static (not an array) on either call."""
    if isinstance(a, Static) and isinstance(b, Static):
        if a.key == b.key:
            return []
        sub, before, after, new_object = _static_change(a, b)
        where = where + join(sub)
        if new_object:  # the same text: what differs is the object itself
            kind = "function" if after.startswith("<function ") else "object"
            hint = (
                f"{api} treats every non-array leaf as static and compares "
                f"{where} by identity: it is a new {kind} with the same name on "
                f"each call ({after}), so each call compiles again: define it once, "
                "outside the loop (or the function that makes it), and reuse it"
            )
            after = f"{after} (new {kind}, same name)"
            return [
                Cause(
                    kind="static_arg", path=where, before=before, after=after, hint=hint
                )
            ]
        fix = (
            "if it is data, make it a JAX array (jnp.asarray) so it is traced; "
            "if it is configuration, keep it fixed between calls (mark such fields "
            "eqx.field(static=True))"
        )
        hint = (
            f"{api} treats every non-array leaf as static, and {where} changes "
            f"{before} → {after}, so each value compiles again: {fix}"
        )
        return [
            Cause(kind="static_arg", path=where, before=before, after=after, hint=hint)
        ]
    before, after = a.type_str(), b.type_str()
    hint = (
        f"{where} is an array on one call and a non-array on another; {api} traces "
        "arrays and keeps everything else static: pass the same kind every time"
    )
    return [Cause(kind="static_arg", path=where, before=before, after=after, hint=hint)]


def placement_cause(where: str, before: str, after: str) -> Cause:
    """A leaf placed on another device or sharding (``""``: uncommitted)."""
    single = "mesh" not in before + after and "devices" not in before + after
    before = before or _UNCOMMITTED
    after = after or _UNCOMMITTED
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


def np_name(dtype: str) -> str:
    """The ``jnp`` name of a short dtype: ``f32`` → ``float32``, ``bf16`` → ``bfloat16``."""
    if dtype == "bf16":
        return "bfloat16"
    if dtype[:1] in _NP_PREFIX and dtype[1:].isdigit():
        return _NP_PREFIX[dtype[:1]] + dtype[1:]
    return dtype
