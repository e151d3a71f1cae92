"""``shardings(f)(*args)``: what one compiled program does across devices.

Compiles (never runs) ``f`` and reads three things:
- the input/output shardings of the compiled executable;
- the sharding of every op after XLA's sharding propagation, taken from the module
  XLA hands to its SPMD partitioner (dumped for this one compile with the
  ``xla_dump_to`` / ``xla_dump_hlo_pass_re`` compiler options; the final optimized
  HLO no longer carries per-op shardings);
- every collective in the optimized, partitioned HLO (``Compiled.as_text()``), with
  the bytes it handles per device, its replica groups, the mesh axes they span and the
  user's source line (from the HLO ``StackFrames`` metadata tables).
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import jax

from jaxscope._checks import takes_the_function_alone
from jaxscope._display import Renderable, printable
from jaxscope._exceptions import InvalidCallError, ShardingValueError
from jaxscope._format import plural, short_dtype
from jaxscope._hlo.parse import module_devices
from jaxscope._records import SourceLoc
from jaxscope._sharding.collectives import (
    COLLECTIVE_KINDS,
    Collective,
    LineSummary,
    line_summary,
    parse_collectives,
)
from jaxscope._sharding.mesh import (
    MeshGrid,
    local_shape,
    mesh_grid,
    sharding_text,
    spec_of_hlo_sharding,
)
from jaxscope._sharding.ops import (
    BOOKKEEPING_OPCODES,
    OpSharding,
    parse_module_ops,
)
from jaxscope._sharding.replication import (
    ProgramInput,
    ReplicationFinding,
    replication_findings,
)
from jaxscope._sharding.why import collective_reasons
from jaxscope._staging import (
    compile_dumping,
    first_line,
    function_name,
    param_names,
    stage,
    staged,
    static_args,
    trace_error,
)
from jaxscope.compat import jaxpr as _cjaxpr
from jaxscope.compat import libraries as _clib

_PROPAGATED = "after sharding propagation"


class _HasSource(Protocol):
    @property
    def source(self) -> SourceLoc | None: ...


_S = TypeVar("_S", bound=_HasSource)


def _by_line(items: Iterable[_S]) -> dict[tuple[str, int], list[_S]]:
    out: dict[tuple[str, int], list[_S]] = {}
    for item in items:
        if item.source is not None:
            out.setdefault(item.source.key, []).append(item)
    return out


@dataclass(slots=True, kw_only=True, eq=False, repr=False)
class ProgramShardingView(Renderable):
    """What one compiled program does across devices.

    Attributes:
        inputs, outputs: ``[(path in the user's names, spec string), ...]``.
        ops: ``OpSharding`` of every op after XLA's sharding propagation.
        collectives: every ``Collective`` in the optimized, partitioned HLO.
        by_line: ``{(file, line): [Collective, ...]}``.
        ops_by_line: ``{(file, line): [OpSharding, ...]}``.
        line_summary: one ``LineSummary`` per source line (heaviest first).
        mesh: ``{axis: size}`` of the program's mesh, or None.
        device_ids: the physical device id of each logical id (the ids in
            ``Collective.replica_groups``), in mesh order; None without a mesh.
        hlo_text: the optimized HLO (``Compiled.as_text()``).
        num_devices: the number of devices the program runs on.
        replication: the large inputs held whole on every device of a mesh axis
            that could split them (``ReplicationFinding``), largest first.
        show_all: whether the views list bookkeeping ops (copies, parameters,
            tuples) too; they are folded into a count otherwise (``ops`` always
            has every op).
    """

    function_name: str
    inputs: list[tuple[str, str]]
    outputs: list[tuple[str, str]]
    ops: list[OpSharding]
    collectives: list[Collective]
    mesh: dict[str, int] | None
    hlo_text: str
    num_devices: int
    ops_stage: str = ""
    device_ids: tuple[int, ...] | None = None
    show_all: bool = False
    replication: list[ReplicationFinding] = dataclasses.field(
        default_factory=lambda: list[ReplicationFinding]()
    )

    @property
    def by_line(self) -> dict[tuple[str, int], list[Collective]]:
        return _by_line(self.collectives)

    @property
    def collective_bytes(self) -> int:
        """Bytes per device all collectives handle per call (loop runs counted)."""
        return sum(c.total_bytes for c in self.collectives)

    @property
    def ops_by_line(self) -> dict[tuple[str, int], list[OpSharding]]:
        """``{(file, line): [OpSharding, ...]}``: the ops each source line produced."""
        return _by_line(self.ops)

    @property
    def shown_ops(self) -> list[OpSharding]:
        """The ops the views list: all with ``show_all``, else the computing ones."""
        if self.show_all:
            return self.ops
        return [op for op in self.ops if op.opcode not in BOOKKEEPING_OPCODES]

    @property
    def folded_ops(self) -> dict[str, int]:
        """``{opcode: count}`` of the bookkeeping ops the views fold (empty with
        ``show_all``), most frequent first."""
        if self.show_all:
            return {}
        counts: dict[str, int] = {}
        for op in self.ops:
            if op.opcode in BOOKKEEPING_OPCODES:
                counts[op.opcode] = counts.get(op.opcode, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def line_summary(self) -> list[LineSummary]:
        return line_summary(self.collectives)

    @property
    def by_axis(self) -> dict[tuple[str, ...], list[Collective]]:
        """``{mesh axes: [Collective, ...]}``: the collectives grouped by the mesh
        axes they run over (``()`` where the groups match no axis of the mesh)."""
        out: dict[tuple[str, ...], list[Collective]] = {}
        for c in self.collectives:
            out.setdefault(tuple(c.axes or ()), []).append(c)
        return out

    def local_shape(self, op: OpSharding) -> str:
        """The shape of ``op``'s result on one device (``f32[16,32]``), from its spec
        over the mesh; its global shape where the spec is not in mesh terms."""
        return local_shape(op.shape, op.spec, self.mesh)

    @property
    def mesh_grid(self) -> MeshGrid | None:
        """The program's mesh as a table of device ids with axis labels, or None."""
        return mesh_grid(self.mesh, self.device_ids)

    def summary(self) -> str:
        """One line per source line: ``"line In [3]:42: 2 all-gathers, 48 MiB"``."""
        return "\n".join(r.text for r in self.line_summary)

    def count(self, kind: str) -> int:
        """How many collectives of ``kind`` (e.g. ``"all-reduce"``) the program has."""
        if kind not in COLLECTIVE_KINDS:
            raise ShardingValueError(
                f"kind={kind!r} is not a collective kind; use one of "
                + ", ".join(COLLECTIVE_KINDS)
            )
        return sum(1 for c in self.collectives if c.kind == kind)

    def __repr__(self) -> str:
        name = printable(self.function_name)
        return (
            f"<ProgramShardingView of {name}: {plural(len(self.ops), 'op')}, "
            f"{plural(len(self.collectives), 'collective')}>"
        )


# ------------------------------------------------------------------ compiling


def _compile_with_dump(lowered: Any) -> tuple[Any, str, str]:
    """Compile ``lowered``; return (compiled, pre-partitioning HLO text, its stage)."""
    options = {
        "xla_dump_hlo_pass_re": "spmd-partitioning",
        "xla_dump_hlo_as_text": True,
    }
    compiled, dumped = compile_dumping(
        lowered, options, _read_partitioning_dump, prefix="jaxscope-sharding-"
    )
    if dumped is not None:
        return compiled, *dumped
    try:
        text = lowered.as_text(dialect="hlo", debug_info=True)
    except TypeError:
        text = lowered.as_text(dialect="hlo")
    return compiled, text, "before optimizations"


def _read_partitioning_dump(folder: str, compiled: Any) -> tuple[str, str] | None:
    """The HLO XLA dumped before SPMD partitioning (or before its passes) with that
    stage's name; None when XLA ran no passes (a persistent-cache hit)."""
    for pattern, stage_name in (
        ("*before_spmd-partitioning.txt", _PROPAGATED),
        ("*before_optimizations.txt", "before optimizations"),
    ):
        found = sorted(glob.glob(os.path.join(folder, pattern)))
        if found:
            with open(found[-1], encoding="utf-8") as fh:
                return fh.read(), stage_name
    return None


def _lower(
    fn: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    nums: tuple[int, ...],
    names: tuple[str, ...],
) -> tuple[Any, tuple[str, ...]]:
    """``fn`` traced and lowered on the example arguments, and the user's name of each
    input where known (pmap lowers directly; the own ``lower`` of
    ``eqx.filter_jit`` and ``eqx.filter_pmap`` returns Equinox's object, so they
    are traced)."""
    pmap_like = hasattr(fn, "lower") and not hasattr(fn, "trace")
    equinox = _clib.is_equinox_filter_jit(fn) or _clib.is_equinox_filter_pmap(fn)
    if pmap_like and not equinox:
        try:
            return fn.lower(*args, **kwargs), ()
        except Exception as exc:
            raise trace_error(fn, exc, "js.shardings") from exc
    staged = stage(
        fn,
        args,
        kwargs,
        static_argnums=nums,
        static_argnames=names,
        api_name="js.shardings",
    )
    try:
        lowered = staged.traced.lower()
    except Exception as exc:
        raise trace_error(fn, exc, "js.shardings") from exc
    return lowered, staged.input_names


# ------------------------------------------------------------------ input and output specs


def _program_mesh(
    compiled: Any,
) -> tuple[dict[str, int] | None, tuple[int, ...] | None]:
    """The program's one mesh as ``{axis: size}`` and its device ids, or Nones."""
    shardings = jax.tree_util.tree_leaves(
        (compiled.input_shardings, compiled.output_shardings),
        is_leaf=lambda s: isinstance(s, jax.sharding.Sharding),
    )
    meshes = {
        (
            tuple(dict(s.mesh.shape).items()),
            tuple(int(d.id) for d in s.mesh.devices.flat),
        )
        for s in shardings
        if isinstance(s, jax.sharding.NamedSharding)
        and isinstance(s.mesh, jax.sharding.Mesh)
    }
    if len(meshes) == 1:
        items, ids = next(iter(meshes))
        return dict(items), ids
    return None, None


_GSPMD = re.compile(r"^GSPMDSharding\((\{.*\})")


def _as_spec(sharding: Any, mesh: dict[str, int] | None) -> str:
    """A sharding's text; ``GSPMDSharding({devices=[8,1]<=[8]}, ...)`` in mesh
    terms where it maps onto ``mesh``."""
    text = sharding_text(sharding)
    match = _GSPMD.match(text)
    if match is None:
        return text
    mapped = spec_of_hlo_sharding(match.group(1), mesh)
    if mapped == "replicated":
        return "P()"
    return mapped if mapped is not None and mapped.startswith("P(") else text


def _specs_with_paths(
    tree: Any, prefix: str, mesh: dict[str, int] | None, *, nones: bool = True
) -> list[tuple[str, str]]:
    """``(path, spec)`` of each sharding in ``tree``; with ``nones=False`` the None
    leaves are left out (an Equinox step's non-array outputs: no program output)."""
    leaves = jax.tree_util.tree_flatten_with_path(
        tree, is_leaf=lambda s: isinstance(s, jax.sharding.Sharding) or s is None
    )[0]
    return [
        (prefix + jax.tree_util.keystr(p), _as_spec(s, mesh))
        for p, s in leaves
        if nones or s is not None
    ]


def _static_positions(fn: Any, static_argnums: Sequence[int], n_args: int) -> set[int]:
    """Positions of static arguments: the ones given here and ``jax.jit``'s own."""
    own = _cjaxpr.jit_static_args(fn) or ((), ())
    return {i % n_args if i < 0 and n_args else i for i in (*static_argnums, *own[0])}


def _input_specs(
    fn: Any,
    compiled: Any,
    nums: tuple[int, ...],
    n_args: int,
    mesh: dict[str, int] | None,
    input_names: tuple[str, ...] = (),
) -> list[tuple[str, str]]:
    """Each input leaf's sharding, named by the parameter it is passed as (or by
    the user's names staging read: NNX state paths, Equinox field paths)."""
    if input_names:
        leaves = jax.tree_util.tree_leaves(
            compiled.input_shardings,
            is_leaf=lambda s: isinstance(s, jax.sharding.Sharding),
        )
        if len(leaves) == len(input_names):
            return [
                (name, _as_spec(leaf, mesh))
                for name, leaf in zip(input_names, leaves, strict=True)
            ]
    names = param_names(fn)
    statics = _static_positions(fn, nums, n_args)
    dynamic = [i for i in range(n_args) if i not in statics]
    in_args, in_kwargs = compiled.input_shardings
    inputs: list[tuple[str, str]] = []
    for k, tree in enumerate(in_args):
        pos = dynamic[k] if k < len(dynamic) else k
        name = names[pos] if pos < len(names) else f"args[{pos}]"
        inputs.extend(_specs_with_paths(tree, name, mesh))
    for key, tree in sorted(in_kwargs.items()):
        inputs.extend(_specs_with_paths(tree, str(key), mesh))
    return inputs


def _nnx_outputs(
    compiled: Any, input_names: tuple[str, ...], mesh: dict[str, int] | None
) -> list[tuple[str, str]]:
    """An ``nnx.jit`` step's outputs in the user's names: its pure function returns
    the arguments' states where they were passed (the same tree position as the
    input: ``model.w1``) and the result last (``out``). Empty when the trees do not
    line up."""
    is_leaf = lambda s: isinstance(s, jax.sharding.Sharding) or s is None  # noqa: E731
    ins = jax.tree_util.tree_flatten_with_path(compiled.input_shardings, is_leaf)[0]
    outs = jax.tree_util.tree_flatten_with_path(compiled.output_shardings, is_leaf)[0]
    if len(ins) != len(input_names) or not outs:
        return []
    named = {
        jax.tree_util.keystr(path[1:]): name
        for (path, _), name in zip(ins, input_names, strict=True)
        if path and jax.tree_util.keystr(path[:1]) == "[0]"
    }
    last = outs[-1][0][:1]
    out: list[tuple[str, str]] = []
    for path, sharding in outs:
        if sharding is None:
            continue
        head, rest = jax.tree_util.keystr(path[:1]), jax.tree_util.keystr(path[1:])
        if head == "[0]" and rest in named:
            out.append((f"{named[rest]} (updated)", _as_spec(sharding, mesh)))
        elif path[:1] == last:
            out.append(("out" + rest, _as_spec(sharding, mesh)))
        else:
            return []
    return out


def _typed_inputs(compiled: Any, inputs: list[tuple[str, str]]) -> list[ProgramInput]:
    """``inputs`` with their shapes and dtypes (none when the counts differ)."""
    try:
        infos = jax.tree_util.tree_leaves(compiled.args_info)
    except Exception:
        return []
    if len(infos) != len(inputs):
        return []
    out: list[ProgramInput] = []
    for (name, spec), info in zip(inputs, infos, strict=True):
        shape = getattr(info, "shape", None)
        dtype = getattr(info, "dtype", None)
        if shape is None or dtype is None:
            continue
        out.append(
            ProgramInput(
                name=name,
                dtype=short_dtype(dtype),
                shape=tuple(int(d) for d in shape),
                itemsize=int(getattr(dtype, "itemsize", 4)),
                spec=spec,
            )
        )
    return out


# ------------------------------------------------------------------ the transform


def program_shardings(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    show_all: bool = False,
) -> ProgramShardingView:
    """Build the ``ProgramShardingView`` of ``fn(*args, **kwargs)`` (compiled, not run)."""
    nums, names = static_args(static_argnums, static_argnames, "js.shardings")
    lowered, input_names = _lower(fn, args, kwargs, nums, names)
    try:
        compiled, pre_text, stage = _compile_with_dump(lowered)
    except Exception as exc:
        raise InvalidCallError(
            f"XLA could not compile {function_name(fn)}: "
            f"{first_line(str(exc)) or type(exc).__name__}"
        ) from None
    mesh, device_ids = _program_mesh(compiled)
    text = compiled.as_text()
    inputs = _input_specs(fn, compiled, nums, len(args), mesh, input_names)
    outputs = _specs_with_paths(compiled.output_shardings, "out", mesh, nones=False)
    if input_names and _clib.is_nnx_jit(fn):
        outputs = _nnx_outputs(compiled, input_names, mesh) or outputs
    raw_files: dict[str, str] = {}
    module = parse_module_ops(pre_text, mesh, raw_files)
    ops = [op for op in module if op.sharding]
    collectives = parse_collectives(text, mesh=mesh)
    if stage == _PROPAGATED:
        collectives = [
            dataclasses.replace(c, reason=r)
            for c, r in zip(
                collectives,
                collective_reasons(collectives, module, mesh, raw_files),
                strict=True,
            )
        ]
    return ProgramShardingView(
        function_name=function_name(fn),
        inputs=inputs,
        outputs=outputs,
        replication=replication_findings(
            _typed_inputs(compiled, inputs), module, [s for _, s in outputs], mesh
        ),
        ops=ops,
        collectives=collectives,
        mesh=mesh,
        hlo_text=text,
        num_devices=module_devices(text),
        ops_stage=stage,
        device_ids=device_ids,
        show_all=show_all,
    )


@takes_the_function_alone
def shardings(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    all: bool = False,
) -> Callable[..., ProgramShardingView]:
    """Compile ``fun`` on example arguments; show its shardings and collectives.

    The function is traced, lowered and compiled, never run. Works for ``jax.jit``
    (with ``in_shardings``/``out_shardings``), ``with_sharding_constraint``,
    ``device_put``-sharded arguments, ``shard_map`` and ``pmap``. Bookkeeping ops
    (copies, parameters, tuples) are folded into a count; ``all=True`` lists them.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> p = js.shardings(lambda x: x * 2)(jnp.ones(4))
        >>> p.collectives
        []
    """
    if not isinstance(all, bool):
        raise InvalidCallError(f"all={all!r} must be True or False")
    build = functools.partial(
        program_shardings,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        show_all=all,
    )
    return staged(fun, "js.shardings", build)
