"""``js.find_nan(f, mode=...)``: the first equation making a NaN (or an Inf).

``mode="compiled"`` adds one finiteness flag per equation (a NaN flag and an Inf
flag, each an ``any`` over its floating outputs) to the program, runs it compiled
once, and reads the first flag set in program order: inside a ``scan`` the flags
are stacked per iteration, inside a ``while`` the loop keeps those of the first
iteration that set one, inside a ``shard_map`` there is one row per device. A
second, smaller run (the program up to that equation) reads its operands, and the
equation alone is run again on them eagerly to show its outputs.

``mode="interpreted"`` is the stepper's hunt (``_stepper.stepper.find_nan``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxscope._checks import check_flag
from jaxscope._exceptions import InvalidCallError
from jaxscope._format import qualname, short_repr
from jaxscope._host import is_inexact
from jaxscope._probe.probe import enclosing, run_compiled, stage_program
from jaxscope._probe.rewrite import Entries, Rewriter, path_key
from jaxscope._probe.select import phase, reachable
from jaxscope._staging import staged, static_args
from jaxscope._stepper import stepper as _stepper
from jaxscope._stepper.plan import Node, Plan
from jaxscope._stepper.values import (
    Frame,
    NanFinding,
    NanInInput,
    nonfinite_kind,
    summarize_value,
)
from jaxscope.compat import probe as _cp

_MODES = ("interpreted", "compiled")
#: Sorts after any iteration or equation index: an equation holding a nested
#: jaxpr runs after the equations inside it.
_LAST = 1 << 62


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CompiledNanFinding(NanFinding):
    """A ``NanFinding`` of the compiled hunt: also the pass (``"forward"`` or
    ``"backward"``) and, inside a ``shard_map``, the device."""

    phase: str = "forward"
    device: str | None = None


def _inexact_outputs(node: Node) -> bool:
    return any(
        is_inexact(getattr(getattr(v, "aval", None), "dtype", None) or np.int32)
        for v in node.outvars
    )


def _flag(outs: list[Any], test: Callable[[Any], Any]) -> Any:
    flags = [
        jnp.any(test(o)) for o in outs if is_inexact(getattr(o, "dtype", np.int32))
    ]
    flag = flags[0]
    for other in flags[1:]:
        flag = flag | other
    return flag


def _pack(entries: Entries, order: list[list[str]]) -> dict[str, Any]:
    """Entries of one shape and dtype stacked into one output each (fewer outputs
    for XLA to keep); ``order`` receives the keys of each group."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for key in sorted(entries):
        value = entries[key]
        groups.setdefault((value.shape, str(value.dtype)), []).append(key)
    order[:] = list(groups.values())
    return {
        str(k): jnp.stack([entries[key] for key in keys])
        for k, keys in enumerate(order)
    }


def _unpack(packed: dict[str, Any], order: list[list[str]]) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    for k, keys in enumerate(order):
        block = np.asarray(packed[str(k)])
        for j, key in enumerate(keys):
            found[key] = block[j]
    return found


def _position(
    node: Node, flags: dict[str, np.ndarray], key: str
) -> tuple[tuple[int, ...], list[int | None]] | None:
    """Where flag ``key`` of ``node`` was first set: its program-order sort key and
    the iteration (or device row) at each enclosing equation (None: not a loop)."""
    value = flags[key]
    hits = np.argwhere(value)
    if not len(hits):
        return None
    index = [int(i) for i in hits[0]]
    chain = enclosing(node)
    order: list[int] = []
    iterations: list[int | None] = []
    axis = 0
    outer_index: list[int] = []
    for depth, outer in enumerate(chain):
        order.append(node.path[2 * depth])
        if outer.primitive in ("scan", "shard_map"):
            it: int | None = index[axis]
            outer_index.append(index[axis])
            axis += 1
        elif outer.primitive == "while":
            companion = flags.get(f"iter|{path_key(outer.path)}|{key}")
            it = None
            if companion is not None:
                it = (
                    int(companion[tuple(outer_index)])
                    if outer_index
                    else int(companion)
                )
        else:
            it = None
        iterations.append(it)
        order.append(it if it is not None else 0)
        order.append(node.path[2 * depth + 1])
    order.extend((node.path[-1], _LAST))
    return tuple(order), iterations


def _frames(
    top_name: str, node: Node, iterations: list[int | None]
) -> tuple[list[Frame], str | None]:
    chain = enclosing(node)
    frames: list[Frame] = []
    device: str | None = None
    plan: Plan = node.plan.program.top or node.plan
    labels = [top_name]
    for outer, it in zip(chain, iterations, strict=True):
        if outer.primitive == "shard_map" and it is not None:
            devices = _cp.shard_map_devices(outer.eqn)
            axes = ", ".join(f"{a}={n}" for a, n in _cp.shard_map_axes(outer.eqn))
            named = devices[it] if devices is not None and it < len(devices) else None
            device = f"device {it} of the shard_map mesh ({axes})" + (
                f": {named}" if named else ""
            )
        labels.append(_label(outer))
    plans: list[Plan] = [plan]
    for outer in chain:
        plans.append(node.plan if outer is chain[-1] else _sub_of(outer, chain))
    for k, label in enumerate(labels):
        sub = plans[k] if k < len(plans) else node.plan
        inner = chain[k] if k < len(chain) else node
        it = iterations[k - 1] if k > 0 else None
        outer = chain[k - 1] if k > 0 else None
        length = None
        if outer is not None and outer.primitive == "scan":
            length = int(outer.eqn.params["length"])
        frames.append(
            Frame(
                label=label,
                primitive=outer.primitive if outer is not None else None,
                call=outer.info if outer is not None else None,
                path=sub.path,
                iteration=it
                if outer is not None and outer.primitive != "shard_map"
                else None,
                length=length,
                position=inner.index,
                n_eqns=len(sub.nodes),
                source=inner.info.source,
            )
        )
    return frames, device


def _sub_of(outer: Node, chain: list[Node]) -> Plan:
    k = chain.index(outer)
    return chain[k + 1].plan


def _label(node: Node) -> str:
    prim = node.primitive
    if prim == "scan":
        return "scan body"
    if prim == "while":
        return "while body"
    if prim == "shard_map":
        return "shard_map body"
    name = node.eqn.params.get("name")
    return f"{prim}({name})" if name else prim


def _operands(
    top: Plan, leaves: list[Any], culprit: Node, iterations: list[int | None], kind: str
) -> tuple[list[Any], list[Any]]:
    """The culprit's operands read from a compiled run of the program up to it (at
    the iteration found), and its outputs from running it alone, eagerly."""
    chain = enclosing(culprit)
    test = jnp.isnan if kind == "nan" else jnp.isinf
    base = path_key(culprit.path)

    def record(node: Node, invals: list[Any], outs: list[Any]) -> Entries:
        found: Entries = {f"{base}|hit": _flag(outs, test)}
        for k, v in enumerate(invals):
            found[f"{base}|arg{k}"] = jnp.asarray(v)
        return found

    def finish(entries: Entries) -> Entries:
        return {k: v for k, v in entries.items() if not k.startswith("count|")}

    rewriter = Rewriter({culprit.path}, record, "first")

    def program(*flat: Any) -> Entries:
        return finish(rewriter.run(top, flat)[1])

    entries = jax.jit(program)(*leaves)
    operands: list[Any] = []
    for k in range(len(culprit.invars)):
        value = entries[f"{base}|arg{k}"]
        for outer, it in zip(chain, iterations, strict=True):
            if outer.primitive in ("scan", "shard_map") and it is not None:
                value = value[it]
        operands.append(value)
    with jax.disable_jit():
        outputs = culprit.runner()(operands)
    return operands, outputs


def _hunt(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    inf: bool | None,
    statics: tuple[tuple[Any, ...], tuple[Any, ...]],
) -> NanFinding | NanInInput | None:
    api = "js.find_nan"
    staged_call, leaves, top = stage_program(fun, args, kwargs, statics, api)
    names = staged_call.input_names
    for index, leaf in enumerate(leaves):
        kind = nonfinite_kind(leaf, True, bool(inf))
        if kind is not None:
            path = names[index] if index < len(names) else f"input {index}"
            return NanInInput(
                path=path, kind=kind, value=summarize_value(path, leaf, user_name=path)
            )
    nodes = [n for n in reachable(top) if _inexact_outputs(n)]
    watch_inf = inf is not False

    def record(node: Node, invals: list[Any], outs: list[Any]) -> Entries:
        found: Entries = {path_key(node.path, "nan"): _flag(outs, jnp.isnan)}
        if watch_inf:
            found[path_key(node.path, "inf")] = _flag(outs, jnp.isinf)
        return found

    order: list[list[str]] = []
    rewriter = Rewriter({n.path for n in nodes}, record, "first")
    outs, packed, _, _ = run_compiled(top, leaves, rewriter, lambda e: _pack(e, order))
    flags = _unpack(packed, order)
    out_inf = any(nonfinite_kind(o, False, True) == "inf" for o in outs)
    hunt_inf = out_inf if inf is None else inf
    best: tuple[tuple[int, ...], Node, str, list[int | None]] | None = None
    for node in nodes:
        for kind in ("nan", "inf") if hunt_inf else ("nan",):
            key = path_key(node.path, kind)
            if key not in flags:
                continue
            found = _position(node, flags, key)
            if found is None:
                continue
            sort_key = (*found[0], 0 if kind == "nan" else 1)
            if best is None or sort_key < best[0]:
                best = (sort_key, node, kind, found[1])
    if best is None:
        return None
    _, culprit, kind, iterations = best
    name = qualname(fun).rsplit("<locals>.", 1)[-1]
    frames, device = _frames(name, culprit, iterations)
    operands, outputs = _operands(top, leaves, culprit, iterations, kind)
    plan = culprit.plan
    return CompiledNanFinding(
        eqn=culprit.info,
        kind=kind,
        inputs=[
            summarize_value(plan.name(v), val)
            for v, val in zip(culprit.invars, operands, strict=True)
        ],
        outputs=[
            summarize_value(plan.name(v), val)
            for v, val in zip(culprit.outvars, outputs, strict=True)
        ],
        frames=frames,
        phase=phase(culprit.info),
        device=device,
    )


def find_nan(
    fun: Callable[..., Any],
    *,
    inf: bool | None = None,
    mode: str = "interpreted",
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., NanFinding | NanInInput | None]:
    """The first equation of ``fun(*args)`` that produces a NaN (or Inf), or None.

    A NaN (or, with ``inf=True``, an Inf) already in an argument is reported as a
    ``NanInInput`` naming the argument's path (``params['w']``): nothing in the
    program produced it.

    The result records the equation (``eqn``, ``source``, ``primitive``), whether it
    was a ``"nan"`` or an ``"inf"``, summaries of its inputs and outputs, and the frame
    stack (loop iterations included) where it happened.

    ``inf=None`` (the default) hunts an Inf only when one reaches the outputs, so an
    Inf that a ``jnp.where`` or a schedule discards (``where(x > 0, log(x), 0)``) is
    not taken for the culprit; ``inf=True`` stops at the first Inf anywhere,
    ``inf=False`` never does.

    ``mode="interpreted"`` runs the program compiled, then, when its outputs hold a
    NaN, steps it equation by equation to the first one (the stepper's values). ``mode=
    "compiled"`` runs it compiled once with a finiteness flag per equation, so the
    numbers are XLA's, and reads the culprit's operands from a second compiled run of
    the program up to it: far faster on big programs and long loops, and it names the
    pass (forward or backward) and, inside ``shard_map``, the device.

    Args:
        fun: the function (``jax.jit``, ``nnx.jit`` and ``eqx.filter_jit`` ones too).
        inf: hunt Infs too: None (when one reaches the outputs), True or False.
        mode: ``"interpreted"`` or ``"compiled"``.
        static_argnums: positional arguments passed as Python values.
        static_argnames: keyword arguments passed as Python values.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> js.find_nan(lambda x: jnp.log(x) * 2)(jnp.array([1.0, -1.0])).primitive
        'log'
        >>> js.find_nan(lambda x: jnp.log(x) * 2, mode="compiled")(jnp.array([1.0, -1.0])).primitive
        'log'
    """
    if mode not in _MODES:
        raise InvalidCallError(
            f"js.find_nan: mode must be 'interpreted' or 'compiled', got "
            f"{short_repr(mode, 40)}; write e.g. js.find_nan(f, mode='compiled')"
        )
    if mode == "interpreted":
        return _stepper.find_nan(
            fun,
            inf=inf,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        )
    check_flag(
        inf,
        "inf",
        where="js.find_nan",
        example="js.find_nan(f, inf=True)",
        none_ok=True,
    )
    statics = static_args(static_argnums, static_argnames, "js.find_nan")

    def build(
        fn: Callable[..., Any], a: tuple[Any, ...], k: dict[str, Any]
    ) -> NanFinding | NanInInput | None:
        return _hunt(fn, a, k, inf=inf, statics=statics)

    return staged(fun, "js.find_nan", build)
