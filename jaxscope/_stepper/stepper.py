"""Stepping mode: run a staged program equation by equation with concrete values.

``step(f)(*args)`` traces ``f`` (as ``jax.jit`` would) and returns a ``Stepper`` paused
before the first equation. The stepper interprets the jaxpr itself: leaf equations run
with ``primitive.bind`` exactly as JAX's own ``eval_jaxpr`` does, and the equations that
hold nested jaxprs (jit bodies, closed_call, scan and while bodies per iteration, the
taken cond/switch branch, custom_jvp/custom_vjp primal bodies, checkpoint) are
entered, so every equation at every level can be paused at. Equation paths and
variable names are those of ``js.jaxpr`` on the same call.

The interpreter is a tree of generators: each frame yields before each of its
equations (and after one that produced a NaN/Inf when asked to watch for them); the
driver (``step``, ``next``, ``finish``, ``run``) pulls events until its stop condition.
"""

from __future__ import annotations

import functools
import linecache
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxscope._display import Renderable
from jaxscope._exceptions import (
    BreakpointError,
    InvalidCallError,
    StepError,
    StepperFinishedError,
)
from jaxscope._jaxpr.model import Region, build_model
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._source import loc_of_function
from jaxscope._staging import check_callable, function_name, trace
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import source as _csource
from jaxscope.compat import stepper as _cs

__all__ = [
    "BreakpointError",
    "Frame",
    "NanFinding",
    "StepError",
    "Stepper",
    "StepperFinishedError",
    "ValueSummary",
    "find_nan",
    "step",
    "summarize_value",
]

_BEFORE = 0
_BREAK_AFTER = 1


# ---------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One level of the stack of nested jaxprs the stepper is inside.

    ``label`` is the function name for the top frame, else e.g. ``"jit(inner)"``,
    ``"scan body"``, ``"while cond"``, ``"cond branch 1"``. ``iteration`` is the loop
    iteration inside scan/while bodies (``length`` is the scan length), ``position``
    the index of the frame's current equation among its ``n_eqns``.
    """

    label: str
    primitive: str | None
    call: EqnInfo | None
    path: tuple[int, ...]
    iteration: int | None
    length: int | None
    position: int
    n_eqns: int
    source: SourceLoc | None

    def __str__(self) -> str:
        it = ""
        if self.iteration is not None:
            total = f"/{self.length}" if self.length is not None else ""
            it = f" [iteration {self.iteration}{total}]"
        where = f" at {self.source}" if self.source is not None else ""
        return f"{self.label}{it}{where}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueSummary:
    """A concrete value described with strings and numbers (never the array itself)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    aval: str
    min: float | None
    max: float | None
    mean: float | None
    nan_count: int
    inf_count: int
    preview: str
    user_name: str = ""

    @property
    def label(self) -> str:
        """``a (params['w'])``: the jaxpr name, and the user's name where known."""
        return f"{self.name} ({self.user_name})" if self.user_name else self.name


@dataclass(frozen=True, slots=True, kw_only=True)
class NanFinding(Renderable):
    """The first equation that produced a NaN or Inf, with its inputs and outputs."""

    eqn: EqnInfo
    kind: str
    inputs: list[ValueSummary]
    outputs: list[ValueSummary]
    frames: list[Frame]

    @property
    def source(self) -> SourceLoc | None:
        return self.eqn.source

    @property
    def primitive(self) -> str:
        return self.eqn.primitive

    @property
    def path(self) -> tuple[int, ...]:
        return self.eqn.path

    def __repr__(self) -> str:
        where = f" at {self.eqn.source}" if self.eqn.source is not None else ""
        return f"<NanFinding: {self.kind} from {self.eqn.primitive}{where}>"


def summarize_value(
    name: str, value: Any, preview_chars: int = 120, user_name: str = ""
) -> ValueSummary:
    """Shape, dtype and statistics of a concrete value (host copy, nothing kept)."""
    try:
        arr = np.asarray(value)
    except Exception:
        text = repr(value)
        return ValueSummary(
            name=name,
            shape=(),
            dtype=type(value).__name__,
            aval=type(value).__name__,
            min=None,
            max=None,
            mean=None,
            nan_count=0,
            inf_count=0,
            preview=text[:preview_chars],
            user_name=user_name,
        )
    dtype = arr.dtype
    aval = f"{_cj.short_dtype(dtype)}[{','.join(str(d) for d in arr.shape)}]"
    vmin = vmax = mean = None
    nan_count = inf_count = 0
    if arr.size and (
        np.issubdtype(dtype, np.number) or dtype == np.bool_ or _is_float(dtype)
    ):
        data = arr.astype(np.float64) if not np.iscomplexobj(arr) else np.abs(arr)
        finite = np.isfinite(data)
        nan_count = int(np.isnan(data).sum())
        inf_count = int(np.isinf(data).sum())
        if finite.any():
            good = data[finite]
            vmin, vmax, mean = float(good.min()), float(good.max()), float(good.mean())
    with np.printoptions(threshold=20, edgeitems=3, precision=4, linewidth=10_000):
        preview = " ".join(str(arr).split())
    if len(preview) > preview_chars:
        preview = preview[: preview_chars - 3] + "..."
    return ValueSummary(
        name=name,
        shape=tuple(int(d) for d in arr.shape),
        dtype=str(dtype),
        aval=aval,
        min=vmin,
        max=vmax,
        mean=mean,
        nan_count=nan_count,
        inf_count=inf_count,
        preview=preview,
        user_name=user_name,
    )


def _is_float(dtype: Any) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.inexact))


# ------------------------------------------------------------------ the program plan


class _Node:
    """One equation of one (nested) jaxpr, with its EqnInfo and how to run it."""

    __slots__ = (
        "_raw_file",
        "eqn",
        "info",
        "invars",
        "line_start",
        "outvars",
        "run",
        "subs",
    )

    def __init__(
        self, eqn: Any, info: EqnInfo, subs: dict[str, _Plan], line_start: bool
    ):
        self.eqn = eqn
        self.info = info
        self.invars = list(eqn.invars)
        self.outvars = list(eqn.outvars)
        self.subs = subs
        self.run: Callable[[Sequence[Any]], list[Any]] | None = None
        self.line_start = line_start
        self._raw_file: str | None = None

    def raw_file(self) -> str | None:
        if self._raw_file is None:
            raw = _csource.innermost_user_frame(_csource.eqn_traceback(self.eqn))
            self._raw_file = raw.file if raw is not None else ""
        return self._raw_file or None


class _Plan:
    """A (nested) jaxpr: binders, consts and nodes, parallel to a ``Region``."""

    __slots__ = ("consts", "constvars", "invars", "label", "nodes", "outvars", "region")

    def __init__(
        self, jaxpr: Any, consts: list[Any], region: Region, names: dict[int, str]
    ):
        self.region = region
        self.label = region.label
        self.consts = consts
        self.constvars = list(jaxpr.constvars)
        self.invars = list(jaxpr.invars)
        self.outvars = list(jaxpr.outvars)
        for var, (name, _) in zip(self.constvars, region.constvars):
            names.setdefault(id(var), name)
        for var, (name, _) in zip(self.invars, region.invars):
            names.setdefault(id(var), name)
        self.nodes: list[_Node] = []
        previous: tuple[str, int] | None = None
        for k, (eqn, info) in enumerate(zip(jaxpr.eqns, region.eqns)):
            for var, (name, _) in zip(eqn.invars, info.inputs):
                if not _cj.is_literal(var):
                    names.setdefault(id(var), name)
            for var, (name, _) in zip(eqn.outvars, info.outputs):
                if not _cj.is_dropvar(var):
                    names.setdefault(id(var), name)
            subs: dict[str, _Plan] = {}
            children = region.children.get(k, [])
            for (label, sub), child in zip(_cj.subjaxprs(eqn), children):
                sub_jaxpr, sub_consts = _cj.open_jaxpr(sub)
                subs[label] = _Plan(sub_jaxpr, sub_consts, child, names)
            key = info.source.key if info.source is not None else None
            self.nodes.append(
                _Node(eqn, info, subs, key is not None and key != previous)
            )
            previous = key


class _FrameState:
    """A live frame: its plan, its environment (var -> value) and where it is."""

    __slots__ = (
        "call",
        "env",
        "iteration",
        "label",
        "length",
        "pc",
        "plan",
        "primitive",
    )

    def __init__(
        self,
        plan: _Plan,
        label: str,
        call: _Node | None,
        iteration: int | None = None,
        length: int | None = None,
    ):
        self.plan = plan
        self.label = label
        self.call = call
        self.primitive = call.info.primitive if call is not None else None
        self.iteration = iteration
        self.length = length
        self.env: dict[Any, Any] = {}
        self.pc = 0


def _read(env: dict[Any, Any], var: Any) -> Any:
    if _cj.is_literal(var):
        return _cj.literal_value(var)
    return env[var]


# ------------------------------------------------------------------------ breakpoints


def _parse_location(spec: Any, what: str) -> tuple[str | None, int]:
    """``(file or None, line)`` from a SourceLoc, ``"file:line"`` or a line number."""
    if isinstance(spec, SourceLoc):
        return spec.file, spec.line
    if isinstance(spec, bool):
        raise BreakpointError(
            f"{what} must be a line number, 'file:line' or a SourceLoc; got {spec!r}"
        )
    if isinstance(spec, (int, np.integer)):
        return None, int(spec)
    if isinstance(spec, str):
        text = spec.strip()
        if text.isdigit():
            return None, int(text)
        file, sep, line = text.rpartition(":")
        if sep and line.strip().isdigit() and file:
            return file.strip(), int(line)
    raise BreakpointError(
        f"{what} must be a line number, 'file:line' or a SourceLoc; got {spec!r}"
    )


def _file_matches(want: str, have: str) -> bool:
    """``want`` names ``have``: equal (spaces ignored, for ``In[3]``), a basename or a
    path suffix of it."""
    if want.replace(" ", "") == have.replace(" ", ""):
        return True
    return have.endswith("/" + want.lstrip("/"))


# -------------------------------------------------------------------------- the stepper


class Stepper(Renderable):
    """A staged program paused between equations; see ``js.step``.

    Attributes:
        current: the next equation to run (``EqnInfo``), or after a NaN/Inf break the
            one that just produced the value; None when done.
        values: ``{var name: concrete value}`` of the current frame.
        frames: the stack of nested jaxprs, outermost first (``Frame`` records).
        done / result: whether the program finished, and its result (``f(*args)``).
        reason: why the stepper stopped last (``"start"``, ``"step"``, ``"breakpoint"``,
            ``"nan"``, ``"inf"``, ``"until"``, ``"done"``, ...).
    """

    def __init__(
        self,
        closed_jaxpr: Any,
        flat_args: Sequence[Any],
        out_tree: Any,
        *,
        function_name: str = "f",
        defined_at: SourceLoc | None = None,
    ) -> None:
        self.function_name = function_name
        self.defined_at = defined_at
        self.closed_jaxpr = closed_jaxpr
        self.model = build_model(closed_jaxpr)
        self._names: dict[int, str] = {}
        jaxpr, consts = _cj.open_jaxpr(closed_jaxpr)
        self._plan = _Plan(jaxpr, consts, self.model.top, self._names)
        if len(flat_args) != len(self._plan.invars):
            raise InvalidCallError(
                f"js.step: {len(flat_args)} argument leaves for {len(self._plan.invars)} "
                f"jaxpr inputs of {function_name}; pass the arguments as for a call of f"
            )
        self._out_tree = out_tree
        self._flat_args = list(flat_args)
        self._stack: list[_FrameState] = []
        self._top: _FrameState | None = None
        self._result: Any = None
        self._done = False
        self._failed: BaseException | None = None
        self._after = False
        self.reason = "start"
        self.finding: NanFinding | None = None
        self._break_nan = False
        self._break_inf = False
        self._break_lines: set[tuple[str | None, int]] = set()
        self._break_prims: set[str] = set()
        self._gen = self._main()
        self._pull(lambda kind: kind == _BEFORE, "start")

    # ------------------------------------------------------------------ state access

    @property
    def done(self) -> bool:
        return self._done

    @property
    def result(self) -> Any:
        if not self._done:
            raise StepperFinishedError(
                "the program has not finished yet; call run() (or finish() at the top "
                "level) before reading result"
            )
        if self._failed is not None:
            raise StepError(
                f"the program failed ({self._failed}); it has no result"
            ) from self._failed
        return self._result

    @property
    def eqns(self) -> list[EqnInfo]:
        """Every equation of the program, depth-first (as ``js.jaxpr(f)(...).eqns``)."""
        return self.model.eqns

    @property
    def current(self) -> EqnInfo | None:
        node = self._current_node()
        return node.info if node is not None else None

    @property
    def stopped_after(self) -> bool:
        """True when paused after ``current`` ran (a NaN/Inf break), else before it."""
        return self._after and not self._done

    def _current_node(self) -> _Node | None:
        if self._done or not self._stack:
            return None
        frame = self._stack[-1]
        if frame.pc >= len(frame.plan.nodes):
            return None
        return frame.plan.nodes[frame.pc]

    @property
    def values(self) -> dict[str, Any]:
        if not self._stack:
            return self._env_values(self._top.env) if self._top is not None else {}
        return self._env_values(self._stack[-1].env)

    def _env_values(self, env: dict[Any, Any]) -> dict[str, Any]:
        names = self._names
        return {names.get(id(var), str(var)): val for var, val in env.items()}

    def value(self, name: str) -> Any:
        """The value of variable ``name`` in the current frame (or an enclosing one)."""
        for frame in reversed(self._stack):
            for var, val in frame.env.items():
                if self._names.get(id(var)) == name:
                    return val
        known = ", ".join(sorted(self.values)) or "none yet"
        raise KeyError(f"no variable {name!r} in the current frame; defined: {known}")

    @property
    def frames(self) -> list[Frame]:
        out: list[Frame] = []
        for frame in self._stack:
            nodes = frame.plan.nodes
            pos = min(frame.pc, len(nodes))
            node = nodes[pos] if pos < len(nodes) else None
            out.append(
                Frame(
                    label=frame.label,
                    primitive=frame.primitive,
                    call=frame.call.info if frame.call is not None else None,
                    path=frame.plan.region.path,
                    iteration=frame.iteration,
                    length=frame.length,
                    position=pos,
                    n_eqns=len(nodes),
                    source=node.info.source if node is not None else None,
                )
            )
        return out

    @property
    def arg_names(self) -> dict[str, str]:
        """``{var name: the user's argument path}`` for the top-level inputs."""
        names = self.model.arg_names or ()
        return {
            vname: str(user)
            for (vname, _), user in zip(self.model.top.invars, names)
            if user is not None
        }

    @property
    def breakpoints(self) -> dict[str, Any]:
        """The active breakpoints: lines, primitives, nan, inf."""
        return {
            "lines": sorted(
                (f"{f}:{n}" if f is not None else str(n)) for f, n in self._break_lines
            ),
            "primitives": sorted(self._break_prims),
            "nan": self._break_nan,
            "inf": self._break_inf,
        }

    @property
    def user_names(self) -> dict[str, str]:
        """``{var name: the user's name}`` in the current frame, where known: the
        top-level arguments (``params['w']``) and results (``result[0]``)."""
        if len(self._stack) > 1:
            return {}
        names = dict(self.arg_names)
        for (vname, _), path in zip(
            self.model.top.outvars, self.model.result_paths or ()
        ):
            if path is not None and not vname[:1].isdigit() and vname not in names:
                names[vname] = str(path)
        return names

    def summaries(self) -> list[ValueSummary]:
        """``ValueSummary`` of every value in the current frame (with the user's
        names of arguments and results where known)."""
        user = self.user_names
        return [
            summarize_value(k, v, user_name=user.get(k, ""))
            for k, v in self.values.items()
        ]

    # --------------------------------------------------------------------- source

    def source_line(self, loc: SourceLoc | None = None) -> str | None:
        """The text of the current equation's source line (or of ``loc``), if readable."""
        node = self._current_node()
        if loc is None:
            if node is None or node.info.source is None:
                return None
            loc = node.info.source
        raw = self._raw_file_for(loc.file, node)
        if raw is None:
            return None
        text = linecache.getline(raw, loc.line)
        return text.rstrip("\n") if text else None

    def _raw_file_for(self, display: str, hint: _Node | None = None) -> str | None:
        if (
            hint is not None
            and hint.info.source is not None
            and hint.info.source.file == display
        ):
            raw = hint.raw_file()
            if raw:
                return raw
        for node in self._iter_nodes(self._plan):
            if node.info.source is not None and node.info.source.file == display:
                return node.raw_file()
        return display

    def source_context(
        self, context: int = 3
    ) -> tuple[str | None, list[tuple[int, str]]]:
        """``(file, [(line number, text), ...])`` around the current equation's line."""
        node = self._current_node()
        if node is None or node.info.source is None:
            return None, []
        loc = node.info.source
        raw = self._raw_file_for(loc.file, node)
        if raw is None:
            return loc.file, []
        lines = linecache.getlines(raw)
        lo = max(1, loc.line - context)
        hi = min(len(lines), loc.line + context)
        return loc.file, [(n, lines[n - 1].rstrip("\n")) for n in range(lo, hi + 1)]

    def source_lines(self) -> tuple[str | None, list[tuple[int, str]], set[int]]:
        """The current file's lines spanning every equation in it, and which have any.

        Returns ``(file, [(line number, text)], {lines holding equations})``.
        """
        node = self._current_node()
        loc = node.info.source if node is not None else None
        if loc is None:
            for info in self.eqns:
                if info.source is not None:
                    loc = info.source
                    break
        if loc is None:
            return None, [], set()
        lines_with = {
            i.source.line
            for i in self.eqns
            if i.source is not None and i.source.file == loc.file
        }
        raw = self._raw_file_for(loc.file, node)
        text = linecache.getlines(raw) if raw else []
        if not text:
            return loc.file, [], lines_with
        lo = max(1, min(lines_with) - 2)
        if self.defined_at is not None and self.defined_at.file == loc.file:
            if self.defined_at.line <= min(lines_with):
                lo = self.defined_at.line
        hi = min(len(text), max(lines_with) + 1)
        return (
            loc.file,
            [(n, text[n - 1].rstrip("\n")) for n in range(lo, hi + 1)],
            lines_with,
        )

    # ------------------------------------------------------------------ breakpoints

    def break_on(
        self,
        nan: bool = False,
        inf: bool = False,
        line: Any = None,
        primitive: str | Sequence[str] | None = None,
    ) -> Stepper:
        """Add breakpoints; returns the stepper, so ``js.step(f)(x).break_on(nan=True).run()``.

        ``nan``/``inf`` stop right after the equation that produced one (``current`` is
        that equation). ``line`` (a number, ``"file:line"``, a ``SourceLoc`` or a list
        of them) stops before the first equation of that line; ``primitive`` before
        each equation of that primitive. Unknown lines and primitives raise
        ``BreakpointError`` naming the ones the program has.
        """
        if nan:
            self._break_nan = True
        if inf:
            self._break_inf = True
        if line is not None:
            specs = line if isinstance(line, (list, tuple, set)) else [line]
            for spec in specs:
                self._break_lines.add(self._check_line(spec, "break_on(line=...)"))
        if primitive is not None:
            prims = [primitive] if isinstance(primitive, str) else list(primitive)
            for prim in prims:
                self._break_prims.add(
                    self._check_primitive(prim, "break_on(primitive=...)")
                )
        return self

    def clear_breakpoints(self, line: Any = None) -> None:
        """Remove the breakpoint at ``line`` (all breakpoints when None)."""
        if line is None:
            self._break_lines.clear()
            self._break_prims.clear()
            self._break_nan = self._break_inf = False
            return
        key = _parse_location(line, "clear_breakpoints(line=...)")
        self._break_lines.discard(key)

    def toggle_breakpoint(self, line: Any) -> bool:
        """Set the line breakpoint if absent, else remove it; returns whether it is set."""
        key = self._check_line(line, "toggle_breakpoint(line=...)")
        if key in self._break_lines:
            self._break_lines.discard(key)
            return False
        self._break_lines.add(key)
        return True

    def _check_line(self, spec: Any, what: str) -> tuple[str | None, int]:
        file, line = _parse_location(spec, what)
        infos = [
            i
            for i in self.eqns
            if i.source is not None
            and i.source.line == line
            and (file is None or _file_matches(file, i.source.file))
        ]
        if not infos:
            files = {i.source.file for i in self.eqns if i.source is not None}
            if file is not None:
                files = {f for f in files if _file_matches(file, f)} or files
            lines = sorted(
                {
                    i.source.line
                    for i in self.eqns
                    if i.source is not None and i.source.file in files
                }
            )
            where = f" of {file}" if file is not None else ""
            shown = ", ".join(str(n) for n in lines) or "none"
            raise BreakpointError(
                f"{what}: no equation at line {line}{where}; lines with equations: {shown}"
            )
        return (file, line)

    def _check_primitive(self, prim: Any, what: str) -> str:
        present = sorted({i.primitive for i in self.eqns})
        if not isinstance(prim, str) or prim not in present:
            raise BreakpointError(
                f"{what}: no {prim!r} equation in this program; primitives present: "
                f"{', '.join(present)}"
            )
        return prim

    def _line_hit(self, node: _Node) -> bool:
        src = node.info.source
        if src is None or not node.line_start:
            return False
        for file, line in self._break_lines:
            if line == src.line and (file is None or _file_matches(file, src.file)):
                return True
        return False

    # --------------------------------------------------------------------- commands

    def step(self) -> Stepper:
        """Run the current equation, or enter its nested jaxpr; pause at the next one."""
        self._check_running("step")
        self._pull(lambda kind: kind == _BEFORE, "step")
        return self

    def next(self) -> Stepper:
        """Run the current equation, nested jaxprs included; pause at the next one."""
        self._check_running("next")
        depth = len(self._stack)
        stack = self._stack
        self._pull(lambda kind: kind == _BEFORE and len(stack) <= depth, "next")
        return self

    def finish(self) -> Stepper:
        """Run to the end of the current nested jaxpr; pause at the parent's next equation."""
        self._check_running("finish")
        depth = len(self._stack)
        stack = self._stack
        self._pull(lambda kind: kind == _BEFORE and len(stack) < depth, "finish")
        return self

    def run(self, until: Any = None) -> Stepper:
        """Run until a breakpoint, the ``until`` target or the end.

        ``until``: a ``SourceLoc``, ``"file:line"``, a line number, a primitive name,
        or ``callable(EqnInfo, values) -> bool``; the stepper pauses before the first
        equation that matches.
        """
        self._check_running("run")
        target = self._until(until)
        self._pull(target, "until" if until is not None else "done")
        return self

    cont = run

    def _until(self, until: Any) -> Callable[[int], bool]:
        never: Callable[[int], bool] = lambda kind: False  # noqa: E731
        if until is None:
            return never
        stack = self._stack
        if callable(until) and not isinstance(until, (str, SourceLoc)):
            fn = until

            def check_callable_target(kind: int) -> bool:
                if kind != _BEFORE:
                    return False
                frame = stack[-1]
                node = frame.plan.nodes[frame.pc]
                return bool(fn(node.info, self._env_values(frame.env)))

            return check_callable_target
        if isinstance(until, str) and not until.strip().isdigit() and ":" not in until:
            prim = self._check_primitive(until.strip(), "run(until=...)")

            def check_primitive(kind: int) -> bool:
                if kind != _BEFORE:
                    return False
                frame = stack[-1]
                return frame.plan.nodes[frame.pc].info.primitive == prim

            return check_primitive
        file, line = self._check_line(until, "run(until=...)")

        def check_line(kind: int) -> bool:
            if kind != _BEFORE:
                return False
            frame = stack[-1]
            node = frame.plan.nodes[frame.pc]
            src = node.info.source
            return (
                src is not None
                and node.line_start
                and src.line == line
                and (file is None or _file_matches(file, src.file))
            )

        return check_line

    def _check_running(self, command: str) -> None:
        if self._done:
            what = "failed" if self._failed is not None else "finished"
            raise StepperFinishedError(
                f"cannot {command}(): the program has {what} (result in .result); "
                "start again with js.step(f)(*args)"
            )

    def _pull(self, stop: Callable[[int], bool], reason: str) -> None:
        self._after = False
        self.finding = None
        gen = self._gen
        stack = self._stack
        while True:
            try:
                kind = next(gen)
            except StopIteration as fin:
                self._finish(fin.value)
                return
            except StepError as exc:
                self._done = True
                self._failed = exc
                self.reason = "error"
                raise
            except Exception as exc:  # a bug or an unsupported primitive: fail clearly
                error = StepError(
                    f"the stepper failed: {type(exc).__name__}: "
                    f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}; "
                    "please report it with the program"
                )
                self._done = True
                self._failed = error
                self.reason = "error"
                raise error from exc
            if kind == _BREAK_AFTER:
                self._after = True
                self.reason = self.finding.kind if self.finding is not None else "nan"
                return
            if stop(kind):
                self.reason = reason
                return
            if kind == _BEFORE and (self._break_lines or self._break_prims):
                frame = stack[-1]
                node = frame.plan.nodes[frame.pc]
                if node.info.primitive in self._break_prims or (
                    self._break_lines and self._line_hit(node)
                ):
                    self.reason = "breakpoint"
                    return

    def _finish(self, flat_out: list[Any]) -> None:
        self._done = True
        self.reason = "done"
        self._result = jax.tree_util.tree_unflatten(self._out_tree, flat_out)

    # ----------------------------------------------------------------- interpreter

    def _main(self) -> Iterator[int]:
        frame = self._top = _FrameState(self._plan, self.function_name, None)
        args = [
            jax.device_put(a) if not isinstance(a, jax.Array) else a
            for a in self._flat_args
        ]
        self._flat_args = []
        outs = yield from self._exec(frame, args)
        top = self._plan
        return [_as_array(val, var) for val, var in zip(outs, top.outvars)]

    def _exec(self, frame: _FrameState, args: Sequence[Any]) -> Iterator[int]:
        plan = frame.plan
        env = frame.env
        for var, val in zip(plan.constvars, plan.consts):
            env[var] = val
        for var, val in zip(plan.invars, args):
            env[var] = val
        stack = self._stack
        stack.append(frame)
        try:
            for k, node in enumerate(plan.nodes):
                frame.pc = k
                yield _BEFORE
                invals = [_read(env, v) for v in node.invars]
                enter = _RULES.get(node.info.primitive) if node.subs else None
                outs = None
                if enter is not None:
                    try:
                        outs = yield from enter(self, node, invals)
                    except StepError:
                        raise
                    except Exception as exc:
                        raise self._eqn_error(node, exc) from exc
                if outs is None:
                    run = node.run
                    if run is None:
                        run = node.run = _cs.binder(node.eqn)
                    try:
                        outs = run(invals)
                    except Exception as exc:
                        raise self._eqn_error(node, exc) from exc
                    if self._break_nan or self._break_inf:
                        finding = self._check_nonfinite(node, invals, outs)
                        if finding is not None:
                            for var, val in zip(node.outvars, outs):
                                if not _cj.is_dropvar(var):
                                    env[var] = val
                            self.finding = finding
                            yield _BREAK_AFTER
                            continue
                for var, val in zip(node.outvars, outs):
                    if not _cj.is_dropvar(var):
                        env[var] = val
            frame.pc = len(plan.nodes)
            return [_read(env, v) for v in plan.outvars]
        finally:
            stack.pop()

    def _eqn_error(self, node: _Node, exc: BaseException) -> StepError:
        where = f" at {node.info.source}" if node.info.source is not None else ""
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return StepError(
            f"equation {node.info.primitive} (path {node.info.path}){where} raised "
            f"{type(exc).__name__}: {first}; the stepper stopped (see .values)"
        )

    def _check_nonfinite(
        self, node: _Node, invals: Sequence[Any], outs: Sequence[Any]
    ) -> NanFinding | None:
        kind = None
        for val in outs:
            k = _nonfinite_kind(val, self._break_nan, self._break_inf)
            if k is not None:
                kind = k
                break
        if kind is None:
            return None
        for val in invals:
            if _nonfinite_kind(val, kind == "nan", kind == "inf") is not None:
                return None  # propagated from an input, not produced here
        names = [n for n, _ in node.info.inputs]
        outnames = [n for n, _ in node.info.outputs]
        self._after = True
        finding = NanFinding(
            eqn=node.info,
            kind=kind,
            inputs=[summarize_value(n, v) for n, v in zip(names, invals)],
            outputs=[summarize_value(n, v) for n, v in zip(outnames, outs)],
            frames=[],
        )
        return finding

    def _call(
        self,
        node: _Node,
        label: str,
        args: Sequence[Any],
        title: str,
        iteration: int | None = None,
        length: int | None = None,
    ) -> Iterator[int]:
        plan = node.subs[label]
        frame = _FrameState(plan, title, node, iteration, length)
        return (yield from self._exec(frame, args))

    def _iter_nodes(self, plan: _Plan) -> Iterator[_Node]:
        for node in plan.nodes:
            yield node
            for sub in node.subs.values():
                yield from self._iter_nodes(sub)

    def __repr__(self) -> str:
        if self._done:
            return f"<Stepper of {self.function_name}: done>"
        cur = self.current
        where = (
            f" at {cur.source}" if cur is not None and cur.source is not None else ""
        )
        prim = cur.primitive if cur is not None else "?"
        return f"<Stepper of {self.function_name}: paused at {prim}{where}>"


def _nonfinite_kind(value: Any, nan: bool, inf: bool) -> str | None:
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        if isinstance(value, float):
            if nan and value != value:
                return "nan"
            if inf and value in (float("inf"), float("-inf")):
                return "inf"
        return None
    if not _is_float(dtype):
        return None
    arr = np.asarray(value)
    if nan and np.isnan(arr).any():
        return "nan"
    if inf and np.isinf(arr).any():
        return "inf"
    return None


def _as_array(value: Any, var: Any) -> Any:
    if isinstance(value, jax.Array):
        return value
    aval = getattr(var, "aval", None)
    if isinstance(value, (bool, int, float, complex)) and getattr(
        aval, "weak_type", False
    ):
        return jax.device_put(value)
    dtype = getattr(aval, "dtype", None)
    return jnp.asarray(value, dtype=dtype)


# ------------------------------------------------------------------ nested-jaxpr rules


def _label_of(node: _Node, *names: str) -> str | None:
    for name in names:
        if name in node.subs:
            return name
    return None


def _enter_call(stepper: Stepper, node: _Node, invals: list[Any]) -> Iterator[int]:
    label = _label_of(node, "jaxpr", "call_jaxpr", "fun_jaxpr")
    if label is None:
        return None
    prim = node.info.primitive
    name = node.eqn.params.get("name")
    title = f"{prim}({name})" if name else prim
    return (yield from stepper._call(node, label, invals, title))


def _enter_scan(stepper: Stepper, node: _Node, invals: list[Any]) -> Iterator[int]:
    p = node.eqn.params
    nc, nk, length, reverse = (
        p["num_consts"],
        p["num_carry"],
        int(p["length"]),
        bool(p["reverse"]),
    )
    consts, carry, xs = invals[:nc], list(invals[nc : nc + nk]), invals[nc + nk :]
    rows = [list(jnp.asarray(x)) if length else [] for x in xs]
    ys: list[list[Any]] = []
    order = range(length - 1, -1, -1) if reverse else range(length)
    for i in order:
        out = yield from stepper._call(
            node,
            "jaxpr",
            [*consts, *carry, *(r[i] for r in rows)],
            "scan body",
            i,
            length,
        )
        carry, y = list(out[:nk]), out[nk:]
        ys.append(y)
    if reverse:
        ys.reverse()
    body_outs = node.subs["jaxpr"].outvars[nk:]
    stacked = []
    for j, var in enumerate(body_outs):
        aval = var.aval
        if ys:
            stacked.append(jnp.stack([jnp.asarray(y[j], dtype=aval.dtype) for y in ys]))
        else:
            stacked.append(jnp.zeros((0, *aval.shape), aval.dtype))
    return [*carry, *stacked]


def _enter_while(stepper: Stepper, node: _Node, invals: list[Any]) -> Iterator[int]:
    p = node.eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts, carry = invals[:cn], invals[cn : cn + bn], list(invals[cn + bn :])
    i = 0
    while True:
        (pred,) = yield from stepper._call(
            node, "cond_jaxpr", [*cconsts, *carry], "while cond", i
        )
        if not bool(np.asarray(pred)):
            return carry
        carry = list(
            (
                yield from stepper._call(
                    node, "body_jaxpr", [*bconsts, *carry], "while body", i
                )
            )
        )
        i += 1


def _enter_cond(stepper: Stepper, node: _Node, invals: list[Any]) -> Iterator[int]:
    n = len(node.eqn.params["branches"])
    index = int(np.clip(int(np.asarray(invals[0])), 0, n - 1))
    label = f"branches[{index}]"
    if label not in node.subs:
        return None
    return (yield from stepper._call(node, label, invals[1:], f"cond branch {index}"))


def _enter_custom(stepper: Stepper, node: _Node, invals: list[Any]) -> Iterator[int]:
    label = _label_of(node, "call_jaxpr", "fun_jaxpr")
    if label is None:
        return None
    return (yield from stepper._call(node, label, invals, node.info.primitive))


def _enter_remat(stepper: Stepper, node: _Node, invals: list[Any]) -> Iterator[int]:
    if "jaxpr" not in node.subs:
        return None
    return (yield from stepper._call(node, "jaxpr", invals, node.info.primitive))


_RULES: dict[str, Callable[[Stepper, _Node, list[Any]], Iterator[int]]] = {
    "jit": _enter_call,
    "pjit": _enter_call,
    "closed_call": _enter_call,
    "core_call": _enter_call,
    "scan": _enter_scan,
    "while": _enter_while,
    "cond": _enter_cond,
    "custom_jvp_call": _enter_custom,
    "custom_vjp_call": _enter_custom,
    "custom_vjp_call_jaxpr": _enter_custom,
    "checkpoint": _enter_remat,
    "remat": _enter_remat,
    "remat2": _enter_remat,
}


# ------------------------------------------------------------------------ the API


def _flatten_dynamic(
    fn: Any,
    args: Sequence[Any],
    kwargs: dict[str, Any],
    nums: tuple[int, ...],
    names: tuple[str, ...],
    traced: Any,
) -> list[Any]:
    jitted = (
        fn
        if hasattr(fn, "trace") and not nums and not names
        else jax.jit(fn, static_argnums=nums, static_argnames=names)
    )
    statics = _cj.jit_static_args(jitted) or (nums, names)
    snums = {n % len(args) if n < 0 and args else n for n in statics[0]}
    dyn_args = [a for i, a in enumerate(args) if i not in snums]
    dyn_kwargs = {k: v for k, v in kwargs.items() if k not in statics[1]}
    leaves, tree = jax.tree_util.tree_flatten((tuple(dyn_args), dyn_kwargs))
    expected = jax.tree_util.tree_structure(traced.args_info)
    if tree != expected:
        raise InvalidCallError(
            f"js.step could not match the arguments of {function_name(fn)} to its "
            f"traced inputs ({tree} vs {expected}); pass static arguments with "
            "js.step(f, static_argnums=...)"
        )
    for path, leaf in jax.tree_util.tree_flatten_with_path(
        (tuple(dyn_args), dyn_kwargs)
    )[0]:
        if isinstance(leaf, jax.ShapeDtypeStruct):
            raise InvalidCallError(
                f"js.step needs concrete values, but argument {jax.tree_util.keystr(path)} "
                f"is a ShapeDtypeStruct {leaf.dtype}{list(leaf.shape)}; pass an array"
            )
    return leaves


def _short_name(fun: Any) -> str:
    """``f`` for ``test.<locals>.f``; ``Model.apply`` stays as it is."""
    return function_name(fun).rsplit("<locals>.", 1)[-1]


def _statics(value: int | str | Sequence[Any]) -> tuple[Any, ...]:
    return (value,) if isinstance(value, (int, str)) else tuple(value)


def step(
    fun: Callable[..., Any],
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., Stepper]:
    """Trace ``fun`` on example arguments and return a ``Stepper`` paused before its
    first equation.

    A jitted ``fun`` is stepped inside its body. The program runs with concrete
    values, one equation at a time, jit disabled; ``result`` equals ``fun(*args)``.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> s = js.step(lambda x: jnp.sin(x) * 2)(jnp.zeros(3))
        >>> s.current.primitive
        'sin'
        >>> s.run().result.tolist()
        [0.0, 0.0, 0.0]
    """
    check_callable(fun, "js.step")
    nums = _statics(static_argnums)
    names = _statics(static_argnames)

    @functools.wraps(fun)
    def start(*args: Any, **kwargs: Any) -> Stepper:
        traced = trace(
            fun,
            args,
            kwargs,
            static_argnums=nums,
            static_argnames=names,
            api_name="js.step",
        )
        flat = _flatten_dynamic(fun, args, kwargs, nums, names, traced)
        return Stepper(
            traced.jaxpr,
            flat,
            traced.out_tree,
            function_name=_short_name(fun),
            defined_at=loc_of_function(fun),
        )

    return start


def find_nan(
    fun: Callable[..., Any],
    *,
    inf: bool = True,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., NanFinding | None]:
    """The first equation of ``fun(*args)`` that produces a NaN (or Inf), or None.

    The result records the equation (``eqn``, ``source``, ``primitive``), whether it
    was a ``"nan"`` or an ``"inf"``, summaries of its inputs and outputs, and the frame
    stack (loop iterations included) where it happened.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> js.find_nan(lambda x: jnp.log(x) * 2)(jnp.array([1.0, -1.0])).primitive
        'log'
    """
    check_callable(fun, "js.find_nan")
    starter = step(fun, static_argnums=static_argnums, static_argnames=static_argnames)

    @functools.wraps(fun)
    def hunt(*args: Any, **kwargs: Any) -> NanFinding | None:
        stepper = starter(*args, **kwargs)
        stepper.break_on(nan=True, inf=inf).run()
        if stepper.done or stepper.finding is None:
            return None
        found = stepper.finding
        return NanFinding(
            eqn=found.eqn,
            kind=found.kind,
            inputs=found.inputs,
            outputs=found.outputs,
            frames=stepper.frames,
        )

    return hunt
