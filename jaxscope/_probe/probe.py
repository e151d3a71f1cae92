"""``js.probe(f, at=[...])(*args)``: intermediates of the real compiled program.

The call is staged as ``js.step`` stages it; the program is then re-traced with the
selected values as extra outputs (``rewrite``), compiled as a separate program and
run once. The user's function, JAX's caches of it and the config are untouched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxscope._checks import takes_the_function_alone
from jaxscope._display import Renderable, printable
from jaxscope._exceptions import InvalidCallError
from jaxscope._format import qualname, short_repr
from jaxscope._probe.rewrite import Entries, Rewriter, path_key
from jaxscope._probe.select import Selector, Target, needs_names, phase
from jaxscope._records import SourceLoc
from jaxscope._source import loc_of_function, short_loc
from jaxscope._staging import Staged, stage, staged, static_args
from jaxscope._stepper.locals import LocalsLog, record_locals
from jaxscope._stepper.plan import Node, Plan, Program
from jaxscope._stepper.values import ValueSummary, summarize_value
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import probe as _cp

_LOOPS = ("stack", "last")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeValue:
    """One probed value: where it comes from and what it holds (summarised).

    ``axes`` names the leading axes a loop or a ``shard_map`` added (``"scan
    iteration (100)"``, ``"device (d=8)"``), outermost first; ``reduced`` the loops
    whose last iteration alone was kept; ``devices`` holds a summary per device
    where the value is split over several.
    """

    name: str
    source: SourceLoc | None
    primitive: str
    path: tuple[int, ...]
    phase: str
    axes: tuple[str, ...]
    reduced: tuple[str, ...]
    summary: ValueSummary
    devices: tuple[tuple[str, ValueSummary], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Compiled:
    """A program run compiled: the function, its compile and run times (s)."""

    function_name: str
    compile_seconds: float
    run_seconds: float


class ProbeView(Renderable):
    """The values ``js.probe`` read from the compiled program, by the user's names.

    ``view["logits"]`` is the value (a ``jax.Array``; stacked over loop iterations
    or devices as ``view.info["logits"].axes`` says); ``view.result`` is what the
    program returned (for ``nnx.jit``, the state updates it makes too);
    ``view.values`` lists every ``ProbeValue`` record.
    """

    def __init__(
        self,
        values: list[ProbeValue],
        arrays: dict[str, Any],
        result: Any,
        compiled: Compiled,
    ) -> None:
        self.values = values
        self.info = {v.name: v for v in values}
        self._arrays = arrays
        self.result = result
        self.compiled = compiled

    @property
    def function_name(self) -> str:
        return self.compiled.function_name

    @property
    def compile_seconds(self) -> float:
        return self.compiled.compile_seconds

    def keys(self) -> list[str]:
        return list(self._arrays)

    def __getitem__(self, name: str) -> Any:
        try:
            return self._arrays[name]
        except KeyError:
            raise KeyError(
                f"no probe named {name!r}; probed: {', '.join(self._arrays)}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __contains__(self, name: object) -> bool:
        return name in self._arrays

    def __len__(self) -> int:
        return len(self._arrays)

    def __repr__(self) -> str:
        names = ", ".join(self._arrays)
        return printable(f"<ProbeView of {self.function_name}: {names}>")


# ------------------------------------------------------------------------ staging


def stage_program(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    statics: tuple[tuple[Any, ...], tuple[Any, ...]],
    api_name: str,
    locals_log: LocalsLog | None = None,
) -> tuple[Staged, list[Any], Plan]:
    """The staged call, its input leaves and the plan of its program; with
    ``locals_log``, the user's locals are recorded as the function traces (the
    names ``at=`` resolves, as the stepper shows them)."""
    nums, names = statics
    with record_locals(locals_log) if locals_log is not None else nullcontext():
        staged_call = stage(
            fun,
            args,
            kwargs,
            static_argnums=nums,
            static_argnames=names,
            api_name=api_name,
            fresh=locals_log is not None,
        )
    leaves = jax.tree_util.tree_leaves(staged_call.inputs)
    for leaf in leaves:
        if isinstance(leaf, jax.ShapeDtypeStruct):
            raise InvalidCallError(
                f"{api_name} runs the program, so it needs concrete values, not a "
                "ShapeDtypeStruct; pass arrays"
            )
    jaxpr, consts = _cj.open_jaxpr(staged_call.traced.jaxpr)
    if len(leaves) != len(jaxpr.invars):
        raise InvalidCallError(
            f"{api_name} could not match the arguments of {qualname(fun)} to its "
            f"{len(jaxpr.invars)} traced inputs ({len(leaves)} values); pass static "
            f"arguments with {api_name}(f, static_argnums=...)"
        )
    program = Program(loc_of_function(fun), staged_call.input_names)
    return staged_call, leaves, Plan(jaxpr, consts, program)


def run_compiled(
    top: Plan,
    leaves: list[Any],
    rewriter: Rewriter,
    finish: Callable[[Entries], Any],
) -> tuple[list[Any], Any, float, float]:
    """The program of ``top`` with ``rewriter``'s entries (shaped by ``finish``),
    compiled and run once: ``(outputs, finished entries, compile s, run s)``."""

    def program(*flat: Any) -> tuple[list[Any], Any]:
        outs, entries = rewriter.run(top, flat)
        return outs, finish(entries)

    start = time.perf_counter()
    compiled = jax.jit(program).lower(*leaves).compile()
    compiled_at = time.perf_counter()
    outs, extra = compiled(*leaves)
    jax.block_until_ready((outs, extra))
    return outs, extra, compiled_at - start, time.perf_counter() - compiled_at


def enclosing(node: Node) -> list[Node]:
    """The equations holding ``node``'s plan, outermost first."""
    chain: list[Node] = []
    call = node.plan.call
    while call is not None:
        chain.append(call)
        call = call.plan.call
    return chain[::-1]


def _axes(target: Target, loops: str) -> tuple[list[str], list[int]]:
    """The value's leading axes (described), and which of them ``loops="last"``
    reduces (their positions) with the index of the last iteration (``-1`` or 0)."""
    names: list[str] = []
    last: list[int] = []
    for outer in enclosing(target.node):
        where = f" at {_loc(outer)}" if outer.info.source is not None else ""
        if outer.primitive == "scan":
            length = _cj.scan_length(outer.eqn)
            if loops == "last":
                reverse = bool(outer.eqn.params.get("reverse", False))
                last.append(0 if reverse else -1)
                names.append(f"last scan iteration{where}")
            else:
                last.append(1)  # kept
                names.append(f"scan iteration{where} ({length})")
        elif outer.primitive == "while":
            names.append(f"last while iteration{where}")
            last.append(2)  # no axis
        elif outer.primitive == "shard_map":
            mesh = ",".join(f"{a}={n}" for a, n in _cp.shard_map_axes(outer.eqn))
            names.append(f"device ({mesh})")
            last.append(1)
    return names, last


def _loc(node: Node) -> str:
    src = node.info.source
    return short_loc(src) if src is not None else "?"


def _finish_value(value: Any, plan: list[int]) -> Any:
    """Reduce the scan axes ``loops="last"`` drops (see ``_axes``)."""
    axis = 0
    for code in plan:
        if code == 2:
            continue
        if code == 1:
            axis += 1
            continue
        value = jnp.take(value, code, axis=axis)
    return value


def _device_summaries(name: str, value: Any) -> tuple[tuple[str, ValueSummary], ...]:
    shards = getattr(value, "addressable_shards", None)
    sharding = getattr(value, "sharding", None)
    if not shards or len(shards) < 2 or sharding is None:
        return ()
    if getattr(sharding, "is_fully_replicated", False):
        return ()
    return tuple(
        (
            f"{shard.device} {_index_text(shard.index)}",
            summarize_value(name, shard.data),
        )
        for shard in shards
    )


def _index_text(index: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for s in index:
        if isinstance(s, slice):
            start = "" if s.start is None else str(s.start)
            stop = "" if s.stop is None else str(s.stop)
            parts.append(f"{start}:{stop}")
        else:
            parts.append(str(s))
    return f"[{', '.join(parts)}]"


def _per_device_axis(
    name: str, value: Any, axes: list[str]
) -> tuple[tuple[str, ValueSummary], ...]:
    """Per-device summaries of a value whose leading axis is a ``shard_map``'s devices."""
    if not axes or not axes[0].startswith("device ("):
        return _device_summaries(name, value)
    host = np.asarray(jax.device_get(value))
    return tuple(
        (f"device {k}", summarize_value(name, host[k])) for k in range(host.shape[0])
    )


def _probe(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    at: Sequence[Any],
    loops: str,
    statics: tuple[tuple[Any, ...], tuple[Any, ...]],
) -> ProbeView:
    api = "js.probe"
    log = LocalsLog() if needs_names(at) else None
    staged_call, leaves, top = stage_program(fun, args, kwargs, statics, api, log)
    targets = Selector(top, log).resolve(at, api)
    selected = {t.node.path for t in targets}
    wanted: dict[tuple[int, ...], list[int]] = {}
    for t in targets:
        wanted.setdefault(t.node.path, []).append(t.out)

    def record(node: Node, invals: list[Any], outs: list[Any]) -> Entries:
        return {path_key(node.path, str(j)): outs[j] for j in wanted[node.path]}

    plans = {t.label: _axes(t, loops) for t in targets}

    def finish(entries: Entries) -> dict[str, Any]:
        return {
            t.label: _finish_value(
                entries[path_key(t.node.path, str(t.out))], plans[t.label][1]
            )
            for t in targets
        }

    outs, arrays, compile_s, run_s = run_compiled(
        top, leaves, Rewriter(selected, record, "stack"), finish
    )
    result = jax.tree_util.tree_unflatten(staged_call.traced.out_tree, outs)
    values: list[ProbeValue] = []
    ordered: dict[str, Any] = {}
    for t in targets:
        value = arrays[t.label]
        ordered[t.label] = value
        described = list(zip(*plans[t.label], strict=True))
        axes = [a for a, code in described if code == 1]
        reduced = [a for a, code in described if code != 1]
        values.append(
            ProbeValue(
                name=t.label,
                source=t.info.source,
                primitive=t.info.primitive,
                path=t.info.path,
                phase=phase(t.info),
                axes=tuple(axes),
                reduced=tuple(reduced),
                summary=summarize_value(t.label, value),
                devices=_per_device_axis(t.label, value, axes),
            )
        )
    name = qualname(fun).rsplit("<locals>.", 1)[-1]
    return ProbeView(
        values,
        ordered,
        result,
        Compiled(function_name=name, compile_seconds=compile_s, run_seconds=run_s),
    )


@takes_the_function_alone
def probe(
    fun: Callable[..., Any],
    *,
    at: Any,
    loops: str = "stack",
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., ProbeView]:
    """Run ``fun`` compiled once, with chosen intermediates added as outputs.

    The values are those of the real compiled program (XLA's numerics, fusions and
    shardings), read from a separate compilation: ``fun``, JAX's caches of it and
    the config are untouched.

    Args:
        fun: the function (``jax.jit``, ``nnx.jit``, ``eqx.filter_jit`` ones too).
        at: what to read, one spec or a list: a variable name the source assigns
            (``"logits"``), a line (``"model.py:42"``, ``"In [3]:4"``, ``42``), a
            named scope (``"encoder"``), or a callable taking an ``EqnInfo`` and
            returning True for the equations whose outputs to read.
        loops: inside a ``scan``, ``"stack"`` (one row per iteration) or
            ``"last"`` (the last iteration's value); inside a ``while`` loop the
            value is the last iteration's.
        static_argnums: positional arguments passed as Python values.
        static_argnames: keyword arguments passed as Python values.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> def f(x):
        ...     h = jnp.sin(x) * 2
        ...     return h.sum()
        >>> v = js.probe(f, at=["h"])(jnp.zeros(3))
        >>> v["h"].tolist()
        [0.0, 0.0, 0.0]
    """
    if loops not in _LOOPS:
        raise InvalidCallError(
            f"js.probe: loops must be 'stack' or 'last', got {short_repr(loops, 40)}; "
            "write e.g. js.probe(f, at=['h'], loops='last')"
        )
    specs: list[Any] = list(at) if isinstance(at, (list, tuple)) else [at]
    if not specs:
        raise InvalidCallError(
            "js.probe: at= names nothing; write e.g. js.probe(f, at=['logits'])"
        )
    statics = static_args(static_argnums, static_argnames, "js.probe")

    def build(
        fn: Callable[..., Any], a: tuple[Any, ...], k: dict[str, Any]
    ) -> ProbeView:
        return _probe(fn, a, k, at=specs, loops=loops, statics=statics)

    return staged(fun, "js.probe", build)
