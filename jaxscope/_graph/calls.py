"""Groups of the user's own function calls, for equations that no name scope places.

Flax NNX modules and plain helper functions leave nothing in JAX's name stack, but
each equation's traceback still holds the user's call chain: ``loss_fn`` →
``MLP.__call__`` → ``Block.__call__``. Each call in that chain (a callee and the line
that called it) becomes a group, labelled after the callee (``Block`` for a
``__call__`` method, ``MLP.encode`` for another method, ``loss_fn`` for a function),
with ``(backward)`` where the equations are the transpose of that call. A call into
an installed library from the user's code is one too, labelled as the user wrote it
(``self.lin``, ``optimizer.update``); the library's calls inside it are not. Beside
name scopes (Linen, Equinox, ``jax.named_scope``), a call that holds a scoped equation
is no group, as it would cut across the scopes.

Tracebacks name code, not frames, so two calls from one line (``for block in
self.blocks: x = block(x)``) look alike. A new call is recognised when the callee's
line goes back (forward, in the backward pass) and no statement or loop of the callee
holds both lines. Repeated calls are numbered ``Block #1``, ``Block #2``, ..., in
reverse in the backward pass, which visits them in reverse. Calls of lambdas and
comprehensions, and calls holding fewer than two nodes or groups, are left out.
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jaxscope._records import fill_in
from jaxscope.compat.source import is_library_file

if TYPE_CHECKING:
    from jaxscope._graph.model import GraphGroup
    from jaxscope._records import EqnInfo, SourceLoc

# (caller's file, line, column; callee's file, qualname; backward): the call site
# and the callee. Columns tell apart ``scale(a) + scale(b)``.
CallKey = tuple[str, int, int, str, str, bool]
# (label, parent, (caller's file, caller's line), callee's qualname, backward) -> id
NewGroup = Callable[[str, "str | None", tuple[str, int], str, bool], str]


def call_label(qualname: str) -> str:
    """``Block.__call__`` → ``Block``; ``train_step.<locals>.loss_fn`` → ``loss_fn``;
    ``MLP.encode`` → ``MLP.encode``."""
    parts = qualname.rsplit("<locals>.", 1)[-1].split(".")
    if len(parts) > 1 and parts[-1] == "__call__":
        return parts[-2]
    return ".".join(parts[-2:])


def is_backward(info: EqnInfo) -> bool:
    """Whether ``info`` belongs to a backward pass (a ``transpose`` in its name stack)."""
    return ("transform", "transpose") in info.name_stack or "transpose(" in info.scope


class Shapes:
    """What the source of each file says about calls, from Python's ``ast``, parsed
    once per file and only when asked: which lines may belong to one call (within
    one statement, since a call's arguments run before it and may sit on a later
    line, or one loop), and the text of the function each call expression names.

    Source that is unknown or does not parse says every two lines may belong to one
    call: calls are then merged, never split on a guess."""

    def __init__(self, raw_files: dict[str, str]) -> None:
        self.raw_files = raw_files
        self.parsed: dict[str, _Parsed | None] = {}

    def _of(self, file: str) -> _Parsed | None:
        if file not in self.parsed:
            self.parsed[file] = _parse(self.raw_files.get(file, file))
        return self.parsed[file]

    def together(self, file: str, a: int, b: int) -> bool:
        parsed = self._of(file)
        if parsed is None:
            return True
        return any(lo <= a <= hi and lo <= b <= hi for lo, hi in parsed.spans)

    def called(self, site: SourceLoc) -> str | None:
        """The callee expression of the call at ``site`` (``self.lin``), if short."""
        parsed = self._of(site.file)
        if parsed is None or site.column is None:
            return None
        return parsed.calls.get((site.line, site.column))


@dataclass(slots=True)
class _Parsed:
    spans: list[tuple[int, int]]
    calls: dict[tuple[int, int], str]


_LOOPS = (
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _parse(filename: str) -> _Parsed | None:
    source = "".join(linecache.getlines(filename))
    if not source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    spans: list[tuple[int, int]] = []
    calls: dict[tuple[int, int], str] = {}
    for node in ast.walk(tree):
        if isinstance(node, _LOOPS):
            spans.append((node.lineno, node.end_lineno or node.lineno))
        elif isinstance(node, ast.stmt):
            body = getattr(node, "body", None)
            last = node.end_lineno or node.lineno
            if isinstance(body, list) and body:  # a compound statement's header
                last = max(node.lineno, body[0].lineno - 1)
            spans.append((node.lineno, last))
        elif isinstance(node, ast.Call) and isinstance(
            node.func, ast.Name | ast.Attribute
        ):
            text = ast.unparse(node.func)
            if len(text) <= 40:
                calls[(node.lineno, node.col_offset)] = text
    return _Parsed(spans, calls)


@dataclass(slots=True)
class _Open:
    key: CallKey
    gid: str
    line: int  # the callee's line its last equation came from
    backward: bool  # this group or one around it is backward


Step = tuple[CallKey, "SourceLoc", "SourceLoc"]  # (key, caller, callee)


class CallSteps:
    """Each equation's calls: ``of(info, backward)``.

    The calls that led to an equation, outermost first, are the steps between the
    frames of the user's own code in its stack, and from the innermost of them into
    the installed library's function it called (``nnx.Linear``'s ``__call__``), if
    any; lambdas and comprehensions are left out (their own calls stay, called from
    their lines). ``backward`` when the region holding it is in a backward pass.

    Equations share the outer part of their stacks, so the steps are worked out one
    frame at a time in a tree of stack prefixes, each prefix once. The frames are
    the model's ``SourceLoc`` objects, known by id: the model keeps them alive.
    """

    def __init__(self) -> None:
        self._roots = {False: _Prefix(None, (), None), True: _Prefix(None, (), None)}

    def of(self, info: EqnInfo, backward: bool = False) -> list[Step]:
        backward = backward or is_backward(info)
        prefix = self._roots[backward]
        for frame in reversed(info.frames):
            found = prefix.longer.get(id(frame))
            if found is None:
                found = prefix.longer[id(frame)] = prefix.extended(frame, backward)
            prefix = found
        if prefix.steps_out is None:
            prefix.steps_out = prefix.finished(backward)
        return prefix.steps_out


@dataclass(slots=True)
class _Prefix:
    """The outer part of a stack, outermost first, as far as it says calls."""

    last: SourceLoc | None  # its innermost frame of the user's own code
    steps: tuple[Step, ...]  # the calls between the user's frames so far
    called: SourceLoc | None  # the library function ``last`` called, if any
    longer: dict[int, _Prefix] = field(default_factory=dict)
    steps_out: list[Step] | None = None

    def extended(self, frame: SourceLoc, backward: bool) -> _Prefix:
        if not is_library_file(frame.file):
            steps = self.steps
            if self.last is not None:
                steps = (*steps, _step(self.last, frame, backward))
            return _Prefix(frame, steps, None)
        if self.called is None and self.last is not None:
            return _Prefix(self.last, self.steps, frame)
        return _Prefix(self.last, self.steps, self.called)

    def finished(self, backward: bool) -> list[Step]:
        steps = self.steps
        if self.called is not None and self.last is not None:
            steps = (*steps, _step(self.last, self.called, backward))
        return [s for s in steps if not s[0][4].rsplit(".", 1)[-1].startswith("<")]


def _step(caller: SourceLoc, callee: SourceLoc, backward: bool) -> Step:
    key = (
        caller.file,
        caller.line,
        caller.column or 0,
        callee.file,
        callee.function or "",
        backward,
    )
    return (key, caller, callee)


class CallGroups:
    """Places the equations of one region in call groups (see the module docstring).

    ``steps`` holds each equation's ``call_steps``; ``scoped`` marks those placed by
    name scopes instead; ``backward`` when the region is inside a backward pass that
    is already labelled.
    ``new_group(label, parent, call_site, function, backward)`` adds a group and
    returns its id; ``label`` already says ``(backward)`` where it should.

    The calls every equation shares, each made once, are what led to the region
    (the cell that called ``js.graph``, the traced function, the function a scan
    traced) and make no group; a call made again (a loop over one call site) does.
    """

    def __init__(
        self,
        shapes: Shapes,
        new_group: NewGroup,
        steps: list[list[Step]],
        backward: bool = False,
        scoped: list[bool] | None = None,
    ) -> None:
        self.backward = backward  # the region is in a backward pass, which says so
        self.shapes = shapes
        self.new_group = new_group
        self.steps = steps
        self.open: list[_Open] = []
        self.skip = self._shared_calls()
        self.open = []  # the dry run's
        # Beside name scopes, a call that holds a scoped equation is no group (it
        # would cut across the scopes); an equation keeps the calls outside it.
        self.placed: list[list[Step] | None] = [s[self.skip :] for s in steps]
        if scoped is not None:
            holds_scopes = {
                step[0][:5]
                for steps_, in_scope in zip(self.placed, scoped, strict=True)
                if in_scope and steps_ is not None
                for step in steps_
            }
            for k, steps_ in enumerate(self.placed):
                if scoped[k] or steps_ is None:
                    self.placed[k] = None
                    continue
                keep = 0
                while keep < len(steps_) and steps_[keep][0][:5] not in holds_scopes:
                    keep += 1
                self.placed[k] = steps_[:keep]

    def _shared_calls(self) -> int:
        placed = self.steps
        if not placed:
            return 0
        # Compared without their direction: the forward and the backward pass of a
        # jax.grad both come from the calls that traced them.
        first = min(placed, key=len)
        shared = 0
        while shared < len(first) and all(
            s[shared][0][:5] == first[shared][0][:5] for s in placed
        ):
            shared += 1
        # A dry run: the shallowest depth at which a call is made anew.
        new_group, self.new_group = self.new_group, lambda *_: ""
        try:
            for k, steps in enumerate(placed):
                made = self._advance(steps[:shared], None, directed=False)
                if k and made < min(len(steps), shared):
                    shared = made
        finally:
            self.new_group = new_group
        return shared

    def parent(self, index: int, container: str | None) -> str | None:
        """The innermost call group of equation ``index`` of the region, made where
        it is new, or ``container`` when it is in no call."""
        steps = self.placed[index]
        if not steps:
            del self.open[:]
            return container
        self._advance(steps, container)
        return self.open[-1].gid if self.open else container

    def _advance(
        self, steps: list[Step], container: str | None, directed: bool = True
    ) -> int:
        """Continues the open calls ``steps`` shares and opens the rest; returns the
        depth of the first call opened (``len(steps)`` when none). Not ``directed``:
        a call goes on from the forward into the backward pass."""
        open_ = self.open
        depth = 0
        while depth < len(steps) and depth < len(open_):
            key, _caller, callee = steps[depth]
            entry = open_[depth]
            if directed:
                if entry.key != key or self._reentered(entry, callee, key[5]):
                    break
            elif entry.key[:5] != key[:5]:
                break
            elif entry.key[5] != key[5]:  # the pass turns: its lines start over
                entry.key = key
            elif self._reentered(entry, callee, key[5]):
                break
            entry.line = callee.line
            depth += 1
        del open_[depth:]
        for key, caller, callee in steps[depth:]:
            parent = open_[-1].gid if open_ else container
            around = open_[-1].backward if open_ else self.backward
            backward = key[5]
            label = call_label(key[4])
            if is_library_file(callee.file):  # the user's words: ``self.lin``
                label = self.shapes.called(caller) or label
            if backward and not around:  # only the outermost backward call says so
                label += " (backward)"
            gid = self.new_group(
                label,
                parent,
                (caller.file, caller.line),
                callee.function or "",
                backward,
            )
            open_.append(_Open(key, gid, callee.line, backward or around))
        return depth

    def _reentered(self, entry: _Open, callee: SourceLoc, backward: bool) -> bool:
        # Lines, not columns: ``relu(lin(y))`` runs lin first, at a later column.
        went_back = callee.line > entry.line if backward else callee.line < entry.line
        if not went_back:
            return False
        return not self.shapes.together(callee.file, entry.line, callee.line)


def finish(
    groups: list[GraphGroup], call_ids: set[str], members: dict[str, int]
) -> tuple[list[GraphGroup], dict[str, str | None]]:
    """Numbers repeated calls and dissolves calls with fewer than two members.

    Returns the groups kept and, for each dissolved group, the group that takes its
    members (the nearest kept ancestor).
    """
    gone: dict[str, str | None] = {}

    def kept(gid: str | None) -> str | None:
        while gid is not None and gid in gone:
            gid = gone[gid]
        return gid

    # Innermost first: a call left with one member once its own children dissolved
    # counts what moved up into it.
    for g in reversed(groups):
        if g.id in call_ids and members.get(g.id, 0) < 2:
            gone[g.id] = g.parent
            if g.parent is not None:
                members[g.parent] = members.get(g.parent, 0) + members.get(g.id, 0) - 1
    out: list[GraphGroup] = []
    siblings: dict[tuple[str | None, str, bool], list[int]] = {}
    for g in groups:
        if g.id in gone:
            continue
        g = fill_in(g, parent=kept(g.parent))
        if g.id in call_ids:
            siblings.setdefault((g.parent, g.label, g.backward), []).append(len(out))
        out.append(g)
    for (_parent, _label, backward), indexes in siblings.items():
        if len(indexes) < 2:
            continue
        n = len(indexes)
        for k, i in enumerate(indexes):
            number = n - k if backward else k + 1
            g = out[i]
            base, says, _ = g.label.partition(" (backward)")
            out[i] = fill_in(g, label=f"{base} #{number}{says}")
    return out, {gid: kept(gid) for gid in gone}
