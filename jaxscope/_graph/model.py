"""``build_graph``: the dataflow graph of a jaxpr as a ``GraphModel`` (``records``).

Nodes are the program's inputs, outputs and constants and every equation that holds no
nested jaxpr. An equation that does hold nested jaxprs (jit, scan, while, cond,
custom_jvp/vjp, remat, shard_map, ...) is a *group*; when it holds several (while's
cond and body, cond's branches) each nested jaxpr is a child group of it. Name-stack
scopes (``jax.named_scope``) are groups too, nested to any depth inside the group of
the jaxpr they occur in.

Edges join leaf nodes only and carry the variable they stand for (``name``, ``type``).
A nested jaxpr's binders are aliases of its equation's operands and results, so an
edge runs straight from the producer outside to the consumer inside (and back out);
a viewer lifts edges to the visible ancestor of a collapsed group. Operand alignment:

- most primitives (jit, scan, custom_jvp/vjp, remat, shard_map): positional, which is
  exact for scan too (its operands are consts, carry, xs like its body's binders);
- ``while``: operands are ``cond_consts + body_consts + carry``; the cond jaxpr binds
  ``cond_consts + carry``, the body ``body_consts + carry``, the body's results are the
  loop's results (the cond's boolean result feeds nothing);
- ``cond``: the first operand is the branch index; every branch binds the rest;
- anything else whose arity differs: aligned on the last operands (an approximation).

Name scopes come from the name stack JAX records per equation (``jax.named_scope``,
Flax Linen module paths such as ``MLP/Dense_0``, Equinox module names). Transforms in
it split a scope: under ``transpose`` (the backward pass of ``jax.grad``) a scope is a
group of its own, labelled ``layer0 (backward)``, apart from its forward ``layer0``.
The user's calls are groups too (``kind="call"``: ``loss_fn``, ``Block #2``,
``self.linear1``, ``tx.update``), nested with the name scopes: a scope inside the
calls its equations share (``loss_fn > Net > self.attn > BNTS,BSNH->BTNH``; see
``calls``).
A group of an equation with nested jaxprs is named after the function traced into it
(``scan(rnn_cell)``, ``while(body)``, ``cond(neg, pos)``), or after its source line
when that function is a lambda (``scan @ model.py:42``).

A node whose value is consumed in ``AUX_MIN_GROUPS`` or more distinct groups (a weight
or mask shared by many layers) is *auxiliary* (``aux``): a viewer may draw a copy of it
in each consuming group instead of long edges (TensorBoard's auxiliary nodes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from jaxscope._gc import gc_paused
from jaxscope._graph import calls
from jaxscope._graph.records import (
    AUX_MIN_GROUPS,
    ORIGIN_LIBRARY,
    ORIGIN_LIBRARY_CALL,
    ORIGIN_USER,
    GraphEdge,
    GraphGroup,
    GraphModel,
    GraphNode,
)
from jaxscope._jaxpr.records import JaxprModel, Region
from jaxscope._records import EqnInfo, SourceLoc, fill_in
from jaxscope._source import short_path
from jaxscope.compat.source import is_jax_file, is_library_file

_TRANSFORM = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$")


def scope_names(scope: str) -> list[str]:
    """User scope names of a name stack: ``"vmap(jvp(layer1))/inner"`` → ``["layer1", "inner"]``.

    Transform wrappers (``vmap(...)``, ``jvp(...)``, ``transpose(...)``) are peeled off;
    components left empty (a bare transform) are dropped.
    """
    return [name for kind, name in parse_name_stack(scope) if kind == "scope"]


def parse_name_stack(scope: str) -> list[tuple[str, str]]:
    """A printed name stack as ``EqnInfo.name_stack`` pairs (for records that lack
    them): ``"transpose(jvp(layer0))/attn"`` → transpose, jvp, layer0, attn."""
    entries: list[tuple[str, str]] = []
    for part in scope.split("/"):
        part = part.strip()
        while True:
            match = _TRANSFORM.match(part)
            if match is None:
                break
            entries.append(("transform", match.group(1)))
            part = match.group(2)
        if part:
            entries.append(("scope", part))
    return entries


def scope_path(info: EqnInfo) -> list[tuple[str, bool]]:
    """``(name, backward)`` for each scope of ``info``'s name stack, outermost first;
    ``backward`` when a ``transpose`` transform (the backward pass) applies to it.

    A transpose after the last scope (``loss/transpose(jvp())``) adds an unnamed
    backward scope, shown as ``backward``, so it stays apart from the forward part.
    """
    entries = info.name_stack or parse_name_stack(info.scope)
    path: list[tuple[str, bool]] = []
    backward = False
    for kind, name in entries:
        if kind == "transform":
            backward = backward or name == "transpose"
        elif name:
            path.append((name, backward))
    if path and backward and not path[-1][1]:
        # jax.grad called inside a scope: its backward part, unnamed, within it
        path.append(("", True))
    return path


def _is_var(name: str) -> bool:
    # Literals are printed "1.0:f32[]"; dropped outputs "_".
    return name != "_" and ":" not in name


def _path_id(path: tuple[int, ...]) -> str:
    return ".".join(map(str, path))


def _int_param(info: EqnInfo, key: str) -> int:
    try:
        return int(info.params.get(key, "0"))
    except ValueError:
        return 0


def operand_map(info: EqnInfo, region_index: int, region: Region) -> list[int | None]:
    """For each binder of nested ``region``: the index of the operand of ``info`` it
    aliases, or None (see the module docstring for the rules)."""
    n_ops = len(info.inputs)
    n_in = len(region.invars)
    if info.primitive == "while":
        cond_n = _int_param(info, "cond_nconsts")
        body_n = _int_param(info, "body_nconsts")
        carry = range(cond_n + body_n, n_ops)
        consts = (
            range(cond_n)
            if region.label == "cond_jaxpr"
            else range(cond_n, cond_n + body_n)
        )
        aligned: list[int | None] = [*consts, *carry]
        return aligned[:n_in]
    if info.primitive == "cond":
        return [i + 1 if i + 1 < n_ops else None for i in range(n_in)]
    if n_in == n_ops:
        return list(range(n_in))
    offset = n_ops - n_in
    return [i + offset if 0 <= i + offset < n_ops else None for i in range(n_in)]


def result_regions(info: EqnInfo, regions: list[Region]) -> list[Region]:
    """The nested regions whose results are ``info``'s results (not while's cond)."""
    if info.primitive == "while":
        return [r for r in regions if r.label != "cond_jaxpr"]
    return regions


def _group_function(info: EqnInfo, children: list[Region]) -> str:
    """The functions traced into ``info``'s nested jaxprs, ``", "``-joined (one per
    distinct name; while's cond left out), or ``""`` when any is a lambda or unnamed."""
    names: list[str] = []
    for region in result_regions(info, children):
        name = region.function
        if not name or name.startswith("<"):
            return ""
        if name not in names:
            names.append(name)
    return ", ".join(names)


def _group_label(info: EqnInfo, children: list[Region], function: str) -> str:
    name = info.params.get("name")
    if name:
        return f"{info.primitive} {name}"
    kind = info.primitive
    traced_for = {r.traced_for for r in children}
    if traced_for == {"fori_loop"}:
        kind = "fori_loop"
    if function:
        return f"{kind}({function})"
    if info.source is not None:
        return f"{kind} @ {short_path(info.source.file)}:{info.source.line}"
    return kind


def _in_library(file: str) -> bool:
    """Whether a traced function's ``file`` is an installed library's or JAX's."""
    return bool(file) and (is_library_file(file) or is_jax_file(file))


def _eqn_fields(info: EqnInfo) -> dict[str, Any]:
    """What a node or group shows of its equation."""
    return {
        "primitive": info.primitive,
        "path": info.path,
        "inputs": tuple(info.inputs),
        "outputs": tuple(info.outputs),
        "params": dict(info.params),
        "source": info.source,
        "scope": info.scope,
    }


class _Wiring:
    """The edges: which leaf nodes produce each variable, and who consumes it.

    A nested jaxpr's binders alias its equation's operands and results, so the
    producers of a variable are leaf nodes at any depth (several for cond's branches).
    """

    def __init__(self) -> None:
        self.edges: list[GraphEdge] = []
        self.producers: dict[str, list[str]] = {}

    def produce(self, name: str, nid: str) -> None:
        self.producers.setdefault(name, []).append(nid)

    def consume(self, dst: str, inputs: Iterable[tuple[str, str]]) -> None:
        # Each destination consumes in one call, so an edge repeats only within it
        # (``x * x``, or one producer reaching it through two aliases): a set per
        # call, not one of every edge (which cost as much again as the edges).
        producers = self.producers
        append = self.edges.append
        seen: set[tuple[str, str]] = set()
        for name, aval in inputs:
            if name == "_" or ":" in name:  # not _is_var(name), inlined: per operand
                continue
            for src in producers.get(name, ()):
                key = (src, name)
                if key not in seen:
                    seen.add(key)
                    append(GraphEdge(src=src, dst=dst, var=name, type=aval))

    def enter(self, gid: str, info: EqnInfo, children: list[Region]) -> None:
        """Alias the nested binders to ``info``'s operands (group ``gid``)."""
        used: set[int] = set()
        for j, child in enumerate(children):
            ops = operand_map(info, j, child)
            for (binder, _aval), op in zip(child.invars, ops, strict=False):
                if op is not None:
                    used.add(op)
                    self._alias(binder, info.inputs[op][0])
        # Operands no nested binder takes (cond's branch index) feed the group.
        self.consume(gid, [op for k, op in enumerate(info.inputs) if k not in used])

    def leave(self, info: EqnInfo, children: list[Region]) -> None:
        """``info``'s results are produced by what produces its regions' results."""
        for name, _aval in info.outputs:
            if _is_var(name):
                self.producers[name] = []
        for child in result_regions(info, children):
            for (outer, _a), (inner, _b) in zip(
                info.outputs, child.outvars, strict=False
            ):
                if _is_var(outer) and _is_var(inner):
                    self.producers[outer].extend(self.producers.get(inner, ()))

    def _alias(self, inner: str, outer: str) -> None:
        # Replaced, not extended: a jitted function called twice nests one shared
        # jaxpr (the same binder names) under both calls.
        if _is_var(inner) and _is_var(outer):
            self.producers[inner] = list(self.producers.get(outer, ()))


class _Groups:
    """The group tree: parents before children, each found by id."""

    def __init__(self) -> None:
        self.items: list[GraphGroup] = []
        self.index: dict[str, int] = {}

    def add(self, group: GraphGroup) -> None:
        self.index[group.id] = len(self.items)
        self.items.append(group)

    def sized(self, nodes: list[GraphNode]) -> list[GraphGroup]:
        """The groups with ``size`` (the nodes inside each, at any depth) and
        ``lines`` (the source lines those nodes come from)."""
        index, items = self.index, self.items
        sizes = [0] * len(items)
        # per group: file -> [count, first line, last line]
        spans: list[dict[str, list[int]]] = [{} for _ in items]
        for node in nodes:  # each node counts in its own group...
            if node.group is None:
                continue
            k = index[node.group]
            sizes[k] += 1
            loc = node.source
            if loc is not None:
                _widen(spans[k], loc.file, 1, loc.line, loc.line)
        for k in range(len(items) - 1, -1, -1):  # ...then in its ancestors
            parent = items[k].parent
            if parent is None:
                continue
            p = index[parent]
            sizes[p] += sizes[k]
            for file, (count, first, last) in spans[k].items():
                _widen(spans[p], file, count, first, last)
        out: list[GraphGroup] = []
        for k, g in enumerate(self.items):
            lines = None
            if spans[k]:
                file, (_, first, last) = max(spans[k].items(), key=lambda i: i[1][0])
                lines = (file, first, last)
            out.append(fill_in(g, size=sizes[k], lines=lines))
        return out


def _widen(
    spans: dict[str, list[int]], file: str, count: int, first: int, last: int
) -> None:
    """Add ``count`` nodes on lines ``first``..``last`` of ``file`` to ``spans``."""
    span = spans.get(file)
    if span is None:
        spans[file] = [count, first, last]
    else:
        span[0] += count
        span[1] = min(span[1], first)
        span[2] = max(span[2], last)


class _Builder:
    """Walks the regions into nodes and ``groups``; ``wires`` makes the edges."""

    def __init__(self, raw_files: dict[str, str]) -> None:
        self.nodes: list[GraphNode] = []
        self.groups = _Groups()
        self.wires = _Wiring()
        # scope_path by (name stack, scope): equations share a few name stacks
        self.paths: dict[tuple[int, str], list[tuple[str, bool]]] = {}
        self.steps = calls.CallSteps()
        self.shapes = calls.Shapes(raw_files)
        self.call_ids: set[str] = set()
        self.library_calls: set[str] = set()  # call groups of a library's function
        # call group -> the nodes and groups directly in it
        self.members: dict[str, int] = {}
        self.origins: dict[str | None, int] = {None: ORIGIN_USER}  # see GraphGroup

    def call_group(
        self,
        label: str,
        parent: str | None,
        call_site: tuple[str, int],
        function: str,
        backward: bool,
        library: bool,
    ) -> str:
        gid = f"k{len(self.groups.items)}"
        self.call_ids.add(gid)
        origin = ORIGIN_USER
        if library:
            self.library_calls.add(gid)
            inside = self.origins[parent] == ORIGIN_LIBRARY
            origin = ORIGIN_LIBRARY if inside else ORIGIN_LIBRARY_CALL
        self.origins[gid] = origin
        self.placed(parent)
        self.groups.add(
            GraphGroup(
                id=gid,
                kind="call",
                label=label,
                parent=parent,
                size=0,
                source=SourceLoc(file=call_site[0], line=call_site[1]),
                backward=backward,
                function=function,
                origin=origin,
            )
        )
        return gid

    def scope_group(
        self, label: str, parent: str | None, scope: str, backward: bool
    ) -> str:
        gid = f"s{len(self.groups.items)}"
        self.placed(parent)
        origin = self.origins[gid] = self.origins[parent]
        self.groups.add(
            GraphGroup(
                id=gid,
                kind="scope",
                label=label,
                parent=parent,
                size=0,
                scope=scope,
                backward=backward,
                origin=origin,
            )
        )
        return gid

    def placed(self, parent: str | None) -> None:
        if parent is not None and parent in self.call_ids:
            self.members[parent] = self.members.get(parent, 0) + 1

    def scope_path(self, info: EqnInfo) -> list[tuple[str, bool]]:
        """``scope_path(info)``, computed once per distinct name stack."""
        # by id: the model's EqnInfos keep each name stack alive while this runs
        key = (id(info.name_stack), info.scope)
        path = self.paths.get(key)
        if path is None:
            path = self.paths[key] = scope_path(info)
        return path

    def region(
        self, region: Region, container: str | None, backward: bool = False
    ) -> None:
        """The nodes and groups of ``region`` inside ``container``; ``backward`` when
        the region is part of a backward pass (its equations' name stacks are relative
        to the equation holding it, so they do not say so)."""
        paths = [self.scope_path(info) for info in region.eqns]
        # Name scopes (jax.named_scope, Linen and Equinox modules, those a library
        # opens) and the user's calls nest: each scope inside the calls its
        # equations all share (see ``calls``).
        in_calls = calls.CallGroups(
            self.shapes,
            self.call_group,
            self.scope_group,
            [self.steps.of(info, backward) for info in region.eqns],
            backward,
            paths if any(paths) else None,
        )
        for i, (name, aval) in enumerate(region.constvars):
            nid = f"c{_path_id(region.path)}_{i}" if region.path else f"c{i}"
            self.nodes.append(
                GraphNode(
                    id=nid,
                    kind="const",
                    label=f"const {name}",
                    group=container,
                    outputs=((name, aval),),
                )
            )
            self.wires.produce(name, nid)
        nested = region.children
        append = self.nodes.append
        consume, producers = self.wires.consume, self.wires.producers
        parent_of, placed = in_calls.parent, self.placed
        for index, info in enumerate(region.eqns):
            parent = parent_of(index, container)
            placed(parent)
            children = nested.get(index)
            if children:
                self.group(info, children, parent, backward)
                continue
            eqn_path = info.path
            nid = "n" + _path_id(eqn_path)
            outputs = tuple(info.outputs)
            append(
                GraphNode(
                    id=nid,
                    kind="eqn",
                    label=info.primitive,
                    group=parent,
                    primitive=info.primitive,
                    path=eqn_path,
                    inputs=tuple(info.inputs),
                    outputs=outputs,
                    params=info.params,  # a record's, never changed: shared
                    source=info.source,
                    scope=info.scope,
                    frames=info.frames,
                )
            )
            # the node consumes its inputs and produces its outputs (wires' work,
            # inlined: once per equation)
            consume(nid, info.inputs)
            for name, _aval in outputs:
                if name != "_" and ":" not in name:
                    producers[name] = [nid]

    def group(
        self,
        info: EqnInfo,
        children: list[Region],
        parent: str | None,
        backward: bool = False,
    ) -> None:
        """An equation with nested jaxprs: its group, and a group per nested jaxpr
        when it has several."""
        gid = f"g{_path_id(info.path)}"
        function = _group_function(info, children)
        origin = self.origins[parent]
        if any(_in_library(r.function_file) for r in children):
            origin = ORIGIN_LIBRARY
        self.origins[gid] = origin
        self.groups.add(
            GraphGroup(
                id=gid,
                kind=info.primitive,
                label=_group_label(info, children, function),
                parent=parent,
                size=0,
                function=function,
                origin=origin,
                **_eqn_fields(info),
            )
        )
        self.wires.enter(gid, info, children)
        backward = backward or calls.is_backward(info)
        for child in children:
            if len(children) == 1:
                self.region(child, gid, backward)
                continue
            rid = f"r{_path_id(child.path)}"
            named = child.function and not child.function.startswith("<")
            self.groups.add(
                GraphGroup(
                    id=rid,
                    kind="region",
                    label=f"{child.label} ({child.function})" if named else child.label,
                    function=child.function if named else "",
                    parent=gid,
                    size=0,
                    path=child.path,
                    inputs=tuple(child.invars),
                    outputs=tuple(child.outvars),
                    origin=origin,
                )
            )
            self.origins[rid] = origin
            self.region(child, rid, backward)
        self.wires.leave(info, children)


def build_graph(model: JaxprModel, title: str = "") -> GraphModel:
    """The dataflow graph of a ``JaxprModel`` (see the module docstring)."""
    with gc_paused():
        return _build_graph(model, title)


def _build_graph(model: JaxprModel, title: str) -> GraphModel:
    builder = _Builder(model.raw_files)
    wires = builder.wires
    top = model.top
    names = model.arg_names or ()
    for i, (name, aval) in enumerate(top.invars):
        label = names[i] if i < len(names) and names[i] else name
        nid = f"i{i}"
        builder.nodes.append(
            GraphNode(
                id=nid, kind="input", label=label, group=None, outputs=((name, aval),)
            )
        )
        wires.produce(name, nid)
    builder.region(top, None)
    paths = model.result_paths or ()
    for i, (name, aval) in enumerate(top.outvars):
        label = paths[i] if i < len(paths) and paths[i] else f"out[{i}]"
        nid = f"o{i}"
        builder.nodes.append(
            GraphNode(
                id=nid, kind="output", label=label, group=None, inputs=((name, aval),)
            )
        )
        wires.consume(nid, [(name, aval)])
    nodes = builder.nodes
    if builder.call_ids:
        kept, moved = calls.finish(
            builder.groups.items,
            builder.call_ids,
            builder.members,
            builder.library_calls,
        )
        builder.groups = _Groups()
        for group in kept:
            builder.groups.add(group)
        for node in nodes:
            if node.group in moved:
                fill_in(node, group=moved[node.group])
    groups = builder.groups.sized(nodes)
    return GraphModel(
        title=title,
        nodes=_mark_aux(nodes, wires.edges, groups),
        edges=wires.edges,
        groups=groups,
        raw_files=dict(model.raw_files),
    )


def _mark_aux(
    nodes: list[GraphNode], edges: list[GraphEdge], groups: list[GraphGroup]
) -> list[GraphNode]:
    """``nodes`` with ``aux`` set on those whose value enters ``AUX_MIN_GROUPS`` or
    more distinct groups from outside: for each consumer, the outermost group that
    holds it but not the producer (consumers beside or around the producer count
    for nothing, as their edges stay short)."""
    if len(groups) < AUX_MIN_GROUPS:  # too few groups to enter: nothing is aux
        return nodes
    parent = {g.id: g.parent for g in groups}
    group_of: dict[str, str | None] = {n.id: n.group for n in nodes}
    entered: dict[str, set[str]] = {}
    # per producer group: it and its ancestors (few distinct groups, many edges)
    arounds: dict[str | None, set[str | None]] = {}
    for e in edges:
        src_group = group_of[e.src]
        around = arounds.get(src_group)
        if around is None:
            around = arounds[src_group] = {None}
            gid = src_group
            while gid is not None:
                around.add(gid)
                gid = parent[gid]
        # A destination that is no node is a group consuming the value itself.
        gid = group_of.get(e.dst, e.dst)
        while gid is not None and parent[gid] not in around:
            gid = parent[gid]
        if gid is not None and gid not in around:
            entered.setdefault(e.src, set()).add(gid)
    aux = {src for src, into in entered.items() if len(into) >= AUX_MIN_GROUPS}
    if not aux:
        return nodes
    return [fill_in(n, aux=True) if n.id in aux else n for n in nodes]
