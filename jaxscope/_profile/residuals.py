# pyright: strict
"""``js.residuals(f)(*args)``: the values a differentiated program saves for its
backward pass, by the user's line, and what ``jax.checkpoint`` recomputes instead.

Read from the program's jaxpr (``_jaxpr.builder``'s plain records), the way JAX's
own ``jax.ad_checkpoint.print_saved_residuals`` reads the jaxpr of a ``vjp``: a
residual is a value the backward pass (equations under JAX's ``transpose`` name
stack) reads that the forward pass (under ``jvp``) computed, or an argument. Unlike
``print_saved_residuals``, the function may take its gradient inside (a train step:
``jax.grad`` / ``value_and_grad`` / ``vjp`` under ``jit``, Flax, Equinox). Under
``jax.checkpoint`` (``nnx.remat``, ``eqx.filter_checkpoint``) the backward pass is
a ``remat`` equation whose ``policy`` decided what was saved; the forward values it
computes again are under its ``rematted_computation`` scope. The compiled program
(``js.memory``) says which residual bytes are live at the memory peak.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jaxscope._checks import takes_the_function_alone
from jaxscope._display import Renderable, printable
from jaxscope._format import plural
from jaxscope._jaxpr.builder import build_model
from jaxscope._jaxpr.records import JaxprModel, Region
from jaxscope._profile.compiling import lower
from jaxscope._profile.records import MemoryFinding
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._staging import function_name, stage, staged
from jaxscope.compat import jaxpr as _cj

_ARRAY = re.compile(r"^([a-z]\w*?)(\d*)(?:_\w+)?\[([^\]]*)\]")
_POLICY_FUNCTION = re.compile(r"<function ([\w]+)")
_NAMES = re.compile(r"\{([^}]*)\}")
# dimension_numbers=(((1,), (0,)), ((), ())): the lhs contracting dimensions first
_DIMS = re.compile(r"^\(\(\(([\d, ]*)\),")
_REMAT = _cj.REMAT_PRIMITIVES
#: the share of the memory peak a scan's stacked residuals must hold to be named
STACKED_SHARE = 0.5
_RECOMPUTE_SCOPE = ("scope", "rematted_computation")
_FORWARD_TRANSFORMS = frozenset({"jvp", "linearize"})


def aval_bytes(aval: str) -> int:
    """The bytes of a jaxpr aval ``f32[4,8]`` (``bool[3]``: 1 byte an element)."""
    match = _ARRAY.match(aval)
    if match is None:
        return 0
    kind, bits, dims = match.groups()
    size = 1 if kind == "bool" or not bits else max(1, int(bits) // 8)
    return size * math.prod(int(d) for d in dims.split(",") if d.strip().isdigit())


def policy_name(policy: str | None) -> str:
    """A checkpoint policy as the user wrote it: ``dots_saveable``,
    ``save_only_these_names('h')``; ``None`` (``jax.checkpoint``'s default) is
    ``nothing_saveable``, which saves only the function's arguments."""
    if policy is None or policy in ("", "None"):
        return "nothing_saveable"
    function = _POLICY_FUNCTION.match(policy)
    if function is not None:
        return function.group(1)
    if policy.startswith("DotsSaveable"):
        batch = "only_if_no_batch_dims=True" in policy
        return "dots_with_no_batch_dims_saveable" if batch else "dots_saveable"
    head = policy.split("(", 1)[0]
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", head).lower()
    names = _NAMES.search(policy)
    if names is not None:
        inner = ", ".join(sorted(n.strip() for n in names.group(1).split(",")))
        return f"{snake}({inner})"
    return snake


def _transforms(info: EqnInfo) -> list[str]:
    return [name for kind, name in info.name_stack if kind == "transform"]


def is_backward(info: EqnInfo) -> bool:
    """An equation of a backward pass: under JAX's ``transpose`` name stack."""
    return "transpose" in _transforms(info)


def is_forward(info: EqnInfo) -> bool:
    """An equation of a differentiated forward pass (``jvp``, not ``transpose``)."""
    transforms = _transforms(info)
    return "transpose" not in transforms and any(
        t in _FORWARD_TRANSFORMS for t in transforms
    )


def _flops(info: EqnInfo) -> float:
    """An estimate of one equation's flops: ``2·M·N·K`` for ``dot_general``, one per
    output element otherwise (nested equations are counted on their own)."""
    out = sum(math.prod(_dims(a)) for _, a in info.outputs)
    if info.primitive != "dot_general" or not info.inputs:
        return float(out)
    lhs = _dims(info.inputs[0][1])
    numbers = _DIMS.search(info.params.get("dimension_numbers", ""))
    if numbers is None:
        return 2.0 * out
    contracting = [int(d) for d in numbers.group(1).split(",") if d.strip()]
    k = math.prod(lhs[d] for d in contracting if d < len(lhs))
    return 2.0 * out * k


def _dims(aval: str) -> list[int]:
    match = _ARRAY.match(aval)
    if match is None:
        return []
    return [int(d) for d in match.group(3).split(",") if d.strip().isdigit()]


@dataclass(frozen=True, slots=True, kw_only=True)
class Residual:
    """One value saved for the backward pass.

    ``shape`` is its aval (``f32[64,32]``), ``bytes`` its size. ``source`` is the
    user's line that computes it (for a residual stacked by a ``scan``, the line
    in the loop body); ``origin`` the line JAX's ``print_saved_residuals`` names
    (the innermost frame outside JAX, a library's included). ``what`` says what
    it is as JAX words it: ``output of tanh``, ``named 'h'``, ``output of jitted
    function 'take_along_axis'``, ``the argument x``. ``argument`` and ``name``
    (its ``checkpoint_name``) where it has one. ``policy`` names the checkpoint
    policy that saved it, None outside ``jax.checkpoint``.
    """

    var: str
    shape: str
    bytes: int
    source: SourceLoc | None
    origin: SourceLoc | None
    what: str
    primitive: str = ""
    argument: str | None = None
    name: str | None = None
    policy: str | None = None
    stacked: bool = False

    def describe(self) -> str:
        """The row as ``print_saved_residuals`` prints it."""
        where = self.origin or self.source
        at = f" from {where.file}:{where.line}" if where is not None else ""
        if self.argument is not None:
            return f"{self.shape} from the argument {self.argument}"
        return f"{self.shape} {self.what}{at}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Recomputed:
    """A forward equation ``jax.checkpoint`` computes again in the backward pass
    (its ``policy`` did not save the value)."""

    primitive: str
    shape: str
    source: SourceLoc | None
    flops: float
    policy: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ResidualLine:
    """One user line: its residuals (``bytes`` in all), what checkpointing
    recomputes there (``recomputed`` equations, ``recompute_flops``), the
    ``policies`` that decided, and ``peak_bytes``: its residual bytes live at the
    compiled program's memory peak (None when it was not compiled)."""

    file: str
    line: int
    function: str | None
    code: str
    residuals: tuple[Residual, ...]
    bytes: int
    recomputed: int
    recompute_flops: float
    policies: tuple[str, ...]
    peak_bytes: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.file, self.line)


class _Finder:
    """Walks a ``JaxprModel``: the residuals and recomputed equations of every
    region where a gradient is taken."""

    def __init__(self, model: JaxprModel) -> None:
        self.model = model
        self.residuals: list[Residual] = []
        self.recomputed: list[Recomputed] = []
        self._seen: set[str] = set()

    def run(self) -> None:
        self._region(self.model.top, top=True)

    def _region(self, region: Region, top: bool = False) -> None:
        producers: dict[str, tuple[int, EqnInfo]] = {}
        for index, info in enumerate(region.eqns):
            for name, _ in info.outputs:
                producers[name] = (index, info)
        invars = {name: i for i, (name, _) in enumerate(region.invars)}
        for index, info in enumerate(region.eqns):
            if is_backward(info):
                policy = (
                    policy_name(info.params.get("policy"))
                    if info.primitive in _REMAT
                    else None
                )
                for name, aval in info.inputs:
                    self._read(region, producers, invars, name, aval, policy, top)
                if info.primitive in _REMAT:
                    for kid in region.children.get(index, []):
                        self._recomputed(kid, policy or "nothing_saveable")
                continue
            for kid in region.children.get(index, []):
                self._region(kid)

    def _read(
        self,
        region: Region,
        producers: dict[str, tuple[int, EqnInfo]],
        invars: dict[str, int],
        name: str,
        aval: str,
        policy: str | None,
        top: bool,
    ) -> None:
        found = producers.get(name)
        # JAX saves a named value through a reduce_precision; it looks through it
        while found is not None and found[1].primitive == "reduce_precision":
            name, aval = found[1].inputs[0]
            found = producers.get(name)
        if name in self._seen:
            return
        if found is None:
            if name not in invars:
                return  # a literal, or a constant of the region
            self._seen.add(name)
            names = self.model.arg_names
            position = invars[name]
            argument = (
                names[position]
                if top and names is not None and position < len(names)
                else name
            )
            self.residuals.append(
                Residual(
                    var=name,
                    shape=aval,
                    bytes=aval_bytes(aval),
                    source=None,
                    origin=None,
                    what=f"the argument {argument}",
                    argument=argument,
                    policy=policy,
                )
            )
            return
        index, info = found
        if not is_forward(info):
            return  # computed by the backward pass itself (a cotangent)
        self._seen.add(name)
        source, stacked = info.source, False
        inner = self._inner_source(region, index, info, name)
        if inner is not None:
            source, stacked = inner, info.primitive == "scan"
        label = info.params.get("name")
        if info.primitive == "name":
            what = f"named '{label}'"
        elif info.primitive in ("jit", "pjit") and label:
            what = f"output of jitted function '{label}'"
        else:
            what = f"output of {info.primitive}"
        self.residuals.append(
            Residual(
                var=name,
                shape=aval,
                bytes=aval_bytes(aval),
                source=source,
                origin=info.frames[0] if info.frames else info.source,
                what=what,
                primitive=info.primitive,
                name=label if info.primitive == "name" else None,
                policy=policy,
                stacked=stacked,
            )
        )

    def _inner_source(
        self, region: Region, index: int, info: EqnInfo, name: str
    ) -> SourceLoc | None:
        """For an output of a ``scan`` (a residual stacked over its iterations),
        the line in the loop body that computes it."""
        if info.primitive != "scan":
            return None
        kids = region.children.get(index, [])
        if len(kids) != 1 or len(kids[0].outvars) != len(info.outputs):
            return None
        position = [n for n, _ in info.outputs].index(name)
        inner_name = kids[0].outvars[position][0]
        for eqn in kids[0].eqns:
            if any(n == inner_name for n, _ in eqn.outputs):
                return eqn.source
        return None

    def _recomputed(self, region: Region, policy: str) -> None:
        for index, info in enumerate(region.eqns):
            if _RECOMPUTE_SCOPE in info.name_stack:
                self.recomputed.append(
                    Recomputed(
                        primitive=info.primitive,
                        shape=info.outputs[0][1] if info.outputs else "",
                        source=info.source,
                        flops=_flops(info),
                        policy=policy,
                    )
                )
            for kid in region.children.get(index, []):
                self._recomputed(kid, policy)


def _lines(
    residuals: Sequence[Residual],
    recomputed: Sequence[Recomputed],
    code_of: Callable[[str, int], str],
    peak: dict[tuple[str, int], int] | None,
) -> list[ResidualLine]:
    saved: dict[tuple[str, int], list[Residual]] = {}
    again: dict[tuple[str, int], list[Recomputed]] = {}
    places: dict[tuple[str, int], SourceLoc] = {}
    for r in residuals:
        if r.source is not None:
            saved.setdefault(r.source.key, []).append(r)
            places.setdefault(r.source.key, r.source)
    for c in recomputed:
        if c.source is not None:
            again.setdefault(c.source.key, []).append(c)
            places.setdefault(c.source.key, c.source)
    out: list[ResidualLine] = []
    for key, loc in places.items():
        mine, redo = saved.get(key, []), again.get(key, [])
        policies = {r.policy for r in mine if r.policy} | {c.policy for c in redo}
        out.append(
            ResidualLine(
                file=key[0],
                line=key[1],
                function=loc.function,
                code=code_of(*key),
                residuals=tuple(mine),
                bytes=sum(r.bytes for r in mine),
                recomputed=len(redo),
                recompute_flops=sum(c.flops for c in redo),
                policies=tuple(sorted(policies)),
                peak_bytes=None if peak is None else peak.get(key, 0),
            )
        )
    out.sort(key=lambda m: (-m.bytes, -m.recompute_flops, m.file, m.line))
    return out


def _where(loc: SourceLoc | None) -> str:
    return f" at {loc.file}:{loc.line}" if loc is not None else ""


def policy_findings(model: JaxprModel, policies: Sequence[Any]) -> list[MemoryFinding]:
    """Checkpoint policies that silently do nothing: a ``checkpoint_name`` no
    policy refers to, a policy's name the program never produces, a policy that
    saves everything. ``policies`` are the raw ``policy`` params of the model's
    remat equations, in the model's order (``compat.jaxpr.remat_policies``)."""
    remats = [e for e in model.eqns if e.primitive in _REMAT]
    if len(remats) != len(policies):
        return []
    produced: dict[str, SourceLoc | None] = {}
    for info in model.eqns:
        if info.primitive == "name" and "name" in info.params:
            produced.setdefault(info.params["name"], info.source)
    referred: set[str] = set()
    out: list[MemoryFinding] = []
    reported: set[tuple[str, str]] = set()
    for info, policy in zip(remats, policies, strict=True):
        if _cj.saves_everything(policy):
            if ("all", str(info.source)) not in reported:
                reported.add(("all", str(info.source)))
                out.append(
                    MemoryFinding(
                        kind="checkpoint_saves_everything",
                        message=(
                            f"jax.checkpoint{_where(info.source)} uses "
                            "everything_saveable: it saves every residual, so it "
                            "saves no memory and only adds work"
                        ),
                        fix=(
                            "use a policy that saves less (jax.checkpoint_policies."
                            "dots_saveable, save_only_these_names(...), or the "
                            "default policy=None, which recomputes everything) or "
                            "drop the jax.checkpoint"
                        ),
                        source=info.source,
                    )
                )
            continue
        names = _cj.policy_names(policy)
        if names is None:
            continue
        saved, offloaded = names
        referred |= saved | offloaded
        for name in sorted((saved | offloaded) - set(produced)):
            if (name, str(info.source)) in reported:
                continue
            reported.add((name, str(info.source)))
            known = ", ".join(repr(n) for n in sorted(produced)) or "none"
            what = "offloads" if name in offloaded else "saves"
            out.append(
                MemoryFinding(
                    kind="policy_name_not_produced",
                    message=(
                        f"the checkpoint policy{_where(info.source)} {what} "
                        f"{name!r}, but no checkpoint_name in the program produces "
                        f"{name!r}: nothing is {what[:-1]}d by that name (names "
                        f"produced: {known})"
                    ),
                    fix=(
                        f"name the value inside the checkpointed function: "
                        f"x = checkpoint_name(x, {name!r}) (from "
                        "jax.ad_checkpoint), or put a produced name in the policy"
                    ),
                    source=info.source,
                )
            )
    for name, loc in produced.items():
        if name in referred:
            continue
        out.append(
            MemoryFinding(
                kind="unused_checkpoint_name",
                message=(
                    f"checkpoint_name(..., {name!r}){_where(loc)}: no checkpoint "
                    "policy in the program refers to it, so naming it saves or "
                    "offloads nothing"
                ),
                fix=(
                    "wrap the function in jax.checkpoint(f, policy=jax."
                    f"checkpoint_policies.save_only_these_names({name!r})) (or add "
                    f"{name!r} to the policy it has), or remove the checkpoint_name"
                ),
                source=loc,
            )
        )
    return out


def stacked_findings(
    found: Sequence[Residual], memory: Any, share: float = STACKED_SHARE
) -> list[MemoryFinding]:
    """Residuals a ``scan`` stacks over its iterations (a scan over layers) that
    hold ``share`` of the compiled program's memory peak or more, where its body
    computes values a checkpoint would recompute."""
    if memory is None or not memory.peak_bytes:
        return []
    scans: dict[tuple[str, int], SourceLoc] = {}
    for r in found:
        # stacked: computed by an equation of the body, which a checkpointed body
        # would recompute (its carried inputs stay saved either way)
        if r.primitive == "scan" and r.stacked and r.origin is not None:
            scans.setdefault(r.origin.key, r.origin)
    out: list[MemoryFinding] = []
    for key, loc in scans.items():
        held = sum(
            b.peak_bytes
            for b in memory.buffers
            if b.kind == "residual" and b.source is not None and b.source.key == key
        )
        if held < share * memory.peak_bytes:
            continue
        out.append(
            MemoryFinding(
                kind="stacked_residuals",
                message=(
                    f"the scan at {loc.file}:{loc.line} stacks residuals over its "
                    f"iterations: {held} bytes, "
                    f"{100 * held / memory.peak_bytes:.0f}% of the memory peak"
                ),
                fix=(
                    "checkpoint the scan body so each iteration's values are "
                    "recomputed in the backward pass: jax.lax.scan(jax.checkpoint("
                    "body), ...) (nnx.scan / nn.scan: wrap the layer in nnx.remat / "
                    "nn.remat), with a policy such as dots_saveable to keep the matmuls"
                ),
                source=loc,
                bytes=held,
            )
        )
    return out


class ResidualsView(Renderable):
    """What a differentiated program saves for its backward pass, by user line.

    Attributes:
        residuals: every saved value (``Residual``), largest first; the arguments
            the backward pass reads are among them, as ``print_saved_residuals``
            lists them.
        recomputed: the forward equations ``jax.checkpoint`` computes again.
        lines: ``ResidualLine`` per user line, most bytes first; ``by_line`` keys
            them by ``(file, line)``.
        bytes: the residuals' bytes in all (arguments aside: they are kept anyway).
        recompute_flops: the estimated flops of the recomputed equations.
        memory: the compiled program's ``MemoryView`` (None with ``compile=False``):
            ``ResidualLine.peak_bytes`` comes from its buffers of kind ``residual``.
        findings: ``MemoryFinding`` s: checkpoint policies that silently do
            nothing, a scan's stacked residuals that dominate the peak.
        differentiated: True when the function took no gradient itself and was
            differentiated here with respect to every argument (``jax.vjp``, as
            ``print_saved_residuals`` does).
    """

    def __init__(
        self,
        *,
        residuals: Sequence[Residual],
        recomputed: Sequence[Recomputed],
        model: JaxprModel,
        function_name: str = "",
        memory: Any = None,
        findings: Sequence[MemoryFinding] = (),
        differentiated: bool = False,
    ) -> None:
        self.function_name = function_name
        self.findings = list(findings)
        self.differentiated = differentiated
        self.residuals = sorted(residuals, key=lambda r: (-r.bytes, r.var))
        self.recomputed = list(recomputed)
        self.memory = memory
        self._text = model.source_text
        peak: dict[tuple[str, int], int] | None = None
        if memory is not None:
            peak = {}
            for b in memory.buffers:
                if b.kind == "residual" and b.source is not None:
                    peak[b.source.key] = peak.get(b.source.key, 0) + b.peak_bytes
        self.lines = _lines(self.residuals, self.recomputed, self.code, peak)
        self.by_line = {m.key: m for m in self.lines}
        self.bytes = sum(r.bytes for r in self.residuals if r.argument is None)
        self.recompute_flops = sum(c.flops for c in self.recomputed)
        self.show_top = 20

    def code(self, file: str, line: int) -> str:
        """The source text of ``file:line`` (stripped), or ``""``."""
        return self._text.get((file, line), "").strip()

    @property
    def policies(self) -> tuple[str, ...]:
        """The checkpoint policies that decided something in this program."""
        found = {r.policy for r in self.residuals if r.policy}
        return tuple(sorted(found | {c.policy for c in self.recomputed}))

    def __repr__(self) -> str:
        name = f" of {printable(self.function_name)}" if self.function_name else ""
        return (
            f"<ResidualsView{name}: {plural(len(self.residuals), 'residual')}, "
            f"{self.bytes} bytes>"
        )


def residuals_call(
    fun: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    compile: bool = True,
    api_name: str = "js.residuals",
) -> ResidualsView:
    """Trace ``fun(*args, **kwargs)`` (and compile it, never run it); its residuals.

    A function that takes no gradient itself (a loss) is differentiated here as
    ``print_saved_residuals`` does: ``jax.vjp`` with respect to every argument,
    its cotangent applied, so its residuals are read the same way."""
    options: dict[str, Any] = {
        "static_argnums": static_argnums,
        "static_argnames": static_argnames,
        "api_name": api_name,
    }
    staged_call = stage(fun, args, kwargs, **options)
    model = build_model(staged_call.traced.jaxpr, staged_call.input_names)
    differentiated = False
    if not any(is_backward(e) for e in model.eqns):
        again = _as_vjp(fun, args, kwargs, options)
        if again is not None and any(is_backward(e) for e in again[1].eqns):
            staged_call, model, differentiated = *again, True
    finder = _Finder(model)
    finder.run()
    memory = None
    name = function_name(fun)
    if compile:
        from jaxscope._profile.memory import memory_of_lowered

        memory = memory_of_lowered(
            lower(staged_call.traced), name, staged_call.input_names
        )
    try:
        findings = policy_findings(model, _cj.remat_policies(staged_call.traced.jaxpr))
        findings += stacked_findings(finder.residuals, memory)
    except Exception:  # a finding is extra: its failure never stops the view
        findings = []
    return ResidualsView(
        residuals=finder.residuals,
        recomputed=finder.recomputed,
        model=model,
        function_name=name,
        memory=memory,
        findings=findings,
        differentiated=differentiated,
    )


def _as_vjp(
    fun: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    options: dict[str, Any],
) -> tuple[Any, JaxprModel] | None:
    """``fun`` staged with its backward pass: ``jax.vjp`` over every (dynamic)
    argument, the cotangent of ones applied; None where that cannot be traced
    (an output that is not floating point, say)."""
    import functools

    import jax
    import jax.numpy as jnp

    vjp: Any = getattr(jax, "vjp")  # noqa: B009 (typed Any: JAX's stubs are partial)
    ones_like: Any = getattr(jnp, "ones_like")  # noqa: B009

    @functools.wraps(fun)
    def with_backward(*a: Any, **k: Any) -> Any:
        out, pull = vjp(functools.partial(fun, **k), *a)
        return pull(jax.tree.map(ones_like, out))

    try:
        staged_call = stage(with_backward, args, kwargs, **options)
        return staged_call, build_model(
            staged_call.traced.jaxpr, staged_call.input_names
        )
    except Exception:
        return None


@takes_the_function_alone
def residuals(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    compile: bool = True,
) -> Callable[..., ResidualsView]:
    """The values a differentiated program saves for its backward pass, by line.

    ``js.residuals(train_step)(*args)`` traces ``train_step`` (which takes a
    gradient inside: ``jax.grad``, ``value_and_grad``, ``vjp``, through Flax or
    Equinox) and lists every forward value the backward pass reads, as JAX's
    ``print_saved_residuals`` would for the differentiated function, grouped by
    the user's line; under ``jax.checkpoint`` / ``nnx.remat`` /
    ``eqx.filter_checkpoint`` also what the policy recomputed and its flops. A
    function that takes no gradient (a loss) is differentiated with respect to
    every argument, as ``print_saved_residuals(f, *args)`` does.
    With ``compile=True`` (the default) the program is compiled, never run, and
    each line says how many of its residual bytes are live at the memory peak.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> def loss(w, x):
        ...     return jnp.tanh(x @ w).sum()
        >>> def step(w, x):
        ...     return jax.grad(loss)(w, x)
        >>> view = js.residuals(step, compile=False)(jnp.ones((4, 4)), jnp.ones((2, 4)))
        >>> sorted(r.what for r in view.residuals if r.argument is None)
        ['output of sub', 'output of tanh']
    """
    return staged(
        fun,
        "js.residuals",
        lambda f, args, kwargs: residuals_call(
            f,
            args,
            kwargs,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            compile=compile,
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyMemory:
    """One checkpoint policy of a sweep, compiled (never run): the memory peak,
    the residual bytes live there, the estimated flops recomputed in the backward
    pass, and whether the peak fits the target (None: no target given)."""

    policy: str
    peak_bytes: int
    residual_bytes: int
    recompute_flops: float
    fits: bool | None = None


def _policy_label(policy: Any) -> str:
    return policy_name(None if policy is None else repr(policy))


def memory_policies(
    make_step: Callable[[Any], Callable[..., Any]],
    policies: Sequence[Any],
    *,
    fits: int | None = None,
) -> Callable[..., list[PolicyMemory]]:
    """Peak memory against recompute flops for each checkpoint policy, compiled only.

    ``make_step(policy)`` builds the train step with ``policy`` given to its
    ``jax.checkpoint`` / ``nnx.remat`` / ``eqx.filter_checkpoint``;
    ``js.memory_policies(make_step, [None, dots_saveable, ...], fits=8 * 2**30)(*args)``
    compiles each (nothing runs; ``jax.ShapeDtypeStruct`` arguments work) and
    returns a ``PolicyMemory`` per policy, the cheapest recompute that fits first.

    Example:
        >>> import jax, jax.numpy as jnp, jaxscope as js
        >>> def make_step(policy):
        ...     def loss(w, x):
        ...         layer = jax.checkpoint(lambda x: jnp.tanh(x @ w), policy=policy)
        ...         return layer(layer(x)).sum()
        ...     return jax.grad(loss)
        >>> rows = js.memory_policies(
        ...     make_step, [None, jax.checkpoint_policies.everything_saveable]
        ... )(jnp.ones((8, 8)), jnp.ones((4, 8)))
        >>> [(r.policy, r.recompute_flops > 0) for r in rows]
        [('everything_saveable', False), ('nothing_saveable', True)]
    """
    from jaxscope._checks import check_count

    if not callable(make_step):
        from jaxscope._exceptions import InvalidCallError

        raise InvalidCallError(
            "js.memory_policies needs a function that builds the step from a policy, "
            f"got {type(make_step).__name__}; e.g. js.memory_policies(lambda p: "
            "make_step(p), [None, jax.checkpoint_policies.dots_saveable])(*args)"
        )
    if fits is not None:
        check_count(
            fits,
            "fits",
            low=1,
            where="js.memory_policies",
            example="js.memory_policies(make_step, policies, fits=8 * 2**30)",
        )

    def sweep(*args: Any, **kwargs: Any) -> list[PolicyMemory]:
        rows: list[PolicyMemory] = []
        for policy in policies:
            view = residuals_call(
                make_step(policy), args, kwargs, api_name="js.memory_policies"
            )
            memory = view.memory
            peak = memory.peak_bytes if memory is not None else 0
            rows.append(
                PolicyMemory(
                    policy=_policy_label(policy),
                    peak_bytes=peak,
                    residual_bytes=memory.kinds.get("residual", 0) if memory else 0,
                    recompute_flops=view.recompute_flops,
                    fits=None if fits is None else peak <= fits,
                )
            )
        rows.sort(key=lambda r: (r.fits is False, r.recompute_flops, r.peak_bytes))
        return rows

    return sweep
