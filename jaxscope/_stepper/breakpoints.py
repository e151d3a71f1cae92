"""Where the stepper stops: line and primitive breakpoints, NaN/Inf watches and the
targets of ``run(until=...)``, each checked against the program's equations."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxscope._exceptions import BreakpointError
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._stepper.plan import Node, Program

#: A stop condition, asked before each equation (the stepper pauses when it is true).
Target = Callable[[Node], bool]


def parse_location(spec: Any, what: str) -> tuple[str | None, int]:
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


def file_matches(want: str, have: str) -> bool:
    """``want`` names ``have``: equal (spaces ignored, for ``In[3]``), a basename or a
    path suffix of it."""
    if want.replace(" ", "") == have.replace(" ", ""):
        return True
    return have.endswith("/" + want.lstrip("/"))


def starts_line(node: Node, file: str | None, line: int) -> bool:
    """Whether ``node`` is the first equation of source line ``line`` (of ``file``)."""
    return node.line_start and _at_line(node.info, file, line)


class Breakpoints:
    """The breakpoints of one program; lines and primitives it lacks are refused.

    ``program`` gives the equations and primitives (made when first checked).
    """

    def __init__(self, program: Program) -> None:
        self.program = program
        self.lines: set[tuple[str | None, int]] = set()
        #: a line breakpoint's condition (a Python expression over the user's names)
        self.conditions: dict[tuple[str | None, int], str] = {}
        self.primitives: set[str] = set()
        self.nan = False
        self.inf = False
        #: evaluates a condition where the stepper is paused (set by the stepper)
        self.evaluate: Callable[[str], Any] | None = None
        #: why the last condition could not be evaluated (the stop says so)
        self.condition_error: str | None = None

    def add(
        self,
        nan: bool = False,
        inf: bool = False,
        line: Any = None,
        primitive: str | Sequence[str] | None = None,
        condition: str | None = None,
    ) -> None:
        """Add breakpoints (see ``Stepper.break_on``)."""
        if condition is not None:
            condition = checked_condition(condition)
            if line is None:
                raise BreakpointError(
                    "break_on(condition=...) goes with a line: write e.g. "
                    "break_on(line=42, condition='loss > 3')"
                )
        if nan:
            self.nan = True
        if inf:
            self.inf = True
        if line is not None:
            specs = line if isinstance(line, (list, tuple, set)) else [line]
            for spec in specs:
                key = checked_line(self.program.eqns, spec, "break_on(line=...)")
                self.lines.add(key)
                if condition is None:
                    self.conditions.pop(key, None)
                else:
                    self.conditions[key] = condition
        if primitive is not None:
            prims = [primitive] if isinstance(primitive, str) else list(primitive)
            for prim in prims:
                self.primitives.add(
                    checked_primitive(
                        self.program.primitives, prim, "break_on(primitive=...)"
                    )
                )

    def clear(self, line: Any = None) -> None:
        """Remove the breakpoint at ``line`` (all breakpoints when None)."""
        if line is None:
            self.lines.clear()
            self.conditions.clear()
            self.primitives.clear()
            self.nan = self.inf = False
            return
        key = parse_location(line, "clear_breakpoints(line=...)")
        self.lines.discard(key)
        self.conditions.pop(key, None)

    def toggle(self, line: Any) -> bool:
        """Set the line breakpoint if absent, else remove it; returns whether it is set."""
        key = checked_line(self.program.eqns, line, "toggle_breakpoint(line=...)")
        if key in self.lines:
            self.lines.discard(key)
            self.conditions.pop(key, None)
            return False
        self.lines.add(key)
        return True

    def as_dict(self) -> dict[str, Any]:
        """The active breakpoints: lines, primitives, nan, inf."""
        return {
            "lines": sorted(
                (f"{f}:{n}" if f is not None else str(n)) for f, n in self.lines
            ),
            "conditions": {
                (f"{f}:{n}" if f is not None else str(n)): condition
                for (f, n), condition in self.conditions.items()
            },
            "primitives": sorted(self.primitives),
            "nan": self.nan,
            "inf": self.inf,
        }

    def stops_before(self, node: Node) -> bool:
        """Whether a line or primitive breakpoint is set on ``node``."""
        if node.primitive in self.primitives:
            return True
        for file, line in self.lines:
            if starts_line(node, file, line):
                condition = self.conditions.get((file, line))
                if condition is None or self._holds(condition):
                    return True
        return False

    def _holds(self, condition: str) -> bool:
        """Whether ``condition`` holds here; True (a stop) when it cannot be
        evaluated, as pdb does, with ``condition_error`` saying why."""
        self.condition_error = None
        if self.evaluate is None:
            return True
        try:
            return bool(self.evaluate(condition))
        except Exception as exc:
            text = str(exc).strip().splitlines()
            self.condition_error = (
                f"the condition {condition} raised {type(exc).__name__}: "
                f"{text[0] if text else ''}; stopped here"
            )
            return True


def checked_condition(condition: Any) -> str:
    """``condition`` stripped, which must be one Python expression."""
    if not isinstance(condition, str) or not condition.strip():
        raise BreakpointError(
            f"break_on(condition=...) must be a Python expression as a string, got "
            f"{condition!r}; write e.g. condition='loss > 3'"
        )
    text = condition.strip()
    try:
        compile(text, "<condition>", "eval")
    except SyntaxError:
        raise BreakpointError(
            f"break_on(condition=...): {text!r} is not a Python expression; write "
            "e.g. condition='loss > 3'"
        ) from None
    return text


def until_target(
    program: Program, target: Any, values: Callable[[], dict[str, Any]]
) -> Target:
    """The stop condition of ``run(until=target)``: a line (number, ``"file:line"`` or
    ``SourceLoc``), a primitive name, or ``callable(EqnInfo, values) -> bool``
    (``values()`` gives the current frame's values)."""
    if callable(target) and not isinstance(target, (str, SourceLoc)):
        fn = target
        _check_until_signature(fn)
        return lambda node: bool(fn(node.info, values()))
    if isinstance(target, str) and not target.strip().isdigit() and ":" not in target:
        prim = checked_primitive(program.primitives, target.strip(), "run(until=...)")
        return lambda node: node.primitive == prim
    file, line = checked_line(program.eqns, target, "run(until=...)")
    return lambda node: starts_line(node, file, line)


def _check_until_signature(fn: Callable[..., Any]) -> None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: call it
        return
    try:
        signature.bind(None, None)
    except TypeError:
        raise BreakpointError(
            f"run(until=...): a callable target is called with (eqn, values), but "
            f"{getattr(fn, '__name__', type(fn).__name__)}{signature} does not take "
            "them; write e.g. run(until=lambda eqn, values: eqn.primitive == 'dot_general')"
        ) from None


def checked_line(eqns: list[EqnInfo], spec: Any, what: str) -> tuple[str | None, int]:
    """``(file or None, line)`` of ``spec``, where one of ``eqns`` must be."""
    file, line = parse_location(spec, what)
    if not any(_at_line(i, file, line) for i in eqns):
        raise _no_equation_at(eqns, file, line, what)
    return (file, line)


def checked_primitive(present: list[str], prim: Any, what: str) -> str:
    """``prim``, which must be one of the program's primitives ``present``."""
    if not isinstance(prim, str) or prim not in present:
        raise BreakpointError(
            f"{what}: no {prim!r} equation in this program; primitives present: "
            f"{', '.join(present)}"
        )
    return prim


def _at_line(info: EqnInfo, file: str | None, line: int) -> bool:
    src = info.source
    return (
        src is not None
        and src.line == line
        and (file is None or file_matches(file, src.file))
    )


def _no_equation_at(
    eqns: list[EqnInfo], file: str | None, line: int, what: str
) -> BreakpointError:
    """The error naming the lines that have equations (in ``file``'s files if any)."""
    files = {i.source.file for i in eqns if i.source is not None}
    if file is not None:
        files = {f for f in files if file_matches(file, f)} or files
    lines = sorted(
        {i.source.line for i in eqns if i.source is not None and i.source.file in files}
    )
    where = f" of {file}" if file is not None else ""
    shown = ", ".join(str(n) for n in lines) or "none"
    return BreakpointError(
        f"{what}: no equation at line {line}{where}; lines with equations: {shown}"
    )
