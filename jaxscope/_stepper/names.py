"""The user's names of a plan's variables, read from the program and its source.

A variable gets a name only where the name certainly holds its value:

- an input: the traced function's argument (``x``, the pytree path ``params['w']``);
  in a nested jaxpr, the parameter of the body function (``h`` of ``def cell(h,
  x)``), else, for a value passed through unchanged (a jit's argument, a loop's
  constant), the outer variable's name;
- a statement's result: the equations one execution of a simple assignment made
  (``h = jnp.tanh(x @ w)``), read from the source with ``ast`` at every user frame
  inside the stepped function, name their one result, the output none of them reads
  (for ``a, b = ...``, the outputs of their last equation, when there are exactly as
  many); one run of a Python loop is told from the next by the bytecode offset;
- a top-level result: its path (``result['out']``), when nothing else names it.

Equations of lambdas and comprehensions, of library files, and frames outside the
function being stepped never name anything.
"""

from __future__ import annotations

import ast
import functools
import keyword
import linecache
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jaxscope._records import SourceLoc
from jaxscope._source import is_library_file
from jaxscope._stepper.plan import Node, Plan, arg_names
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import stepper as _cs

_CALLS = frozenset(
    (
        "jit",
        "closed_call",
        "core_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "checkpoint",
        "remat",
    )
)


def _passed_through(
    primitive: str, params: Any, label: str
) -> tuple[int, int | None] | None:
    """Which inputs a nested jaxpr's leading binders receive unchanged: ``(offset into
    the equation's inputs, how many, None for all)``; a loop's carry changes, so only
    its constants count. None for primitives not known here."""
    if primitive in _CALLS:
        return 0, None
    if primitive == "cond":
        return 1, None
    if primitive == "scan":
        return 0, params["num_consts"]
    if primitive == "while":
        if label == "cond_jaxpr":
            return 0, params["cond_nconsts"]
        return params["cond_nconsts"], params["body_nconsts"]
    return None


@dataclass(slots=True)
class _Run:
    """The equations (node indices) of one execution of one statement."""

    first: int
    position: tuple[int, int]
    targets: tuple[str, ...]
    level: int
    members: list[int] = field(default_factory=list)
    last_position: tuple[int, int] | None = None


class PlanNames:
    """The user's names of one plan's variables, found as far as they are needed:
    ``upto(k)`` reads the statements of the plan's first ``k`` equations (and the
    rest of any statement they begin), so a display at equation ``k`` costs what
    those equations do, not the whole program."""

    def __init__(self, plan: Plan, outer: PlanNames | None) -> None:
        self.plan = plan
        self._names: dict[int, list[tuple[int, str]]] = {}
        self._results: dict[int, str] = {}
        self._cursor = 0
        self._open: dict[tuple[Any, ...], _Run] = {}
        call = plan.call
        if outer is not None and call is not None:
            outer.upto(call.index)
        _input_names(plan, outer, self._add)
        if call is None:
            paths = _cj.jaxpr_result_paths(plan.jaxpr) or ()
            for var, path in zip(plan.outvars, paths, strict=False):
                if path and not _cj.is_literal(var):
                    self._results[id(var)] = path

    def _add(self, var: Any, name: str, level: int = -1) -> None:
        if not name or _cj.is_literal(var):
            return
        found = self._names.setdefault(id(var), [])
        if all(name != n for _, n in found):
            found.append((level, name))
            found.sort(key=lambda item: item[0])

    def of(self, var: Any) -> list[str]:
        """``var``'s names, the most specific first (its result path when none)."""
        found = self._names.get(id(var))
        if found:
            return [name for _, name in found]
        path = self._results.get(id(var))
        return [path] if path is not None else []

    def upto(self, end: int) -> PlanNames:
        """Read the statements of the first ``end`` equations; returns itself."""
        nodes = self.plan.nodes
        defined_at = self.plan.program.defined_at
        while self._cursor < len(nodes) and (
            self._cursor < end or any(r.first < end for r in self._open.values())
        ):
            self._visit(self._cursor, defined_at)
            self._cursor += 1
        if self._cursor == len(nodes):
            for run in self._open.values():
                self._close(run)
            self._open.clear()
        return self

    def _visit(self, k: int, defined_at: SourceLoc | None) -> None:
        node, open_runs = self.plan.nodes[k], self._open
        keys = set()
        for key, position, targets, level in _levels(node, self.plan, defined_at):
            keys.add(key)
            run = open_runs.get(key)
            # The statement's first instruction again: the next execution of it (a
            # Python loop), unless that instruction made several equations.
            restart = (
                run is not None
                and position == run.position
                and position[1] >= 0
                and run.last_position != position
            )
            if run is None or run.members[-1] != k - 1 or restart:
                if run is not None:
                    self._close(run)
                run = open_runs[key] = _Run(k, position, targets, level)
            run.members.append(k)
            run.last_position = position
        for key in [key for key in open_runs if key not in keys]:
            self._close(open_runs.pop(key))

    def _close(self, run: _Run) -> None:
        for level, var, name in _named(self.plan.nodes, run):
            self._add(var, name, level)


def _input_names(plan: Plan, outer: PlanNames | None, add: Any) -> None:
    for var, name in zip(plan.invars, arg_names(plan), strict=False):
        add(var, name)
    call = plan.call
    if call is None or outer is None:
        return
    try:
        passed = _passed_through(call.primitive, call.eqn.params, plan.label)
    except (KeyError, TypeError):
        return
    if passed is None:
        return
    offset, count = passed
    binders = list(plan.invars)
    inputs = list(call.invars)[offset:]
    if count is not None:
        binders, inputs = binders[:count], inputs[:count]
    for var, source in zip(binders, inputs, strict=False):
        for name in outer.of(source):
            add(var, name)


def _named(nodes: list[Node], run: _Run) -> list[tuple[int, Any, str]]:
    """The names one statement's run gives: ``(level, var, name)``.

    Its results are the outputs no other equation of the run reads (read later or
    not at all: ``pair = (a * 2, a + 3)`` has two, so names nothing).
    """
    members = [nodes[k] for k in run.members]
    read = {id(var) for node in members for var in node.invars}
    results = [
        var
        for node in members
        for var in node.outvars
        if not _cj.is_dropvar(var) and id(var) not in read
    ]
    targets = run.targets
    if len(targets) == 1 and len(results) == 1:
        return [(run.level, results[0], targets[0])]
    last = [v for v in members[-1].outvars if not _cj.is_dropvar(v)]
    if len(targets) > 1 and len(last) == len(targets) and results == last:
        return [(run.level, v, t) for v, t in zip(last, targets, strict=True)]
    return []


def _levels(
    node: Node, plan: Plan, defined_at: SourceLoc | None
) -> list[tuple[tuple[Any, ...], tuple[int, int], tuple[str, ...], int]]:
    """The assignments ``node``'s equation is part of, innermost first: ``(key,
    (line, bytecode offset), targets, level)`` for each user frame inside the plan's
    function."""
    info = node.info
    frames = info.frames
    if info.source is None or not any(f is info.source for f in frames):
        return []  # its line is the enclosing equation's: no frame of its own
    inside = _frames_inside(frames, plan, defined_at)
    if not inside:
        return []
    offsets = _cs.frame_offsets(node.eqn)
    if len(offsets) != len(frames):
        offsets = [-1] * len(frames)
    raw_files = plan.program.builder.raw_files
    out = []
    for level, frame in enumerate(inside):
        function = frame.function or ""
        last = function.rsplit(".", 1)[-1]
        if (last.startswith("<") and last != "<module>") or is_library_file(frame.file):
            continue
        raw = raw_files.get(frame.file, frame.file)
        statement = statement_at(raw, frame.line)
        if statement is None:
            continue
        start, end, targets = statement
        key = (frame.file, function, start, end)
        out.append((key, (frame.line, offsets[level]), targets, level))
    return out


def _frames_inside(
    frames: Sequence[SourceLoc], plan: Plan, defined_at: SourceLoc | None
) -> Sequence[SourceLoc]:
    """The frames of ``frames`` (innermost first) run by the plan's own function:
    inside the call of its nested jaxpr, or up to the stepped function's frame.

    JAX records a nested jaxpr's stack from its body function inward, so the call's
    frame is often absent; when present, it and the frames outside it are cut.
    """
    if plan.call is not None:
        call = plan.call.info.source
        if call is None:
            return frames
        for k, frame in enumerate(frames):
            if (frame.file, frame.line, frame.function) == (
                call.file,
                call.line,
                call.function,
            ):
                return frames[:k]
        return frames
    if defined_at is None:
        return ()
    for k in range(len(frames) - 1, -1, -1):
        frame = frames[k]
        if (frame.file, frame.function) == (defined_at.file, defined_at.function):
            return frames[: k + 1]
    return ()


@functools.lru_cache(maxsize=64)
def _statements(
    raw_file: str, size: int
) -> dict[int, tuple[int, int, tuple[str, ...]]]:
    """``{line: (first line, last line, target names)}`` of the simple assignments
    of a file (``size``: its line count, so an edited file is read again)."""
    source = "".join(linecache.getlines(raw_file))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    table: dict[int, tuple[int, int, tuple[str, ...]]] = {}
    # Statements only: expressions never hold an assignment statement.
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, attr, ()):
                if isinstance(child, ast.stmt):
                    todo.append(child)
                else:  # except handlers, match cases hold statements in their body
                    todo.extend(getattr(child, "body", ()))
        targets = _targets(node)
        if targets is None:
            continue
        start, end = node.lineno, node.end_lineno or node.lineno
        for line in range(start, end + 1):
            table[line] = (start, end, targets)
    return table


def statement_at(raw_file: str, line: int) -> tuple[int, int, tuple[str, ...]] | None:
    """The simple assignment spanning ``line`` of ``raw_file``: ``(first line, last
    line, target names)``, or None."""
    lines = linecache.getlines(raw_file)
    if not lines:
        return None
    return _statements(raw_file, len(lines)).get(line)


def _targets(node: ast.AST) -> tuple[str, ...] | None:
    if isinstance(node, ast.Assign):
        if len(node.targets) != 1:
            return None
        target = node.targets[0]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        if getattr(node, "value", None) is None:
            return None
        target = node.target
    else:
        return None
    if isinstance(target, ast.Name):
        # a container display (``pair = (a * 2, a + 3)``) is several values, even
        # where JAX dropped all but one of them
        value = getattr(node, "value", None)
        if isinstance(value, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            return None
        return (target.id,)
    if isinstance(target, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Name) for e in target.elts
    ):
        return tuple(e.id for e in target.elts if isinstance(e, ast.Name))
    return None


_NOT_IDENTIFIER = re.compile(r"\W+")


def alias(name: str) -> str | None:
    """An identifier standing for a pytree path (``params['w']`` -> ``params_w``),
    or None when ``name`` is one already or none can be made."""
    if name.isidentifier():
        return None
    text = _NOT_IDENTIFIER.sub("_", name).strip("_")
    if not text or text[0].isdigit() or keyword.iskeyword(text):
        return None
    return text


def user_names_of(plan: Plan, upto: int) -> PlanNames:
    """``plan``'s ``PlanNames`` (one per plan), read up to equation ``upto``."""
    found = plan.program.user_names.get(id(plan))
    if found is None:
        outer = user_names_of(plan.call.plan, 0) if plan.call is not None else None
        found = plan.program.user_names[id(plan)] = PlanNames(plan, outer)
    return found.upto(upto)


_SEGMENT = re.compile(r"\[(?:'[^']*'|\"[^\"]*\"|-?\d+)\]|\.[A-Za-z_]\w*")


class PathTree:
    """The values of pytree paths under one root (``params['w']``, ``params['b']``),
    so that an expression spelling a path evaluates to its value."""

    __slots__ = ("_children", "_root")

    def __init__(self, root: str) -> None:
        self._root = root
        self._children: dict[str, Any] = {}

    def _child(self, segment: str) -> Any:
        try:
            return self._children[segment]
        except KeyError:
            known = ", ".join(self._root + k for k in self._children)
            raise KeyError(f"no {self._root}{segment} here; known: {known}") from None

    def __getitem__(self, key: Any) -> Any:
        return self._child(f"[{key!r}]")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self._child(f".{name}")

    def __repr__(self) -> str:
        return f"<{self._root}: {', '.join(self._children)}>"


def add_path(namespace: dict[str, Any], path: str, value: Any) -> None:
    """Make ``path`` (``params['w']``, ``model.layers[0].weight``) evaluate to
    ``value`` in ``namespace``, leaving names it already binds alone."""
    match = re.match(r"[A-Za-z_]\w*", path)
    if match is None:
        return
    root, rest = match.group(), path[match.end() :]
    segments = _SEGMENT.findall(rest)
    if not segments or "".join(segments) != rest:
        return
    tree = namespace.get(root)
    if tree is None:
        tree = namespace[root] = PathTree(root)
    if not isinstance(tree, PathTree):
        return
    for segment in segments[:-1]:
        child = tree._children.get(segment)
        if child is None:
            child = tree._children[segment] = PathTree(tree._root + segment)
        if not isinstance(child, PathTree):
            return
        tree = child
    tree._children.setdefault(segments[-1], value)
