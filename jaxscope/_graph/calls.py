"""Groups of the user's own function calls, nested with the name scopes.

Flax NNX modules and plain helper functions leave nothing in JAX's name stack, but
each equation's traceback still holds the user's call chain: ``loss_fn`` →
``MLP.__call__`` → ``Block.__call__``. Each call in that chain (a callee and the line
that called it) becomes a group, labelled after the callee (``Block`` for a
``__call__`` method, ``MLP.encode`` for another method, ``loss_fn`` for a function),
with ``(backward)`` where the equations are the transpose of that call. A call into
an installed library from the user's code is one too, labelled as the user wrote it
(``self.lin``, ``optimizer.update``); the library's calls inside it are not.

Name scopes (``jax.named_scope``, Linen module paths, Equinox's ``eqx.nn`` layers,
the einsum scopes Flax's attention opens) and calls nest, neither hiding the other:
a scope sits inside the calls all its equations share, the calls made before it
opened (``loss_fn > Net > Block > self.attn > BNTS,BSNH->BTNH``; ``loss > MLP >
Dense_0`` for Linen). A scope is known by the consecutive equations holding it (a
*run*): two blocks' einsum scopes are two groups, each in its own block.

Tracebacks name code, not frames, so two calls from one line (``for block in
self.blocks: x = block(x)``) look alike. A new call is recognised when the callee's
line goes back (forward, in the backward pass) and no statement or loop of the callee
holds both lines. Repeated calls are numbered ``Block #1``, ``Block #2``, ..., in
reverse in the backward pass, which visits them in reverse. Calls of lambdas and
comprehensions are left out, and so are the calls that add nothing: those holding
fewer than two nodes or groups (one scope that names them, such as Linen's ``MLP``
scope in the call of ``MLP.__call__``), except a library call around one group of
nested jaxprs (``optimizer.update`` around an ``optax.MultiSteps`` ``cond``,
``diffrax.diffeqsolve`` around its ``jit``).
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
    from jaxscope._graph.records import GraphGroup
    from jaxscope._records import EqnInfo, SourceLoc

# (caller's file, line, column; callee's file, qualname; backward): the call site
# and the callee. Columns tell apart ``scale(a) + scale(b)``.
CallKey = tuple[str, int, int, str, str, bool]
# (label, parent, (caller's file, caller's line), callee's qualname, backward,
#  a library's callee) -> id
NewGroup = Callable[[str, "str | None", tuple[str, int], str, bool, bool], str]
# (label, parent, scope path as JAX prints it, backward) -> id
NewScope = Callable[[str, "str | None", str, bool], str]
# (name, backward) of each name scope, outermost first (``model.scope_path``)
ScopePath = list[tuple[str, bool]]


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
    """A call made anew (one instance), open while its equations follow."""

    key: CallKey
    caller: SourceLoc
    callee: SourceLoc
    line: int  # the callee's line its last equation came from
    # its group under each parent it is drawn in (a scope may hold it)
    gids: dict[str | None, str] = field(default_factory=dict)


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


class _Run:
    """Consecutive equations of one scope (one time it was opened): ``depth`` is how
    many calls they all share, those made before the scope opened (or more: the
    calls it holds all its equations in)."""

    __slots__ = ("depth", "ref")

    def __init__(self, opens: tuple[_Open, ...]) -> None:
        self.ref = opens
        self.depth = len(opens)

    def shares(self, opens: tuple[_Open, ...]) -> bool:
        """Whether ``opens`` is in every call the run's equations share."""
        if opens is self.ref:
            return True
        ref, depth = self.ref, self.depth
        return len(opens) >= depth and all(opens[k] is ref[k] for k in range(depth))

    def narrow(self, opens: tuple[_Open, ...]) -> None:
        """Takes in an equation in ``opens``: the calls shared are the common ones."""
        if opens is self.ref:
            return
        ref, depth = self.ref, min(self.depth, len(opens))
        k = 0
        while k < depth and opens[k] is ref[k]:
            k += 1
        self.depth = k


class CallGroups:
    """Places the equations of one region in call groups and name scopes, nested
    (see the module docstring).

    ``steps`` holds each equation's ``call_steps``; ``paths`` its name scopes
    (``scope_path``), None where the region has none; ``backward`` when the region
    is inside a backward pass that is already labelled.
    ``new_group(label, parent, call_site, function, backward, library)`` adds a call
    group, ``new_scope(label, parent, scope, backward)`` a scope group, and each
    returns its id; ``label`` already says ``(backward)`` where it should.

    The calls every equation shares, each made once, are what led to the region
    (the cell that called ``js.graph``, the traced function, the function a scan
    traced) and make no group; a call made again (a loop over one call site) does.
    """

    def __init__(
        self,
        shapes: Shapes,
        new_group: NewGroup,
        new_scope: NewScope,
        steps: list[list[Step]],
        backward: bool = False,
        paths: list[ScopePath] | None = None,
    ) -> None:
        self.backward = backward  # the region is in a backward pass, which says so
        self.shapes = shapes
        self.new_group = new_group
        self.new_scope = new_scope
        self.open: list[_Open] = []
        skip = self._shared_calls(steps)
        self.open = []  # the dry run's
        # The calls each equation is in, outermost first: one tuple per change.
        self.opens: list[tuple[_Open, ...]] = []
        last: tuple[_Open, ...] = ()
        for s in steps:
            placed = s[skip:]
            if not placed:
                del self.open[:]
                last = ()
            elif self._advance(placed) < len(placed) or len(last) != len(self.open):
                last = tuple(self.open)
            self.opens.append(last)
        self.paths = paths if paths is not None else [[] for _ in steps]
        self.runs = self._scope_runs() if paths is not None else [()] * len(steps)
        self.scopes: dict[
            tuple[str | None, tuple[tuple[str, bool], ...], _Run], str
        ] = {}
        self.memo: dict[tuple[int, int], str | None] = {}

    def _scope_runs(self) -> list[tuple[_Run, ...]]:
        """Each equation's scope runs, one per scope of its path. A run goes on
        while equations hold its scope, or hold no scope but are in the calls the
        run shares (a backward pass's bookkeeping between a scope's equations)."""
        out: list[tuple[_Run, ...]] = []
        active: list[_Run] = []
        names: list[tuple[str, bool]] = []
        last: tuple[_Run, ...] = ()
        last_path: ScopePath | None = None  # the last scoped equation's
        for opens, path in zip(self.opens, self.paths, strict=True):
            if path is last_path and len(active) == len(path):  # its runs go on
                for run in active:
                    run.narrow(opens)
                out.append(last)
                continue
            if not path:
                for k, run in enumerate(active):
                    if not run.shares(opens):
                        del active[k:], names[k:]
                        break
                out.append(())
                continue
            k = 0
            while k < len(active) and k < len(path) and names[k] == path[k]:
                active[k].narrow(opens)
                k += 1
            del active[k:], names[k:]
            for entry in path[k:]:
                active.append(_Run(opens))
                names.append(entry)
            if len(last) != len(active) or any(
                a is not b for a, b in zip(last, active, strict=True)
            ):
                last = tuple(active)
            last_path = path
            out.append(last)
        return out

    def _shared_calls(self, placed: list[list[Step]]) -> int:
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
        for k, steps in enumerate(placed):
            made = self._advance(steps[:shared], directed=False)
            if k and made < min(len(steps), shared):
                shared = made
        return shared

    def parent(self, index: int, container: str | None) -> str | None:
        """The innermost group of equation ``index`` of the region, its call groups
        and scopes made where they are new, or ``container`` when it is in none."""
        opens, runs = self.opens[index], self.runs[index]
        memo = (id(opens), id(runs))  # both kept in self.opens, self.runs
        if memo in self.memo:
            return self.memo[memo]
        parent, around, depth = container, self.backward, 0
        path = self.paths[index]
        for j, run in enumerate(runs):
            while depth < run.depth:
                parent, around = self._call(opens[depth], parent, around)
                depth += 1
            parent, around = self._scope(tuple(path[: j + 1]), run, parent, around)
        while depth < len(opens):
            parent, around = self._call(opens[depth], parent, around)
            depth += 1
        self.memo[memo] = parent
        return parent

    def _call(self, entry: _Open, parent: str | None, around: bool) -> tuple[str, bool]:
        backward = entry.key[5]
        gid = entry.gids.get(parent)
        if gid is None:
            caller, callee = entry.caller, entry.callee
            label = call_label(entry.key[4])
            library = is_library_file(callee.file)
            if library:  # the user's words: ``self.lin``
                label = self.shapes.called(caller) or label
            if backward and not around:  # only the outermost backward call says so
                label += " (backward)"
            gid = entry.gids[parent] = self.new_group(
                label,
                parent,
                (caller.file, caller.line),
                callee.function or "",
                backward,
                library,
            )
        return gid, around or backward

    def _scope(
        self,
        key: tuple[tuple[str, bool], ...],
        run: _Run,
        parent: str | None,
        around: bool,
    ) -> tuple[str, bool]:
        # One group per run: a scope opened again (the layers of Equinox's MLP, one
        # `eqx.nn.Linear` after another, a relu between them) is a group again.
        name, backward = key[-1]
        gid = self.scopes.get((parent, key, run))
        if gid is None:
            label = name or "backward"
            if name and backward and not around:  # only the outermost says so
                label = f"{name} (backward)"
            scope = "/".join(n for n, _ in key if n)
            gid = self.scopes[parent, key, run] = self.new_scope(
                label, parent, scope, backward
            )
        return gid, around or backward

    def _advance(self, steps: list[Step], directed: bool = True) -> int:
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
            open_.append(_Open(key, caller, callee, callee.line))
        return depth

    def _reentered(self, entry: _Open, callee: SourceLoc, backward: bool) -> bool:
        # Lines, not columns: ``relu(lin(y))`` runs lin first, at a later column.
        went_back = callee.line > entry.line if backward else callee.line < entry.line
        if not went_back:
            return False
        return not self.shapes.together(callee.file, entry.line, callee.line)


def finish(
    groups: list[GraphGroup],
    call_ids: set[str],
    members: dict[str, int],
    library_calls: set[str],
) -> tuple[list[GraphGroup], dict[str, str | None]]:
    """Numbers repeated calls and dissolves the calls that add nothing: one holding
    fewer than two members (nodes and groups directly in it), except a library
    call around one group of nested jaxprs (``optimizer.update`` around optax's
    ``cond``), which names what the user called.

    Returns the groups kept and, for each dissolved group, the group that takes its
    members (the nearest kept ancestor).
    """
    gone: dict[str, str | None] = {}

    def kept(gid: str | None) -> str | None:
        while gid is not None and gid in gone:
            gid = gone[gid]
        return gid

    # Innermost first: a call left with one member once its own children dissolved
    # counts what moved up into it. ``inside``: the kept groups directly in each.
    inside: dict[str | None, list[GraphGroup]] = {}
    says_backward: set[str] = set()  # kept groups to label " (backward)" anew
    for g in reversed(groups):
        kids = inside.pop(g.id, [])
        if g.id in call_ids and members.get(g.id, 0) < 2:
            wraps = (
                len(kids) == 1
                and kids[0].kind not in ("call", "scope")
                and g.id in library_calls
            )
            if not wraps:
                gone[g.id] = g.parent
                if g.parent is not None:
                    members[g.parent] = (
                        members.get(g.parent, 0) + members.get(g.id, 0) - 1
                    )
                inside.setdefault(g.parent, []).extend(kids)
                if g.label.endswith(" (backward)"):  # its backward child says so now
                    says_backward.update(
                        k.id for k in kids if k.backward and k.label != "backward"
                    )
                continue
        inside.setdefault(g.parent, []).append(g)
    out: list[GraphGroup] = []
    siblings: dict[tuple[str | None, str, bool], list[int]] = {}
    for g in groups:
        if g.id in gone:
            continue
        g = fill_in(g, parent=kept(g.parent))
        if g.id in says_backward and not g.label.endswith(" (backward)"):
            g = fill_in(g, label=f"{g.label} (backward)")
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
