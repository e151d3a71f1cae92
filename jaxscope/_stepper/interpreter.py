"""The equation runner: a ``Plan`` run on concrete values, pausing between equations.

The interpreter is a tree of generators: each frame yields ``BEFORE`` before each of
its equations (and ``BREAK_AFTER`` after one that produced a NaN/Inf, when watching
for them); ``advance`` pulls these events until a stop condition or a breakpoint.
Leaf equations run with ``primitive.bind`` exactly as JAX's own ``eval_jaxpr`` does;
the equations that hold nested jaxprs (jit bodies, closed_call, scan and while
bodies per iteration, the taken cond/switch branch, custom_jvp/custom_vjp primal
bodies, checkpoint) are entered through the ``RULES`` below, so every equation at
every level pauses.
"""

from __future__ import annotations

import contextlib
import inspect
import signal
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxscope._exceptions import StepError
from jaxscope._gc import young_collections_only
from jaxscope._stepper.breakpoints import Breakpoints, Target
from jaxscope._stepper.names import user_names_of
from jaxscope._stepper.plan import Node, Plan, read, write
from jaxscope._stepper.values import (
    Frame,
    NanFinding,
    ValueSummary,
    nonfinite_kind,
    summarize_value,
)
from jaxscope.compat import jaxpr as _cj

#: Events: paused before the current equation, right after it made a NaN/Inf, or
#: before it again after a KeyboardInterrupt stopped it (it runs again on resume).
BEFORE = 0
BREAK_AFTER = 1
INTERRUPTED = 2

#: What a frame's generator yields (events) and returns (its results).
Run = Generator[int, None, list[Any]]
#: A nested-jaxpr rule's run: the equation's results, or None to run it unentered.
Entered = Generator[int, None, list[Any] | None]
Rule = Callable[["Interpreter", Node, list[Any]], Entered]


class FrameState:
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
        plan: Plan,
        label: str,
        call: Node | None,
        iteration: int | None = None,
        length: int | None = None,
    ):
        self.plan = plan
        self.label = label
        self.call = call
        self.primitive = call.primitive if call is not None else None
        self.iteration = iteration
        self.length = length
        self.env: dict[Any, Any] = {}
        self.pc = 0

    def values(self) -> dict[str, Any]:
        """``{var name: value}`` of the variables defined so far."""
        name = self.plan.name
        return {name(var): val for var, val in self.env.items()}

    def node(self) -> Node | None:
        """The equation the frame is at; None once it ran them all."""
        nodes = self.plan.nodes
        return nodes[self.pc] if self.pc < len(nodes) else None

    def record(self) -> Frame:
        """The public ``Frame`` record of this frame as it is now."""
        nodes = self.plan.nodes
        pos = min(self.pc, len(nodes))
        node = nodes[pos] if pos < len(nodes) else None
        return Frame(
            label=self.label,
            primitive=self.primitive,
            call=self.call.info if self.call is not None else None,
            path=self.plan.path,
            iteration=self.iteration,
            length=self.length,
            position=pos,
            n_eqns=len(nodes),
            source=node.info.source if node is not None else None,
        )


class Interpreter:
    """Runs one program's ``Plan`` on ``flat_args``, a step at a time (``advance``).

    ``stack``: the live frames, outermost first (``top`` stays after the end);
    ``finding``: the last watched NaN/Inf; ``outputs``: the results once done.
    """

    def __init__(
        self, plan: Plan, breaks: Breakpoints, label: str, flat_args: list[Any]
    ) -> None:
        self.plan = plan
        self.breaks = breaks
        self.stack: list[FrameState] = []
        self.top: FrameState | None = None
        self.finding: NanFinding | None = None
        self.outputs: list[Any] = []
        self._events = self._main(label, flat_args)
        #: a Ctrl-C arrived between equations: pause before the next one
        self._interrupted = False
        #: an equation is running: a Ctrl-C interrupts it at once
        self._binding = False

    @contextlib.contextmanager
    def _interrupts(self) -> Iterator[None]:
        """While the run goes on, a Ctrl-C between equations marks the run to pause
        at the next one (so the loop iteration and frame it reached are kept);
        during an equation it interrupts it. Only where Python's own handler is
        set, in the main thread; the handler is restored on every exit."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT)
        if previous is not signal.default_int_handler:
            yield
            return

        def on_sigint(signum: int, frame: Any) -> None:
            # The flag first: code under the equation (JAX's own included) may
            # catch the KeyboardInterrupt raised below, or turn it into another
            # error; the run still pauses.
            self._interrupted = True
            if self._binding:
                raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    @property
    def alive(self) -> bool:
        """False once the run ended or an exception escaped it."""
        return inspect.getgeneratorstate(self._events) != inspect.GEN_CLOSED

    def advance(self, stop: Target) -> str:
        """Run to where ``stop`` holds (``"stop"``), a breakpoint (``"breakpoint"``),
        a watched NaN/Inf (``"after"``) or the end (``"done"``); ``StepError`` when an
        equation (or the interpreter) fails.

        A Ctrl-C (SIGINT) raises ``KeyboardInterrupt`` paused before the next
        equation of the innermost frame (inside the loop iteration it reached), or
        before the equation it interrupted (which runs again on resume)."""
        stack, breaks = self.stack, self.breaks
        self._interrupted = False
        with young_collections_only() as collect, self._interrupts():
            for count, event in enumerate(self._events):
                if event == BREAK_AFTER:
                    return "after"
                if event == INTERRUPTED or self._interrupted:
                    self._interrupted = False
                    raise KeyboardInterrupt
                if count % _COLLECT_EVERY == _COLLECT_EVERY - 1:
                    collect()
                frame = stack[-1]
                node = frame.plan.nodes[frame.pc]
                if stop(node):
                    return "stop"
                if (breaks.lines or breaks.primitives) and breaks.stops_before(node):
                    return "breakpoint"
        return "done"

    def _main(self, label: str, flat_args: list[Any]) -> Generator[int, None, None]:
        # Started by the first advance(); flat_args is emptied: the stepper keeps none.
        try:
            frame = self.top = FrameState(self.plan, label, None)
            args = [
                a if isinstance(a, jax.Array) else jax.device_put(a) for a in flat_args
            ]
            flat_args.clear()
            outs = yield from self.run_frame(frame, args)
            self.outputs = [
                _as_array(val, var)
                for val, var in zip(outs, self.plan.outvars, strict=False)
            ]
        except StepError:
            raise
        except Exception as exc:  # a bug or an unsupported primitive: fail clearly
            raise _internal_error(exc) from exc

    def run_frame(self, frame: FrameState, args: Sequence[Any]) -> Run:
        """Run ``frame``'s equations on ``args``; return its results."""
        plan = frame.plan
        env = frame.env
        env.update(zip(plan.constvars, plan.consts, strict=False))
        env.update(zip(plan.invars, args, strict=False))
        self.stack.append(frame)
        try:
            for k, node in enumerate(plan.nodes):
                frame.pc = k
                yield BEFORE
                while True:
                    # Ctrl-C while an equation runs leaves the frame paused before
                    # it; resuming runs it again.
                    try:
                        invals = [read(env, v) for v in node.invars]
                        rule = RULES.get(node.primitive)
                        outs = finding = None
                        if rule is not None:
                            outs = yield from _enter(self, rule, node, invals)
                        if outs is None:
                            self._binding = True
                            try:
                                outs = _bind(node, invals)
                            except StepError:
                                # failed while a Ctrl-C arrived: interrupted (a
                                # real failure comes back when it runs again)
                                if not self._interrupted:
                                    raise
                                raise KeyboardInterrupt from None
                            finally:
                                self._binding = False
                            if self.breaks.nan or self.breaks.inf:
                                finding = _finding(node, invals, outs, self.breaks)
                        break
                    except KeyboardInterrupt:
                        frame.pc = k
                        yield INTERRUPTED
                write(env, node.outvars, outs)
                if finding is not None:
                    self.finding = finding
                    yield BREAK_AFTER
            frame.pc = len(plan.nodes)
            return [read(env, v) for v in plan.outvars]
        finally:
            self.stack.pop()

    def call(
        self,
        node: Node,
        label: str,
        args: Sequence[Any],
        title: str,
        iteration: int | None = None,
        length: int | None = None,
    ) -> Run:
        """Run ``node``'s nested jaxpr ``label`` as a new frame titled ``title``."""
        frame = FrameState(node.subs[label], title, node, iteration, length)
        return (yield from self.run_frame(frame, args))


#: Equations between the young-generation collections of a run.
_COLLECT_EVERY = 2_000


def _enter(
    interpreter: Interpreter, rule: Rule, node: Node, invals: list[Any]
) -> Entered:
    try:
        return (yield from rule(interpreter, node, invals))
    except StepError:
        raise
    except Exception as exc:
        raise eqn_error(node, exc) from exc


def _finding(
    node: Node, invals: Sequence[Any], outs: Sequence[Any], watch: Breakpoints
) -> NanFinding | None:
    """The finding when ``node`` made a watched NaN/Inf that no input had."""
    nan, inf = watch.nan, watch.inf
    kind = next((k for v in outs if (k := nonfinite_kind(v, nan, inf))), None)
    if kind is None:
        return None
    for val in invals:
        if nonfinite_kind(val, kind == "nan", kind == "inf") is not None:
            return None  # propagated from an input, not produced here
    users = user_names_of(node.plan, node.index + 1)

    def summaries(
        pairs: Sequence[tuple[str, str]], atoms: Sequence[Any], values: Sequence[Any]
    ) -> list[ValueSummary]:
        # each value with the user's name of its variable (model.linear.kernel, h)
        out: list[ValueSummary] = []
        for (name, _), atom, value in zip(pairs, atoms, values, strict=False):
            user = [] if _cj.is_literal(atom) else users.of(atom)
            out.append(summarize_value(name, value, user_name=user[0] if user else ""))
        return out

    return NanFinding(
        eqn=node.info,
        kind=kind,
        inputs=summaries(node.info.inputs, node.invars, invals),
        outputs=summaries(node.info.outputs, node.outvars, outs),
        frames=[],
    )


def _bind(node: Node, invals: list[Any]) -> list[Any]:
    try:
        return node.runner()(invals)
    except Exception as exc:
        raise eqn_error(node, exc) from exc


def eqn_error(node: Node, exc: BaseException) -> StepError:
    """The one-line ``StepError`` for equation ``node`` raising ``exc``."""
    where = f" at {node.info.source}" if node.info.source is not None else ""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return StepError(
        f"equation {node.info.primitive} (path {node.info.path}){where} raised "
        f"{type(exc).__name__}: {first}; the stepper stopped (see .values)"
    )


def _internal_error(exc: Exception) -> StepError:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return StepError(
        f"the stepper failed: {type(exc).__name__}: {first}; "
        "please report it with the program"
    )


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


def _label_of(node: Node, *names: str) -> str | None:
    for name in names:
        if name in node.subs:
            return name
    return None


def _enter_call(interpreter: Interpreter, node: Node, invals: list[Any]) -> Entered:
    label = _label_of(node, "jaxpr", "call_jaxpr", "fun_jaxpr")
    if label is None:
        return None
    prim = node.primitive
    name = node.eqn.params.get("name")
    title = f"{prim}({name})" if name else prim
    return (yield from interpreter.call(node, label, invals, title))


def _enter_scan(interpreter: Interpreter, node: Node, invals: list[Any]) -> Entered:
    p = node.eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    length, reverse = int(p["length"]), bool(p["reverse"])
    consts, carry, xs = invals[:nc], list(invals[nc : nc + nk]), invals[nc + nk :]
    rows = [list(jnp.asarray(x)) if length else [] for x in xs]
    ys: list[list[Any]] = []
    order = range(length - 1, -1, -1) if reverse else range(length)
    for i in order:
        args = [*consts, *carry, *(r[i] for r in rows)]
        out = yield from interpreter.call(node, "jaxpr", args, "scan body", i, length)
        carry, y = list(out[:nk]), out[nk:]
        ys.append(y)
    if reverse:
        ys.reverse()
    stacked = []
    for j, var in enumerate(node.subs["jaxpr"].outvars[nk:]):
        aval = var.aval
        if ys:
            stacked.append(jnp.stack([jnp.asarray(y[j], dtype=aval.dtype) for y in ys]))
        else:
            stacked.append(jnp.zeros((0, *aval.shape), aval.dtype))
    return [*carry, *stacked]


def _enter_while(interpreter: Interpreter, node: Node, invals: list[Any]) -> Entered:
    p = node.eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts, carry = invals[:cn], invals[cn : cn + bn], list(invals[cn + bn :])
    i = 0
    while True:
        cond_args = [*cconsts, *carry]
        (pred,) = yield from interpreter.call(
            node, "cond_jaxpr", cond_args, "while cond", i
        )
        if not bool(np.asarray(pred)):
            return carry
        body_args = [*bconsts, *carry]
        carry = list(
            (
                yield from interpreter.call(
                    node, "body_jaxpr", body_args, "while body", i
                )
            )
        )
        i += 1


def _enter_cond(interpreter: Interpreter, node: Node, invals: list[Any]) -> Entered:
    n = len(node.eqn.params["branches"])
    index = int(np.clip(int(np.asarray(invals[0])), 0, n - 1))
    label = f"branches[{index}]"
    if label not in node.subs:
        return None
    return (
        yield from interpreter.call(node, label, invals[1:], f"cond branch {index}")
    )


def _enter_custom(interpreter: Interpreter, node: Node, invals: list[Any]) -> Entered:
    label = _label_of(node, "call_jaxpr", "fun_jaxpr")
    if label is None:
        return None
    return (yield from interpreter.call(node, label, invals, node.primitive))


def _enter_remat(interpreter: Interpreter, node: Node, invals: list[Any]) -> Entered:
    if "jaxpr" not in node.subs:
        return None
    return (yield from interpreter.call(node, "jaxpr", invals, node.primitive))


RULES: dict[str, Rule] = {
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
