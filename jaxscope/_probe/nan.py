"""``js.find_nan(f, mode=...)``: the first equation making a NaN (or an Inf).

``mode="compiled"`` runs the program compiled once with finiteness flags, one pair
per run of consecutive equations (``_Chunks``, about ``_MAX_CHUNKS`` of them): when
its outputs are finite there is nothing to hunt; otherwise the first flag set in
program order says where to look. Outside loops the flags are read on the host from
the chunks' values, which leave the program as they are; inside ``scan`` and
``while`` loops the flags are reduced in the program, those of the first iteration
that set them (with its number), and inside a ``shard_map`` there is one row per
device. A second compiled run, of the program
up to that chunk, reads each of its equations' operands and results at that
iteration; the first equation with a non-finite result is re-run alone, eagerly, on
its operands to show its results.

``mode="interpreted"`` is the stepper's hunt (``_stepper.stepper.find_nan``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxscope._checks import check_flag, takes_the_function_alone
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
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import probe as _cp

_MODES = ("interpreted", "compiled")
#: Equations per chunk flag: at least ``_CHUNK``, more in big programs so that there
#: are at most about ``_MAX_CHUNKS`` of them in loop bodies and ``_MAX_TOP_CHUNKS``
#: outside loops; outside loops a chunk's flag reads its last ``_PER_CHUNK`` values
#: XLA keeps in memory (each value read costs compile time; the search steps back
#: from a flag, see ``_hunt``). Measured with ``benchmarks/bench_probe.py``.
_CHUNK = 8
_MAX_CHUNKS = 64
_MAX_TOP_CHUNKS = 256
_PER_CHUNK = 1
#: Outside loops a chunk's kept values leave the program as they are, and the host
#: reads their flags: a reduction per flag costs XLA a kernel to compile (about as
#: much as the rest of a 1,000-equation program for 64 of them), an output almost
#: nothing, so there are more, smaller chunks there (a smaller window to read
#: after). A value over ``_RAW_BYTES``, or past ``_RAW_TOTAL`` bytes of them, is
#: reduced in the program instead.
_RAW_BYTES = 1 << 20
_RAW_TOTAL = 64 << 20


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


def _code(outs: list[Any]) -> Any:
    """The most severe non-finite value among ``outs``' floating outputs as an int8:
    2 a NaN, 1 an Inf (and no NaN), 0 none; one reduction for them all."""
    parts = [
        jnp.where(jnp.isnan(o), 2, jnp.where(jnp.isinf(o), 1, 0))
        .astype(jnp.int8)
        .ravel()
        for o in outs
        if is_inexact(getattr(o, "dtype", np.int32))
    ]
    parts = [p for p in parts if p.size]
    if not parts:
        return jnp.zeros((), jnp.int8)
    return jnp.max(jnp.concatenate(parts) if len(parts) > 1 else parts[0])


class _Chunks:
    """Runs of up to ``size`` equations run one after the other (through inlined
    calls, within one loop body) that share
    one flag pair, ``<first path>|chunk|nan`` (a NaN) and ``...|any`` (a NaN or an
    Inf), from one reduction over the chunk's results: the outputs that equations
    after it read. Observing a value stops XLA fusing through it, so every value
    observed costs compile time: a few flags over results keep the instrumented
    compile close to the plain one. The second run looks inside the chunk found."""

    def __init__(self, members: list[Node], size: int, top_size: int) -> None:
        self.chunks: dict[str, list[Node]] = {}
        self.results: dict[str, set[int]] = {}
        #: chunks outside loops, whose kept values leave the program as they are
        self.raw: set[str] = set()
        self._raw_bytes = 0
        self._last: set[tuple[int, ...]] = set()
        self._where: dict[tuple[int, ...], str] = {}
        self._readers = _readers(members)
        run: list[Node] = []
        for node in members:
            if run:
                loop = _loop_of(run[-1])
                limit = size if loop is not None else top_size
                if _loop_of(node) is not loop or len(run) >= limit:
                    self._close(run)
                    run = []
            run.append(node)
        if run:
            self._close(run)
        self._pending: dict[str, list[Any]] = {}

    def _close(self, run: list[Node]) -> None:
        key = path_key(run[0].path, "chunk")
        self.chunks[key] = run
        self._last.add(run[-1].path)
        for node in run:
            self._where[node.path] = key
        in_loop = _loop_of(run[0]) is not None
        inside = {id(n) for n in run}

        def watched(node: Node, var: Any) -> bool:
            readers = self._readers.get(id(var), set())
            if in_loop:  # a loop body: every result, to know the iteration
                return bool(readers - inside)
            return node.primitive in _MATERIALIZED or 0 in readers

        watched_vars = [
            v
            for node in run
            for v in node.outvars
            if not _cj.is_dropvar(v) and watched(node, v)
        ]
        if not in_loop:
            # outside loops, the chunk's last kept value: the search steps back
            # from there while the culprit's operands are not finite
            watched_vars = watched_vars[-_PER_CHUNK:]
            sizes = [_nbytes(v) for v in watched_vars]
            if (
                max(sizes, default=0) <= _RAW_BYTES
                and self._raw_bytes + sum(sizes) <= _RAW_TOTAL
            ):
                self._raw_bytes += sum(sizes)
                self.raw.add(key)
        self.results[key] = {id(v) for v in watched_vars}

    def record(self, node: Node, invals: list[Any], outs: list[Any]) -> Entries:
        key = self._where.get(node.path)
        if key is None:
            return {}
        pending = self._pending.setdefault(key, [])
        if node is self.chunks[key][0]:
            pending.clear()
        results = self.results[key]
        pending.extend(
            o for o, v in zip(outs, node.outvars, strict=True) if id(v) in results
        )
        if node.path not in self._last:
            return {}
        if key in self.raw:
            kept = [o for o in pending if is_inexact(getattr(o, "dtype", np.int32))]
            pending.clear()
            return {f"{key}|raw{j}": o for j, o in enumerate(kept)}
        code = _code(pending)
        pending.clear()
        return {f"{key}|nan": code == 2, f"{key}|any": code >= 1}

    def flags(self, found: dict[str, Any]) -> None:
        """Add the flags of the chunks whose values came out as they are."""
        for key in self.raw:
            kept = [v for k, v in found.items() if k.startswith(f"{key}|raw")]
            kinds = {nonfinite_kind(v, True, True) for v in kept}
            found[f"{key}|nan"] = np.bool_("nan" in kinds)
            found[f"{key}|any"] = np.bool_(bool(kinds - {None}))


def _nbytes(var: Any) -> int:
    """The bytes of ``var``'s value (0 where its type has no plain size)."""
    aval = getattr(var, "aval", None)
    shape = getattr(aval, "shape", None)
    try:
        itemsize = np.dtype(getattr(aval, "dtype", None)).itemsize
    except TypeError:  # an extended dtype (a typed key)
        return 0
    return int(np.prod(shape, dtype=np.int64)) * itemsize if shape is not None else 0


#: Primitives whose results XLA keeps in memory anyway (fusion roots): a flag on
#: them costs a reduction, not a fusion broken apart.
_MATERIALIZED = frozenset(
    {
        "dot_general",
        "conv_general_dilated",
        "reduce_sum",
        "reduce_max",
        "reduce_min",
        "reduce_prod",
        "argmax",
        "argmin",
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "cumlogsumexp",
        "sort",
        "gather",
        "scatter",
        "scatter-add",
        "scatter_add",
        "dynamic_slice",
        "dynamic_update_slice",
        "fft",
        "triangular_solve",
        "cholesky",
        "lu",
        "qr",
        "eigh",
        "svd",
        "custom_linear_solve",
    }
)


def _loop_of(node: Node) -> Node | None:
    """The nearest loop or ``shard_map`` holding ``node`` (calls are inlined)."""
    call = node.plan.call
    while call is not None and call.primitive not in ("scan", "while", "shard_map"):
        call = call.plan.call
    return call


def _readers(members: list[Node]) -> dict[int, set[int]]:
    """``{id(var): ids of what reads it}``: equations, and the equation holding a
    jaxpr for the jaxpr's results."""
    readers: dict[int, set[int]] = {}
    plans: dict[int, Plan] = {}
    for node in members:
        plans.setdefault(id(node.plan), node.plan)
    for plan in plans.values():
        for node in plan.nodes:
            for v in node.invars:
                readers.setdefault(id(v), set()).add(id(node))
        holder = id(plan.call) if plan.call is not None else 0
        for v in plan.outvars:
            readers.setdefault(id(v), set()).add(holder)
    return readers


def _pack(entries: Entries, order: list[list[str]]) -> dict[str, Any]:
    """Flags of one shape and dtype stacked into one output each (fewer outputs
    for XLA to keep), values as they are; ``order`` receives the keys of each
    group (a value's own)."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for key in sorted(entries):
        value = entries[key]
        group = (key,) if _is_raw(key) else (value.shape, str(value.dtype))
        groups.setdefault(group, []).append(key)
    order[:] = list(groups.values())
    return {
        str(k): jnp.stack([entries[key] for key in keys])
        if not _is_raw(keys[0])
        else entries[keys[0]]
        for k, keys in enumerate(order)
    }


def _is_raw(key: str) -> bool:
    return key.rpartition("|")[2].startswith("raw")


def _unpack(packed: dict[str, Any], order: list[list[str]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for k, keys in enumerate(order):
        if _is_raw(keys[0]):
            found[keys[0]] = packed[str(k)]
            continue
        block = np.asarray(packed[str(k)])
        for j, key in enumerate(keys):
            found[key] = block[j]
    return found


def _position(
    node: Node, flags: dict[str, Any], key: str
) -> tuple[tuple[int, ...], list[int | None]] | None:
    """Where flag ``key`` of the equations starting at ``node`` was first set: its
    program-order sort key and, per enclosing equation, the loop iteration or the
    device row (None for a call)."""
    value = np.asarray(flags[key])
    hits = np.argwhere(value)
    if not len(hits):
        return None
    index = [int(i) for i in hits[0]]
    order: list[int] = []
    iterations: list[int | None] = []
    axis = 0
    rows: list[int] = []
    for depth, outer in enumerate(enclosing(node)):
        order.append(node.path[2 * depth])
        it: int | None = None
        step = 0
        if outer.primitive == "shard_map":
            it = step = index[axis]
            rows.append(index[axis])
            axis += 1
        elif outer.primitive in ("scan", "while"):
            done = np.asarray(flags[f"iter|{path_key(outer.path)}|{key}"])
            step = int(done[tuple(rows)]) if rows else int(done)
            it = step
            if outer.primitive == "scan" and bool(outer.eqn.params["reverse"]):
                it = int(outer.eqn.params["length"]) - 1 - step
        iterations.append(it)
        order.extend((step, node.path[2 * depth + 1]))
    order.append(node.path[-1])
    return tuple(order), iterations


def _frames(
    top_name: str, node: Node, iterations: list[int | None]
) -> tuple[list[Frame], str | None]:
    """The stepper's frame records of ``node``'s place, and the device it ran on."""
    chain = enclosing(node)
    device: str | None = None
    frames: list[Frame] = []
    plans: list[Plan] = [c.plan for c in chain] + [node.plan]
    here: list[Node] = [*chain, node]
    for k, plan in enumerate(plans):
        outer = chain[k - 1] if k else None
        it = iterations[k - 1] if k else None
        length = None
        if outer is not None and outer.primitive == "scan":
            length = int(outer.eqn.params["length"])
        if outer is not None and outer.primitive == "shard_map" and it is not None:
            device = _device(outer, it)
            it = None
        frames.append(
            Frame(
                label=top_name if outer is None else _label(outer),
                primitive=outer.primitive if outer is not None else None,
                call=outer.info if outer is not None else None,
                path=plan.path,
                iteration=it,
                length=length,
                position=here[k].index,
                n_eqns=len(plan.nodes),
                source=here[k].info.source,
            )
        )
    return frames, device


def _device(node: Node, row: int) -> str:
    devices = _cp.shard_map_devices(node.eqn)
    axes = ", ".join(f"{a}={n}" for a, n in _cp.shard_map_axes(node.eqn))
    named = devices[row] if devices is not None and row < len(devices) else None
    return f"device {row} of the shard_map mesh ({axes})" + (
        f": {named}" if named else ""
    )


def _label(node: Node) -> str:
    prim = node.primitive
    if prim in ("scan", "while", "shard_map"):
        return f"{prim} body"
    name = node.eqn.params.get("name")
    return f"{prim}({name})" if name else prim


def _inside(
    top: Plan,
    leaves: list[Any],
    members: list[Node],
    hunt_inf: bool,
) -> tuple[Node, list[Any], list[Any], str, list[int | None]] | None:
    """The first of ``members`` (equations run one after the other) whose results
    are not finite, read from a compiled run of the program up to them (operands
    and results at the first iteration any of them made one), its results re-run
    eagerly: ``(node, operands, results, kind, iterations)``; None if none."""
    key = path_key(members[0].path, "window")
    position = {m.path: k for k, m in enumerate(members)}
    last = members[-1]
    pending: list[Any] = []

    def record(node: Node, invals: list[Any], outs: list[Any]) -> Entries:
        k = position[node.path]
        if k == 0:
            pending.clear()
        pending.extend(outs)
        found: Entries = {}
        for j, v in enumerate(invals):
            found[f"{key}|argin{k}.{j}"] = jnp.asarray(v)
        for j, v in enumerate(outs):
            found[f"{key}|argout{k}.{j}"] = jnp.asarray(v)
        if node is last and in_loop:  # the iteration to keep (outside: the host)
            code = _code(pending)
            found[f"{key}|hit"] = code >= 1 if hunt_inf else code == 2
        return found

    rewriter = Rewriter(set(position), record, "first")

    def program(*flat: Any) -> Entries:
        return rewriter.run(top, flat)[1]

    in_loop = _loop_of(members[0]) is not None
    entries = {k: np.asarray(v) for k, v in jax.jit(program)(*leaves).items()}
    iterations: list[int | None] = [None] * len(enclosing(members[0]))
    if in_loop:
        place = _position(members[0], entries, f"{key}|hit")
        if place is None:
            return None
        iterations = place[1]
    rows = [
        it
        for outer, it in zip(enclosing(members[0]), iterations, strict=True)
        if outer.primitive == "shard_map"
    ]

    def at(name: str) -> Any:
        value = entries[name]
        for row in rows:
            value = value[row]
        return value

    for k, node in enumerate(members):
        outs = [at(f"{key}|argout{k}.{j}") for j in range(len(node.outvars))]
        kinds = [nonfinite_kind(o, True, hunt_inf) for o in outs]
        kind = next((c for c in kinds if c is not None), None)
        if kind is None:
            continue
        operands = [at(f"{key}|argin{k}.{j}") for j in range(len(node.invars))]
        try:
            with jax.disable_jit():
                outs = node.runner()(operands)
        except Exception:
            pass  # a collective outside its shard_map: keep the compiled results
        return node, operands, outs, kind, iterations
    return None


def _clean_operands(node: Node, operands: list[Any], hunt_inf: bool) -> bool:
    """Whether the culprit's operands are finite, or came in as the program's
    inputs (then it made the first non-finite value; else one came from before)."""
    top = node.plan.program.top
    inputs = {id(v) for v in top.invars} if top is not None else set()
    return all(
        id(var) in inputs or nonfinite_kind(value, True, hunt_inf) is None
        for var, value in zip(node.invars, operands, strict=True)
    )


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
    selected = {n.path for n in nodes}
    inside = Rewriter(selected, _no_record, "first").inside
    members = [n for n in nodes if n.path not in inside]
    chunks = _Chunks(
        members,
        max(_CHUNK, -(-len(members) // _MAX_CHUNKS)),
        max(_CHUNK, -(-len(members) // _MAX_TOP_CHUNKS)),
    )
    order: list[list[str]] = []
    rewriter = Rewriter(selected, chunks.record, "first")
    # one compiled run: the program's outputs say whether to hunt, its flags where
    outs, packed, _, _ = run_compiled(top, leaves, rewriter, lambda e: _pack(e, order))
    flags = _unpack(packed, order)
    chunks.flags(flags)
    kinds = [nonfinite_kind(o, True, True) for o in outs]
    out_inf = any(nonfinite_kind(o, False, True) == "inf" for o in outs)
    hunt_inf = out_inf if inf is None else inf
    clean = "nan" not in kinds and not (out_inf and hunt_inf)
    if clean and inf is not True:
        return None
    tag = "any" if hunt_inf else "nan"
    keys = list(chunks.chunks)
    flagged = sorted(
        (place[0], k)
        for k, key in enumerate(keys)
        if (place := _position(chunks.chunks[key][0], flags, f"{key}|{tag}"))
        is not None
    )
    # A flag sits on the values XLA keeps in memory anyway, so a NaN an elementwise
    # equation makes shows on the first such value that reads it, maybe in the next
    # chunk: look at the flagged chunk and the one before, then further back while
    # the culprit's operands are already not finite.
    end = flagged[0][1] if flagged else len(keys) - 1
    while end >= 0:
        loop = _loop_of(chunks.chunks[keys[end]][0])
        start = end
        if end > 0 and _loop_of(chunks.chunks[keys[end - 1]][0]) is loop:
            start = end - 1
        window = [n for key in keys[start : end + 1] for n in chunks.chunks[key]]
        culprit = _inside(top, leaves, window, hunt_inf)
        if culprit is not None and _clean_operands(culprit[0], culprit[1], hunt_inf):
            if culprit[0].subs:
                break  # made inside a cond branch or a custom rule: step into it
            return _finding(fun, *culprit)
        if start == 0 or _loop_of(chunks.chunks[keys[start - 1]][0]) is not loop:
            break
        end = start - 1
    # Not found where the flags point, or made inside an equation the rewrite does
    # not enter (a cond branch): the interpreted hunt steps into it.
    return _stepper.find_nan(
        fun, inf=inf, static_argnums=statics[0], static_argnames=statics[1]
    )(*args, **kwargs)


def _no_record(node: Node, invals: list[Any], outs: list[Any]) -> Entries:
    return {}


def _finding(
    fun: Callable[..., Any],
    node: Node,
    operands: list[Any],
    outputs: list[Any],
    kind: str,
    iterations: list[int | None],
) -> CompiledNanFinding:
    name = qualname(fun).rsplit("<locals>.", 1)[-1]
    frames, device = _frames(name, node, iterations)
    plan = node.plan
    top = plan.program.top
    inputs = dict(
        zip(
            (id(v) for v in (top.invars if top is not None else ())),
            plan.program.input_names,
            strict=False,
        )
    )

    def user(var: Any) -> str:
        # the argument's path only: a name read from the source is shown where
        # the stepper's naming is certain, not guessed for a gradient's operand
        return "" if _cj.is_literal(var) else inputs.get(id(var), "")

    return CompiledNanFinding(
        eqn=node.info,
        kind=kind,
        inputs=[
            summarize_value(plan.name(v), val, user_name=user(v))
            for v, val in zip(node.invars, operands, strict=True)
        ],
        outputs=[
            summarize_value(plan.name(v), val, user_name=user(v))
            for v, val in zip(node.outvars, outputs, strict=True)
        ],
        frames=frames,
        phase=phase(node.info),
        device=device,
    )


@takes_the_function_alone
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
    "compiled"`` runs it compiled once with finiteness flags (one per run of a few
    equations), so the numbers are XLA's, and when its outputs hold a NaN reads the
    culprit's operands from a second compiled run of the program up to it: far faster on big programs and long loops, and it names the
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
