"""The graph as the browser viewer reads it: ``to_payload`` writes format 1 (see
``_payload``), with the source lines around each node's line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from jaxscope._gc import gc_paused
from jaxscope._graph.records import AUX_MIN_GROUPS, GraphModel, GraphNode
from jaxscope._graph.sources import source_snippets
from jaxscope._paths import short_path
from jaxscope._records import SourceLoc
from jaxscope.compat.source import is_library_file


class _Strings:
    """A string table: each distinct string is sent once, referenced by index."""

    def __init__(self) -> None:
        self.table: list[str] = []
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        k = self.index.get(text)
        if k is None:
            k = self.index[text] = len(self.table)
            self.table.append(text)
        return k


_NODE_KINDS = ("eqn", "input", "output", "const")
# The payload format (``_payload``); the viewer refuses any other
# (extension/src/graph/decode.js ``FORMAT``).
FORMAT = 1


def _flat_pairs(s: _Strings, pairs: Iterable[tuple[str, str]]) -> list[int]:
    out: list[int] = []
    for a, b in pairs:
        out.append(s(a))
        out.append(s(b))
    return out


def _params(s: _Strings, params: dict[str, str]) -> list[int]:
    return _flat_pairs(s, params.items())


def _loc(s: _Strings, loc: SourceLoc | None) -> list[int]:
    if loc is None:
        return []
    return [s(loc.file), loc.line, s(loc.function or "")]


def _stacks(s: _Strings, nodes: list[GraphNode]) -> tuple[list[list[int]], list[int]]:
    """``(stacks, nodeStacks)``: each distinct call stack once, as string indices of
    its frames innermost first (``function`` for the user's code,
    ``"package/module.py:function"`` for a library's), and the stack of each node,
    run-length encoded (``stack, count, ...``; -1: none)."""
    table: list[list[int]] = []
    seen: dict[int, int] = {}  # id(frames) -> its row; the tuples live in nodes
    rows: dict[tuple[int, ...], int] = {}  # stacks that differ in lines only: one row
    texts: dict[tuple[str, str], int] = {}
    runs: list[int] = []
    for n in nodes:
        frames = n.frames
        k = seen.get(id(frames), -1) if frames else -1
        if k < 0 and frames:
            row: list[int] = []
            for f in frames:
                key = (f.file, f.function or "")
                t = texts.get(key)
                if t is None:
                    text = key[1]
                    if is_library_file(f.file):
                        text = f"{short_path(f.file)}:{text}"
                    t = texts[key] = s(text)
                row.append(t)
            k = rows.setdefault(tuple(row), len(table))
            if k == len(table):
                table.append(row)
            seen[id(frames)] = k
        if runs and runs[-2] == k:
            runs[-1] += 1
        else:
            runs.extend((k, 1))
    return table, runs


def to_payload(graph: GraphModel) -> dict[str, Any]:
    """The compact JSON the browser viewer reads (see ``_payload``)."""
    with gc_paused():
        return _payload(graph)


def _payload(graph: GraphModel) -> dict[str, Any]:
    """The compact JSON the browser viewer reads (format 1).

    Strings are interned in ``strings``; a node is ``[kind, label, group, primitive,
    inputs, outputs, params, source, scope]`` where ``group`` indexes ``groups`` (-1:
    top level), ``inputs``/``outputs``/``params`` are flat lists of string indices
    (name, type, name, type...), ``source`` is ``[file, line, function]`` or ``[]``.
    A group is ``[kind, label, parent, size, primitive, inputs, outputs, params,
    source, scope, backward, lines, function, origin]``. ``edges`` is a flat list ``src, dst,
    var, type, ...`` (node indices, then string indices; a destination ``-1 - k`` is
    group ``k``). ``sources`` maps file → line → text.

    Fields added after the first release (readers must accept their absence):

    - group ``[10]`` ``backward``: 1 for a name scope of the backward pass (under
      ``transpose``; its label ends in ``" (backward)"`` where the backward part
      starts, scopes inside it inherit the 1), else 0;
    - group ``[11]`` ``lines``: ``[file, first, last]`` (file a string index): the
      source lines of the equations inside, in the file holding most of them, or ``[]``;
    - group ``[12]`` ``function``: string index of the function(s) traced into the
      group's nested jaxprs (``"rnn_cell"``; ``""`` for a scope, a lambda or none);
    - group ``[13]`` ``origin``: whose code the group is (``GraphGroup.origin``): 0
      the user's own, 1 a library call from the user's code (``self.head``,
      ``optimizer.update``), 2 inside a library or JAX (``jit _where``); the
      viewer's first view opens 0, then 1, never 2 (absent: 0);
    - ``aux``: sorted node indices of auxiliary nodes, those consumed in
      ``auxMinGroups`` or more distinct groups (a weight or mask shared by many
      layers): draw a copy in each consuming group rather than long edges;
    - ``auxMinGroups``: that threshold (``AUX_MIN_GROUPS``);
    - ``stacks`` and ``nodeStacks``: each equation's whole call stack, for search
      (see ``_stacks``).
    """
    s = _Strings()
    group_pos = {g.id: k for k, g in enumerate(graph.groups)}
    node_pos = {n.id: k for k, n in enumerate(graph.nodes)}
    groups = [
        [
            s(g.kind),
            s(g.label),
            group_pos[g.parent] if g.parent is not None else -1,
            g.size,
            s(g.primitive),
            _flat_pairs(s, g.inputs),
            _flat_pairs(s, g.outputs),
            _params(s, g.params),
            _loc(s, g.source),
            s(g.scope),
            int(g.backward),
            [s(g.lines[0]), g.lines[1], g.lines[2]] if g.lines else [],
            s(g.function),
            g.origin,
        ]
        for g in graph.groups
    ]
    nodes = [
        [
            _NODE_KINDS.index(n.kind),
            s(n.label),
            group_pos[n.group] if n.group is not None else -1,
            s(n.primitive),
            _flat_pairs(s, n.inputs),
            _flat_pairs(s, n.outputs),
            _params(s, n.params),
            _loc(s, n.source),
            s(n.scope),
        ]
        for n in graph.nodes
    ]
    edges: list[int] = []
    for e in graph.edges:
        dst = node_pos[e.dst] if e.dst in node_pos else -1 - group_pos[e.dst]
        edges.extend((node_pos[e.src], dst, s(e.var), s(e.type)))
    stacks, node_stacks = _stacks(s, graph.nodes)
    locs = [n.source for n in graph.nodes if n.source is not None]
    locs += [g.source for g in graph.groups if g.source is not None]
    snippets = source_snippets(locs, raw_files=graph.raw_files)
    return {
        "format": FORMAT,
        "title": graph.title,
        "strings": s.table,
        "nodes": nodes,
        "groups": groups,
        "edges": edges,
        "aux": [k for k, n in enumerate(graph.nodes) if n.aux],
        "auxMinGroups": AUX_MIN_GROUPS,
        "sources": {
            file: {str(line): text for line, text in table.items()}
            for file, table in snippets.items()
        },
        "stacks": stacks,
        "nodeStacks": node_stacks,
    }
