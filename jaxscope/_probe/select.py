# pyright: strict
"""What ``js.probe(f, at=[...])`` names: lines, the user's variables, named scopes or
a predicate on equations, resolved to equation outputs of the program's plan.

Only equations a probe can reach are candidates: the top jaxpr and the bodies of
the calls, loops and ``shard_map``s it holds (``rewrite.body_label``); a cond's
branches and a while's condition are not.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from jaxscope._exceptions import BreakpointError, InvalidCallError
from jaxscope._format import short_repr
from jaxscope._probe.rewrite import body_label
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._source import short_loc
from jaxscope._stepper.breakpoints import file_matches, parse_location
from jaxscope._stepper.locals import LocalsLog, leaf_names
from jaxscope._stepper.names import user_names_of
from jaxscope._stepper.plan import Node, Plan, iter_nodes
from jaxscope.compat import jaxpr as _cj


@dataclass(frozen=True, slots=True)
class Target:
    """One selected value: output ``out`` of the equation at ``node``."""

    label: str
    node: Node
    out: int

    @property
    def info(self) -> EqnInfo:
        return self.node.info


def reachable(plan: Plan) -> Iterator[Node]:
    """Every node a probe can reach, depth-first (program order)."""
    for node in plan.nodes:
        yield node
        label = body_label(node)
        if label is not None:
            yield from reachable(node.subs[label])


def _safe(fn: Callable[..., Any], node: Node) -> bool:
    try:
        return bool(fn(node.info))
    except Exception:
        return False


def phase(info: EqnInfo) -> str:
    """``"backward"`` for an equation of a transposed (gradient) computation."""
    if any(
        kind == "transform" and name == "transpose" for kind, name in info.name_stack
    ):
        return "backward"
    return "forward"


def _location(spec: Any) -> tuple[str | None, int] | None:
    """``(file or None, line)`` when ``spec`` spells a line, else None."""
    try:
        return parse_location(spec, "at")
    except BreakpointError:
        return None


def needs_names(specs: Sequence[Any]) -> bool:
    """Whether resolving ``specs`` may read the user's names (a line or a callable
    never does): recording them slows the trace, so only then is it done."""
    return any(
        not (callable(spec) and not isinstance(spec, str)) and _location(spec) is None
        for spec in specs
    )


def _results(run: list[Node]) -> list[tuple[Node, int]]:
    """The outputs of a run of equations that no other equation of the run reads."""
    read = {id(v) for node in run for v in node.invars}
    return [
        (node, j)
        for node in run
        for j, var in enumerate(node.outvars)
        if not _cj.is_dropvar(var) and id(var) not in read
    ]


def _runs(nodes: list[Node], match: Callable[[Node], bool]) -> list[list[Node]]:
    """Runs of consecutive matching nodes of one plan."""
    runs: list[list[Node]] = []
    last: Node | None = None
    for node in nodes:
        if not match(node):
            continue
        if last is not None and last.plan is node.plan and last.index == node.index - 1:
            runs[-1].append(node)
        else:
            runs.append([node])
        last = node
    return runs


def _labelled(spec: str, found: list[tuple[Node, int]]) -> list[Target]:
    targets: list[Target] = []
    for k, (node, out) in enumerate(found):
        label = spec if k == 0 else f"{spec} #{k + 1}"
        targets.append(Target(label, node, out))
    return targets


def _forward_read(plan: Plan, var: Any, after: int) -> bool:
    """Whether a forward equation of ``plan`` after node ``after`` reads ``var``,
    or the plan returns it."""
    if any(v is var for v in plan.outvars):
        return True
    return any(
        any(v is var for v in node.invars) and phase(node.info) == "forward"
        for node in plan.nodes[after + 1 :]
    )


def _primal(node: Node, out: int) -> tuple[Node, int]:
    """The value a statement assigns, where the name fell on a residual that only
    the gradient reads (``1 - tanh(x)**2`` of ``h = tanh(x)`` under ``grad``): the
    last output of the statement's equations that later forward code reads."""
    plan = node.plan
    if _forward_read(plan, node.outvars[out], node.index):
        return node, out
    line = node.info.source
    k = node.index
    run: list[Node] = []
    while k >= 0 and plan.nodes[k].info.source == line:
        run.append(plan.nodes[k])
        k -= 1
    for candidate in run:
        for j in range(len(candidate.outvars) - 1, -1, -1):
            var = candidate.outvars[j]
            if not _cj.is_dropvar(var) and _forward_read(plan, var, node.index):
                return candidate, j
    return node, out


def _scopes(info: EqnInfo) -> str:
    names = [name for kind, name in info.name_stack if kind == "scope"]
    return "/".join(names)


class Selector:
    """Resolves ``at`` specs against one program (its reachable equations)."""

    def __init__(self, top: Plan, locals_log: LocalsLog | None = None) -> None:
        self.top = top
        self.nodes = list(reachable(top))
        self.locals_log = locals_log
        self._names: dict[str, list[tuple[Node, int]]] | None = None
        #: a pytree name's targets labelled by their leaves: ``grads['w']``
        self._leaf_labels: dict[str, list[str]] = {}

    def _traced_names(self) -> dict[str, list[tuple[Node, int]]]:
        """``{name: [(node, output)]}`` from the locals the user's Python held as it
        traced: a pytree's leaves as ``grads['w']``, and under its bare name too."""
        if self.locals_log is None:
            return {}
        by_var: dict[Any, tuple[Node, int]] = {}
        for node in self.nodes:  # exact values: a gradient the user named included
            for j, var in enumerate(node.outvars):
                if not _cj.is_dropvar(var):
                    by_var.setdefault(var, (node, j))
        found: dict[str, list[tuple[Node, int]]] = {}

        def add(name: str, hit: tuple[Node, int]) -> None:
            hits = found.setdefault(name, [])
            if hit not in hits:
                hits.append(hit)

        for snapshots in self.locals_log.frames.values():
            for snapshot in snapshots:
                for name, binding in snapshot.names.items():
                    leaves = [
                        a
                        for a in binding.atoms
                        if a is not None and not _cj.is_literal(a)
                    ]
                    hits = [by_var[a] for a in leaves if a in by_var]
                    if not hits or len(hits) != len(leaves):
                        continue  # an argument, or a value the program dropped
                    if len(binding.atoms) == 1:
                        add(name, hits[0])
                        continue
                    for leaf, atom in zip(
                        leaf_names(name, binding), binding.atoms, strict=True
                    ):
                        if (
                            atom is not None
                            and not _cj.is_literal(atom)
                            and atom in by_var
                        ):
                            add(leaf, by_var[atom])
                            if by_var[atom] not in found.get(name, []):
                                add(name, by_var[atom])
                                self._leaf_labels.setdefault(name, []).append(leaf)
        return found

    def names(self) -> dict[str, list[tuple[Node, int]]]:
        """``{user name: [(node, output)]}`` over the reachable equations."""
        if self._names is None:
            found: dict[str, list[tuple[Node, int]]] = {}
            plans: dict[int, Plan] = {}
            for node in self.nodes:
                plans.setdefault(id(node.plan), node.plan)
            for plan in plans.values():
                users = user_names_of(plan, len(plan.nodes))
                for node in plan.nodes:
                    if phase(node.info) == "backward":
                        continue  # the gradient of a name is not that name
                    for j, var in enumerate(node.outvars):
                        if _cj.is_dropvar(var):
                            continue
                        for name in users.of(var):
                            hit = _primal(node, j)
                            if hit not in found.get(name, []):
                                found.setdefault(name, []).append(hit)
            for name, hits in self._traced_names().items():
                found[name] = hits  # what the Python held is exact; the source a guess
            self._names = found
        return self._names

    def resolve(self, at: Sequence[Any], what: str) -> list[Target]:
        targets: list[Target] = []
        for spec in at:
            targets.extend(self._one(spec, what))
        seen: set[str] = set()
        unique: list[Target] = []
        for t in targets:
            label = t.label
            k = 2
            while label in seen:
                label = f"{t.label} #{k}"
                k += 1
            seen.add(label)
            unique.append(Target(label, t.node, t.out))
        return unique

    def _one(self, spec: Any, what: str) -> list[Target]:
        if callable(spec) and not isinstance(spec, str):
            return self._predicate(spec, what)
        where = _location(spec)
        if where is not None:
            text = str(spec).strip() if not isinstance(spec, SourceLoc) else str(spec)
            return self._line(text, *where, what=what)
        if not isinstance(spec, str) or not spec.strip():
            raise InvalidCallError(
                f"{what}: each entry of at= must be a variable name, a 'file:line', a "
                f"named scope or a callable on EqnInfo; got {short_repr(spec, 40)}"
            )
        name = spec.strip()
        hits = self.names().get(name)
        labels = self._leaf_labels.get(name, [])
        if hits and len(labels) == len(hits):
            return [
                Target(label, n, o) for label, (n, o) in zip(labels, hits, strict=True)
            ]
        if hits:
            return _labelled(name, hits)
        scope = self._scope(name)
        if scope:
            return scope
        raise InvalidCallError(f"{what}: {self._nearest(name)}")

    def _predicate(self, fn: Callable[..., Any], what: str) -> list[Target]:
        found: list[Target] = []
        for node in self.nodes:
            try:
                hit = bool(fn(node.info))
            except Exception as exc:
                raise InvalidCallError(
                    f"{what}: the at= callable raised {type(exc).__name__}: {exc} on "
                    f"{node.primitive}; it takes one EqnInfo and returns a bool"
                ) from None
            if not hit:
                continue
            info = node.info
            where = f"@{short_loc(info.source)}" if info.source is not None else ""
            base = f"{info.primitive}{where}"
            for j, var in enumerate(node.outvars):
                if not _cj.is_dropvar(var):
                    found.append(Target(base, node, j))
        if not found:
            reached = {id(n) for n in self.nodes}
            hidden = [
                n for n in iter_nodes(self.top) if id(n) not in reached and _safe(fn, n)
            ]
            if hidden:
                holder = hidden[0].plan.call
                kind = holder.primitive if holder is not None else "a nested jaxpr"
                raise InvalidCallError(
                    f"{what}: the at= callable selected only equations inside {kind} "
                    "branches or a while condition, which js.probe cannot read yet; "
                    "probe the result of that equation instead"
                )
            raise InvalidCallError(
                f"{what}: the at= callable selected no equation; it receives each "
                "EqnInfo (primitive, source, scope) and returns True for the ones to probe"
            )
        return found

    def _line(self, spec: str, file: str | None, line: int, what: str) -> list[Target]:
        def at_line(node: Node) -> bool:
            src = node.info.source
            return (
                src is not None
                and src.line == line
                and (file is None or file_matches(file, src.file))
            )

        found = [r for run in _runs(self.nodes, at_line) for r in _results(run)]
        if not found:
            places = {
                short_loc(n.info.source): n.info.source.line
                for n in self.nodes
                if n.info.source is not None
                and (file is None or file_matches(file, n.info.source.file))
            }
            near = sorted(places, key=lambda p: (abs(places[p] - line), p))[:5]
            raise InvalidCallError(
                f"{what}: no equation at {spec}; nearest lines with equations: "
                f"{', '.join(near) or 'none'}"
            )
        return _labelled(spec, found)

    def _scope(self, name: str) -> list[Target]:
        def inside(node: Node) -> bool:
            return f"/{name}/" in f"/{_scopes(node.info)}/"

        found: list[Target] = []
        for run in _runs(self.nodes, inside):
            side = " (backward)" if phase(run[0].info) == "backward" else ""
            found.extend(_labelled(f"{name}{side}", _results(run)))
        return found

    def _nearest(self, name: str) -> str:
        names = sorted(n for n in self.names() if n.isidentifier() or "[" in n)
        scopes = sorted(
            {s for n in self.nodes for s in _scopes(n.info).split("/") if s}
        )
        near = difflib.get_close_matches(name, [*names, *scopes], n=5, cutoff=0.5)
        if not near:
            near = (names or scopes)[:5]
        return (
            f"no variable, named scope or line {name!r} in this program; nearest: "
            f"{', '.join(near) or 'none'} (lines are written 'file:line')"
        )
