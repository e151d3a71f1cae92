"""Stepping mode: run a staged program equation by equation with concrete values.

``step(f)(*args)`` traces ``f`` (as ``jax.jit`` would) and returns a ``Stepper`` paused
before the first equation. The stepper interprets the jaxpr itself (see
``interpreter``), entering nested jaxprs, so every equation at every level can be
paused at. Equation paths and variable names are those of ``js.jaxpr`` on the same
call.

The ``Stepper`` is the driver: ``step``, ``next``, ``finish`` and ``run`` pull the
interpreter's events until their stop condition, a breakpoint (``breakpoints``) or
the end; ``find_nan`` runs to the first equation that makes a NaN or an Inf.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from jaxscope._checks import check_flag, takes_the_function_alone
from jaxscope._display import Renderable, printable
from jaxscope._exceptions import (
    BreakpointError,
    InvalidCallError,
    StepError,
    StepperFinishedError,
)
from jaxscope._format import qualname, short_dtype, short_repr
from jaxscope._host import host_array, is_inexact
from jaxscope._jaxpr.builder import build_model
from jaxscope._jaxpr.records import JaxprModel
from jaxscope._paths import short_path
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._source import is_library_file, loc_from_raw, loc_of_function
from jaxscope._staging import Staged, stage, staged, static_args
from jaxscope._stepper.breakpoints import Breakpoints, Target, until_target
from jaxscope._stepper.interpreter import FrameState, Interpreter
from jaxscope._stepper.locals import (
    Binding,
    LocalsLog,
    latest,
    leaf_names,
    record_locals,
    renamed,
    same_vars,
    value_of,
)
from jaxscope._stepper.names import add_path, alias, user_names_of
from jaxscope._stepper.plan import Node, Plan, Program, arg_names
from jaxscope._stepper.source import SourceReader
from jaxscope._stepper.values import (
    Frame,
    NanFinding,
    NanInInput,
    ValueSummary,
    summarize_value,
)
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import source as _csource
from jaxscope.compat.source import RawFrame

__all__ = [
    "BreakpointError",
    "Frame",
    "NanFinding",
    "NanInInput",
    "StepError",
    "Stepper",
    "StepperFinishedError",
    "ValueSummary",
    "find_nan",
    "step",
    "summarize_value",
]


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
        input_names: Sequence[str] = (),
        locals_log: LocalsLog | None = None,
        outputs: Callable[[Any], tuple[Any, tuple[str, ...]]] | None = None,
        read_locals: Callable[[], LocalsLog] | None = None,
    ) -> None:
        self._outputs = outputs
        #: reads the user's locals when names are first asked for (a second trace)
        self._read_locals = read_locals
        #: the library state (``model.bn.mean``) the real call would write back
        self.state_updates: tuple[str, ...] = ()
        self.function_name = function_name
        self._locals_log = locals_log
        #: which user frame names are read in (``up``/``down``): 0 is the innermost
        self._frame_offset = 0
        self.defined_at = defined_at
        self.closed_jaxpr = closed_jaxpr
        jaxpr, consts = _cj.open_jaxpr(closed_jaxpr)
        self._program = Program(defined_at, input_names)
        plan = Plan(jaxpr, consts, self._program)
        if len(flat_args) != len(plan.invars):
            raise InvalidCallError(
                f"js.step: {len(flat_args)} argument leaves for {len(plan.invars)} "
                f"jaxpr inputs of {function_name}; pass the arguments as for a call of f"
            )
        self._out_tree = out_tree
        self._breaks = Breakpoints(self._program)
        self._breaks.evaluate = self.evaluate
        self._interpreter = Interpreter(
            plan, self._breaks, function_name, list(flat_args)
        )
        self._source = SourceReader(plan, defined_at)
        self._result: Any = None
        self._done = False
        self._failed: StepError | None = None
        self._after = False
        self.reason = "start"
        self.finding: NanFinding | None = None
        self._pull(_always, "start")

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
    def error(self) -> StepError | None:
        """Why the program stopped before its end (an equation raised, or an
        interrupt it cannot resume from), else None."""
        return self._failed

    @property
    def eqns(self) -> list[EqnInfo]:
        """Every equation of the program, depth-first (as ``js.jaxpr(f)(...).eqns``)."""
        return self._program.eqns

    @functools.cached_property
    def model(self) -> JaxprModel:
        """``js.jaxpr``'s model of the program (made at first use)."""
        return build_model(self.closed_jaxpr, self._program.input_names)

    @property
    def current(self) -> EqnInfo | None:
        node = self._current_node()
        return node.info if node is not None else None

    @property
    def stopped_after(self) -> bool:
        """True when paused after ``current`` ran (a NaN/Inf break), else before it."""
        return self._after and not self._done

    def _current_node(self) -> Node | None:
        stack = self._interpreter.stack
        if self._done or not stack:
            return None
        return stack[-1].node()

    @property
    def values(self) -> dict[str, Any]:
        interpreter = self._interpreter
        frame = interpreter.stack[-1] if interpreter.stack else interpreter.top
        return frame.values() if frame is not None else {}

    def value(self, name: str) -> Any:
        """The value of ``name``: the user's variable (``logits``, ``params['w']``),
        or with a ``$`` the jaxpr's (``$a``); a bare jaxpr name is looked up last."""
        namespace = self.namespace()
        if name in namespace:
            return namespace[name]
        for frame in reversed(self._interpreter.stack):
            found = frame.values()
            if name in found:
                return found[name]
        known = ", ".join(sorted(n for n in namespace if not n.startswith("$")))
        raise KeyError(
            f"no variable {name!r} here; the user's names: {known or 'none yet'} "
            "(the jaxpr's with a $: $a)"
        )

    def namespace(self) -> dict[str, Any]:
        """The values by the user's names, as pdb would show them in the selected
        Python frame (the innermost of the user's, or the one ``up``/``down``
        chose): the locals the source bound on earlier lines (``logits``; ``grads``
        as the pytree ``jax.value_and_grad`` returned), then those of the frames
        that called it; arguments' pytree paths (``params['w']``, also
        ``params_w``). The jaxpr's names are there with a ``$`` (``$a``), never
        in place of the user's."""
        interpreter = self._interpreter
        frame = interpreter.stack[-1] if interpreter.stack else interpreter.top
        if frame is None:
            return {}
        namespace: dict[str, Any] = {}
        for state in interpreter.stack or [frame]:
            namespace.update(_namespace(state))
        namespace.update(self._traced_names())
        for state in interpreter.stack or [frame]:
            for name, value in state.values().items():
                namespace["$" + name] = value
        return namespace

    def evaluate(self, expression: str) -> Any:
        """Evaluate a Python expression over ``namespace()`` (and ``jnp``, ``np``)
        where the stepper is paused: ``s.evaluate("logits.argmax(-1)")``; ``$a``
        is the jaxpr's variable ``a``. Its exceptions propagate."""
        import jax.numpy as jnp

        values = self.namespace()
        jaxpr = {k[1:]: v for k, v in values.items() if k.startswith("$")}
        user = {k: v for k, v in values.items() if not k.startswith("$")}
        scope = {"jnp": jnp, "np": np, **user, _JAXPR: jaxpr}
        code = _JAXPR_NAME.sub(rf"{_JAXPR}['\1']", expression)
        return eval(compile(code, "<jaxstep>", "eval"), scope)

    # ------------------------------------------------------------ the user's frames

    def _user_chain(self) -> list[tuple[RawFrame, bool]]:
        """The Python frames of the paused equation, innermost first: ``(frame,
        whether an installed library's)``, those of enclosing equations after."""
        chain: list[tuple[RawFrame, bool]] = []
        seen: set[tuple[str, str]] = set()
        for state in reversed(self._interpreter.stack):
            node = state.node()
            if node is None:
                continue
            for raw in _csource.frames_of(_csource.eqn_traceback(node.eqn)):
                key = (raw.file, raw.function)
                if key not in seen:
                    seen.add(key)
                    chain.append((raw, is_library_file(raw.file)))
        return chain

    @property
    def _locals(self) -> LocalsLog:
        """The user's locals as the traced Python bound them, read on first use."""
        if self._locals_log is None:
            read, self._read_locals = self._read_locals, None
            try:
                self._locals_log = read() if read is not None else LocalsLog()
            except Exception:  # names then come from the source, as without a log
                self._locals_log = LocalsLog()
        return self._locals_log

    def _named_frames(self) -> list[RawFrame]:
        """The user's frames whose locals were read while tracing, innermost first."""
        known = self._locals.frames
        return [
            raw
            for raw, library in self._user_chain()
            if not library and (raw.file, raw.function) in known
        ]

    @property
    def user_frame(self) -> SourceLoc | None:
        """The user's Python frame the names are read in (``up``/``down`` move it),
        as ``file:line in function``; None where none is known."""
        frames = self._named_frames()
        if not frames:
            return None
        raw = frames[min(self._frame_offset, len(frames) - 1)]
        return loc_from_raw(raw)

    @property
    def in_library(self) -> str | None:
        """The installed library's function the paused equation runs in (``optax
        ... softmax_cross_entropy_with_integer_labels``), None in the user's code."""
        chain = self._user_chain()
        if not chain or not chain[0][1]:
            return None
        raw = chain[0][0]
        return f"{raw.function} ({short_path(raw.file)}:{raw.line})"

    def up(self) -> Stepper:
        """Read names in the frame that called the selected one (pdb's ``up``)."""
        frames = self._named_frames()
        if self._frame_offset + 1 >= len(frames):
            raise StepError("already in the outermost frame of the program")
        self._frame_offset += 1
        return self

    def down(self) -> Stepper:
        """Read names in the frame the selected one called (pdb's ``down``)."""
        if self._frame_offset == 0:
            raise StepError("already in the innermost frame")
        self._frame_offset -= 1
        return self

    def _traced_bindings(self) -> dict[str, Binding]:
        """The user's variables where the stepper is paused, from the snapshots of
        the selected frame and the frames that called it (the inner ones win)."""
        frames = self._named_frames()[self._frame_offset :]
        if not frames:
            return {}
        stack = self._interpreter.stack
        names = self._program.names

        def ran(var: Any) -> bool:
            return any(var in state.env for state in stack)

        def exists(var: Any) -> bool:
            return id(var) in names

        out: dict[str, Binding] = {}
        for raw in reversed(frames):
            snapshot = latest(
                self._locals.frames[(raw.file, raw.function)], ran, exists
            )
            if snapshot is not None:
                out.update(snapshot.names)
        return out

    def _read(self, atom: Any) -> Any:
        if _cj.is_literal(atom):
            return _cj.literal_value(atom)
        for state in reversed(self._interpreter.stack):
            if atom in state.env:
                return state.env[atom]
        raise KeyError(atom)

    def _traced_names(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, binding in self._traced_bindings().items():
            try:
                out[name] = value_of(binding, self._read)
            except (KeyError, ValueError, TypeError):
                continue  # a leaf with no value now (its equation has not run)
        return out

    @property
    def frames(self) -> list[Frame]:
        return [frame.record() for frame in self._interpreter.stack]

    @property
    def arg_names(self) -> dict[str, str]:
        """``{var name: the user's argument path}`` for the top-level inputs."""
        return _arg_names(self._interpreter.plan)

    @property
    def breakpoints(self) -> dict[str, Any]:
        """The active breakpoints: lines, primitives, nan, inf."""
        return self._breaks.as_dict()

    @property
    def user_names(self) -> dict[str, str]:
        """``{var name: the user's name}`` in the current frame, where known: the
        arguments (``params['w']``), the variables the source assigns (``h = ...``),
        a nested body's parameters and the top-level results (``result[0]``)."""
        interpreter = self._interpreter
        frame = interpreter.stack[-1] if interpreter.stack else interpreter.top
        if frame is None:
            return {}
        plan = frame.plan
        users = user_names_of(plan, frame.pc + 1)
        out: dict[str, str] = {}
        for var in (*plan.invars, *frame.env, *plan.outvars):
            found = users.of(var)
            if found:
                out.setdefault(plan.name(var), found[0])
        # the names the traced Python gave, the outer frames' first: a value the
        # inner frame names (a lambda's g) is shown by that name
        for name, binding in self._traced_bindings().items():
            for atom, leaf in zip(
                binding.atoms, leaf_names(name, binding), strict=True
            ):
                if atom is not None and not _cj.is_literal(atom) and atom in frame.env:
                    out[plan.name(atom)] = leaf
        return out

    def summaries(self) -> list[ValueSummary]:
        """``ValueSummary`` of every value in the current frame (with the user's
        names where known)."""
        user = self.user_names
        return [
            summarize_value(k, v, user_name=user.get(k, ""))
            for k, v in self.values.items()
        ]

    # --------------------------------------------------------------------- source

    def source_line(self, loc: SourceLoc | None = None) -> str | None:
        """The text of the current equation's source line (or of ``loc``), if readable."""
        return self._source.line(self._current_node(), loc)

    def source_context(
        self, context: int = 3
    ) -> tuple[str | None, list[tuple[int, str]]]:
        """``(file, [(line number, text), ...])`` around the current equation's line."""
        return self._source.context(self._current_node(), context)

    def source_lines(
        self, file: str | None = None
    ) -> tuple[str | None, list[tuple[int, str]], set[int]]:
        """The lines of ``file`` (by default the current equation's) spanning every
        equation in it, and which have any.

        Returns ``(file, [(line number, text)], {lines holding equations})``.
        """
        return self._source.lines(self._current_node(), file)

    def source_files(self) -> dict[str, list[int]]:
        """``{file: [lines holding equations]}``: every file or notebook cell
        (``In [3]``) the program's equations come from, where breakpoints can go."""
        return self._source.files()

    # ------------------------------------------------------------------ breakpoints

    def break_on(
        self,
        nan: bool = False,
        inf: bool = False,
        line: Any = None,
        primitive: str | Sequence[str] | None = None,
        condition: str | None = None,
    ) -> Stepper:
        """Add breakpoints; returns the stepper, so ``js.step(f)(x).break_on(nan=True).run()``.

        ``nan``/``inf`` stop right after the equation that produced one (``current`` is
        that equation). ``line`` (a number, ``"file:line"``, a ``SourceLoc`` or a list
        of them) stops before the first equation of each run of that line (once
        each time the line runs: the jits a library calls on it run through), and
        only where ``condition`` (a Python expression over the user's names, as
        ``"loss > 3"``) holds; a condition that raises stops, and ``condition_error``
        says why. ``primitive`` stops before each equation of that primitive.
        Unknown lines and primitives raise ``BreakpointError`` naming the ones the
        program has.
        """
        for name, value in (("nan", nan), ("inf", inf)):
            check_flag(
                value,
                name,
                where="Stepper.break_on",
                example=f"stepper.break_on({name}=True)",
            )
        names = [primitive] if isinstance(primitive, str) else primitive
        if primitive is not None and (
            not isinstance(names, Sequence)
            or not all(isinstance(p, str) for p in names)
        ):
            raise InvalidCallError(
                "Stepper.break_on: primitive must be a primitive name or a list of "
                f"them, got {short_repr(primitive, 40)}; write e.g. "
                "stepper.break_on(primitive='dot_general')"
            )
        self._breaks.add(
            nan=nan, inf=inf, line=line, primitive=primitive, condition=condition
        )
        return self

    @property
    def condition_error(self) -> str | None:
        """Why the breakpoint's condition could not be evaluated where the stepper
        stopped (it stops then, as pdb does); None otherwise."""
        return self._breaks.condition_error if self.reason == "breakpoint" else None

    def clear_breakpoints(self, line: Any = None) -> None:
        """Remove the breakpoint at ``line`` (all breakpoints when None)."""
        self._breaks.clear(line)

    def toggle_breakpoint(self, line: Any) -> bool:
        """Set the line breakpoint if absent, else remove it; returns whether it is set."""
        return self._breaks.toggle(line)

    # --------------------------------------------------------------------- commands

    def step(self) -> Stepper:
        """Run the current equation, or enter its nested jaxpr; pause at the next one."""
        self._check_running("step")
        self._pull(_always, "step")
        return self

    def next(self) -> Stepper:
        """Run the current equation, nested jaxprs included; pause at the next one."""
        self._check_running("next")
        stack = self._interpreter.stack
        depth = len(stack)
        self._pull(lambda node: len(stack) <= depth, "next")
        return self

    def finish(self) -> Stepper:
        """Run to the end of the current nested jaxpr; pause at the parent's next equation."""
        self._check_running("finish")
        stack = self._interpreter.stack
        depth = len(stack)
        self._pull(lambda node: len(stack) < depth, "finish")
        return self

    def run(self, until: Any = None) -> Stepper:
        """Run until a breakpoint, the ``until`` target or the end.

        ``until``: a ``SourceLoc``, ``"file:line"``, a line number, a primitive name,
        or ``callable(EqnInfo, values) -> bool``; the stepper pauses before the first
        equation that matches.
        """
        self._check_running("run")
        if until is None:
            self._pull(_never, "done")
        else:
            self._pull(until_target(self._program, until, lambda: self.values), "until")
        return self

    cont = run

    def _check_running(self, command: str) -> None:
        if self._done:
            what = "failed" if self._failed is not None else "finished"
            raise StepperFinishedError(
                f"cannot {command}(): the program has {what} (result in .result); "
                "start again with js.step(f)(*args)"
            )

    def _pull(self, stop: Target, reason: str) -> None:
        """Run until ``stop`` holds before an equation, a breakpoint, or the end."""
        self._frame_offset = 0
        self._after = False
        self.finding = None
        try:
            outcome = self._interpreter.advance(stop)
        except StepError as exc:
            self._done = True
            self._failed = exc
            self.reason = "error"
            raise
        except KeyboardInterrupt:
            self.reason = "interrupted"
            if not self._interpreter.alive:
                # Interrupted outside an equation: the run cannot be resumed.
                self._done = True
                self._failed = StepError(
                    "the stepper was interrupted between equations and cannot go on; "
                    "start again with js.step(f)(*args)"
                )
            raise
        if outcome == "done":
            self._done = True
            self.reason = "done"
            self._result = jax.tree_util.tree_unflatten(
                self._out_tree, self._interpreter.outputs
            )
            if self._outputs is not None:
                # what the library's wrapper returns (nnx.jit, eqx.filter_jit)
                self._result, self.state_updates = self._outputs(self._result)
                self._outputs = None
        elif outcome == "after":
            self._after = True
            self.finding = self._interpreter.finding
            self.reason = self.finding.kind if self.finding is not None else "nan"
        else:
            self.reason = reason if outcome == "stop" else outcome

    def __repr__(self) -> str:
        if self._done:
            return printable(f"<Stepper of {self.function_name}: done>")
        cur = self.current
        where = (
            f" at {cur.source}" if cur is not None and cur.source is not None else ""
        )
        prim = cur.primitive if cur is not None else "?"
        return printable(f"<Stepper of {self.function_name}: paused at {prim}{where}>")


_JAXPR = "__jaxpr__"
#: ``$a``: the jaxpr's variable ``a`` (as pdb's ``$`` convenience variables)
_JAXPR_NAME = re.compile(r"\$([A-Za-z_]\w*)")


def _arg_names(plan: Plan) -> dict[str, str]:
    names = arg_names(plan)
    return {
        plan.name(var): str(user)
        for var, user in zip(plan.invars, names, strict=False)
        if user is not None
    }


def _namespace(frame: FrameState) -> dict[str, Any]:
    """The frame's values by the names the source assigns (read with ``ast``) and
    the arguments' pytree paths."""
    plan = frame.plan
    users = user_names_of(plan, frame.pc + 1)
    namespace: dict[str, Any] = {}
    assigned: dict[str, Any] = {}
    for var, val in frame.env.items():
        for name in users.of(var):
            assigned[name] = val
    for name, val in assigned.items():
        if name.isidentifier():
            namespace[name] = val
        else:
            short = alias(name)
            if short is not None:
                namespace.setdefault(short, val)
            namespace[name] = val
    for name, val in assigned.items():
        if not name.isidentifier():
            add_path(namespace, name, val)
    return namespace


def _always(node: Node) -> bool:
    return True


def _never(node: Node) -> bool:
    return False


# ------------------------------------------------------------------------ the API

Statics = tuple[tuple[Any, ...], tuple[Any, ...]]


def _short_name(fun: Any) -> str:
    """``f`` for ``test.<locals>.f``; ``Model.apply`` stays as it is."""
    return qualname(fun).rsplit("<locals>.", 1)[-1]


def _input_leaves(fn: Any, staged: Staged, api_name: str = "js.step") -> list[Any]:
    """The concrete values bound to the jaxpr's inputs, in order (``staged.inputs``:
    the call's arguments less its statics, or what nnx.jit / eqx.filter_jit trace)."""
    leaves = jax.tree_util.tree_leaves(staged.inputs)
    expected = len(jax.tree_util.tree_leaves(staged.traced.args_info))
    if len(leaves) != expected:
        raise InvalidCallError(
            f"{api_name} could not match the arguments of {qualname(fn)} to its "
            f"{expected} traced inputs ({len(leaves)} values); pass static arguments "
            f"with {api_name}(f, static_argnums=...)"
        )
    flat = jax.tree_util.tree_flatten_with_path(staged.inputs)[0]
    names = staged.input_names
    for index, (path, leaf) in enumerate(flat):
        if isinstance(leaf, jax.ShapeDtypeStruct):
            name = names[index] if index < len(names) else jax.tree_util.keystr(path)
            shape = ",".join(map(str, leaf.shape))
            raise InvalidCallError(
                f"{api_name} needs concrete values, but argument {name} is a "
                f"ShapeDtypeStruct {short_dtype(leaf.dtype)}[{shape}]; pass an array "
                "(js.jaxpr, js.hlo and js.memory take shapes)"
            )
    return leaves


def _stage(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    statics: Statics,
    api_name: str = "js.step",
    locals_log: LocalsLog | None = None,
) -> tuple[Staged, list[Any]]:
    nums, names = statics
    with (
        record_locals(locals_log)
        if locals_log is not None
        else contextlib.nullcontext()
    ):
        staged = stage(
            fun,
            args,
            kwargs,
            static_argnums=nums,
            static_argnames=names,
            api_name=api_name,
            fresh=locals_log is not None,
        )
    return staged, _input_leaves(fun, staged, api_name)


def _stepper_of(
    fun: Callable[..., Any],
    staged: Staged,
    leaves: list[Any],
    locals_log: LocalsLog | None = None,
    read_locals: Callable[[], LocalsLog] | None = None,
) -> Stepper:
    traced = staged.traced
    return Stepper(
        traced.jaxpr,
        leaves,
        traced.out_tree,
        function_name=_short_name(fun),
        defined_at=loc_of_function(fun),
        input_names=staged.input_names,
        locals_log=locals_log,
        outputs=staged.outputs,
        read_locals=read_locals,
    )


def _start(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    statics: Statics,
) -> Stepper:
    """A ``Stepper`` of ``fun(*args, **kwargs)``, paused before its first equation."""
    staged, leaves = _stage(fun, args, kwargs, statics)
    first = staged.traced.jaxpr

    def read_locals() -> LocalsLog:
        # Reading locals needs a line tracer while JAX traces, which slows all of
        # Python's tracing (about 2x on 3.11): only a stepper asked for names pays,
        # with a second trace whose variables are matched to the first's.
        log = LocalsLog()
        second, _ = _stage(fun, args, kwargs, statics, locals_log=log)
        mapping = same_vars(first, second.traced.jaxpr)
        return renamed(log, mapping) if mapping is not None else LocalsLog()

    return _stepper_of(fun, staged, leaves, read_locals=read_locals)


def _non_finite(values: Any) -> tuple[bool, bool]:
    """Whether any floating leaf of ``values`` holds a NaN, and an Inf."""
    nan = inf = False
    for leaf in jax.tree_util.tree_leaves(values):
        dtype = getattr(leaf, "dtype", None)
        if not is_inexact(np.result_type(leaf) if dtype is None else dtype):
            continue
        data = host_array(leaf)
        nan = nan or bool(np.isnan(data).any())
        inf = inf or bool(np.isinf(data).any())
    return nan, inf


def _outputs(staged: Staged, leaves: list[Any]) -> Any:
    """The program's outputs, compiled and run (far faster than stepping it)."""
    from jax.extend.core import jaxpr_as_fun

    return jax.jit(jaxpr_as_fun(staged.traced.jaxpr))(*leaves)


@takes_the_function_alone
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
    statics = static_args(static_argnums, static_argnames, "js.step")
    return staged(fun, "js.step", functools.partial(_start, statics=statics))


def find_nan(
    fun: Callable[..., Any],
    *,
    inf: bool | None = None,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., NanFinding | NanInInput | None]:
    """``js.find_nan``'s interpreted mode (``mode="interpreted"``): the first equation
    of ``fun(*args)`` that produces a NaN (or Inf), found by stepping the program,
    or None. The public function, its arguments and its example are
    ``jaxscope.find_nan`` (``_probe.nan``), which calls this one."""
    check_flag(
        inf,
        "inf",
        where="js.find_nan",
        example="js.find_nan(f, inf=True)",
        none_ok=True,
    )
    statics = static_args(static_argnums, static_argnames, "js.find_nan")

    def hunt(
        fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> NanFinding | NanInInput | None:
        staged, leaves = _stage(fun, args, kwargs, statics, "js.find_nan")
        for index, leaf in enumerate(leaves):
            leaf_nan, leaf_inf = _non_finite(leaf)
            if leaf_nan or (leaf_inf and inf):
                names = staged.input_names
                path = names[index] if index < len(names) else f"input {index}"
                kind = "nan" if leaf_nan else "inf"
                value = summarize_value(path, leaf, user_name=path)
                return NanInInput(path=path, kind=kind, value=value)
        try:
            out_nan, out_inf = _non_finite(_outputs(staged, leaves))
        except Exception:
            # The compiled program failed (an XLA error, out of memory): stepping it
            # names the failing equation in a StepError, as js.step does.
            out_nan, out_inf = True, bool(inf)
        hunt_inf = out_inf if inf is None else inf
        if not out_nan and not (out_inf and hunt_inf) and inf is not True:
            return None
        stepper = _stepper_of(fun, staged, leaves)
        stepper.break_on(nan=True, inf=hunt_inf).run()
        if stepper.done or stepper.finding is None:
            return None
        return dataclasses.replace(stepper.finding, frames=stepper.frames)

    return staged(fun, "js.find_nan", hunt)
