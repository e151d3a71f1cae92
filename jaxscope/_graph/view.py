"""``GraphView``: the dataflow graph of a jaxpr, with DOT/SVG export and the viewer."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from jaxscope._display import GRAPH_MIME, Renderable, printable, widget_of
from jaxscope._exceptions import GraphvizMissingError, JaxscopeError
from jaxscope._format import plural
from jaxscope._graph.model import build_graph
from jaxscope._graph.payload import to_payload
from jaxscope._graph.records import GraphEdge, GraphGroup, GraphModel, GraphNode
from jaxscope._source import full_loc

# Nodes drawn by to_dot before it refuses (Graphviz itself slows to minutes beyond).
DOT_MAX_NODES = 5000


class GraphView(Renderable):
    """The dataflow graph of one call's jaxpr.

    Attributes:
        nodes: ``GraphNode`` list: inputs, outputs, constants, equations.
        edges: ``GraphEdge`` list: one per variable use, labelled with its type.
        groups: ``GraphGroup`` list: nested jaxprs and name scopes, parents first.
        model: the ``GraphModel`` holding them.

    In a notebook it shows as the interactive viewer (pan, zoom, expand groups, click
    a node for its source line) with no widget model, so an exported or reopened
    notebook shows it too: the ``text/html`` output holds the viewer and its data, and
    the ``application/vnd.jaxscope.graph+json`` part lets JupyterLab's jaxscope
    extension draw it from that same data (also in untrusted notebooks). ``widget()``
    gives a live anywidget instead, whose ``selected`` trait Python can read.
    """

    __slots__ = ("_payload", "model")

    # The graph data lives once, in the text/html; this part only says "draw it".
    extra_mime = MappingProxyType({GRAPH_MIME: {"version": 1}})
    # Its script draws the viewer; the stylesheet serves that, not the static markup.
    static_styles = False

    def __init__(self, model: GraphModel) -> None:
        self.model = model
        self._payload: dict[str, Any] | None = None

    @property
    def title(self) -> str:
        return self.model.title

    @property
    def nodes(self) -> list[GraphNode]:
        return self.model.nodes

    @property
    def edges(self) -> list[GraphEdge]:
        return self.model.edges

    @property
    def groups(self) -> list[GraphGroup]:
        return self.model.groups

    def payload(self) -> dict[str, Any]:
        """The JSON-able data the browser viewer reads (computed once)."""
        if self._payload is None:
            self._payload = to_payload(self.model)
        return self._payload

    def to_dot(self) -> str:
        """The graph as Graphviz DOT source (groups as clusters)."""
        return _dot(self.model).source

    def to_svg(self) -> str:
        """The graph drawn by Graphviz ``dot`` as an SVG string."""
        import graphviz

        try:
            data = _dot(self.model).pipe(format="svg")
        except graphviz.ExecutableNotFound:
            raise GraphvizMissingError(
                "GraphView.to_svg needs the Graphviz `dot` program, not found on PATH; "
                "install Graphviz (apt-get install graphviz / brew install graphviz) "
                "or use to_dot() or the notebook viewer, which need none"
            ) from None
        return data.decode("utf-8")

    def widget(self) -> Any:
        """An anywidget ``GraphWidget`` showing this graph (for notebooks)."""
        return widget_of(self)

    def __repr__(self) -> str:
        title = f" of {printable(self.title)}" if self.title else ""
        return (
            f"<GraphView{title}: {plural(len(self.nodes), 'node')}, "
            f"{plural(len(self.edges), 'edge')}, {plural(len(self.groups), 'group')}>"
        )


def _dot_id(text: str) -> str:
    return text.replace(".", "_")


def _dot_text(text: str) -> str:
    """A user string for a DOT attribute: control characters spelled out, long names
    cut (Graphviz rejects both), and backslashes doubled so Graphviz shows them
    rather than reading ``\\N`` or an escaped closing quote."""
    return printable(text).replace("\\", "\\\\")


def _dot(model: GraphModel) -> Any:
    import graphviz

    if len(model.nodes) > DOT_MAX_NODES:
        raise JaxscopeError(
            f"the graph has {len(model.nodes)} nodes, more than to_dot draws "
            f"({DOT_MAX_NODES}); use the notebook viewer, which lays out groups lazily"
        )
    root = graphviz.Digraph(
        name=_dot_text(model.title or "jaxpr"),
        graph_attr={
            "rankdir": "TB",
            "compound": "true",
            "fontname": "Helvetica",
            "fontsize": "10",
        },
        node_attr={
            "shape": "box",
            "style": "rounded,filled",
            "fillcolor": "#eef3fb",
            "fontname": "Helvetica",
            "fontsize": "10",
        },
        edge_attr={"fontname": "Helvetica", "fontsize": "8", "color": "#777777"},
    )
    children: dict[str | None, list[GraphGroup]] = {}
    for group in model.groups:
        children.setdefault(group.parent, []).append(group)
    members: dict[str | None, list[GraphNode]] = {}
    for node in model.nodes:
        members.setdefault(node.group, []).append(node)

    def fill(graph: Any, gid: str | None) -> None:
        for node in members.get(gid, ()):
            attrs: dict[str, str] = {}
            if node.kind == "input":
                attrs = {"shape": "ellipse", "fillcolor": "#e3f4e1"}
            elif node.kind == "output":
                attrs = {"shape": "ellipse", "fillcolor": "#fbe9d8"}
            elif node.kind == "const":
                attrs = {"shape": "note", "fillcolor": "#f2f2f2"}
            label = _dot_text(node.label)
            if node.kind == "eqn" and node.outputs:
                label += "\n" + _dot_text(" ".join(t for _, t in node.outputs))
            if node.source is not None:
                attrs["tooltip"] = _dot_text(full_loc(node.source))
            graph.node(_dot_id(node.id), label=graphviz.nohtml(label), **attrs)
        for group in children.get(gid, ()):
            with graph.subgraph(name=f"cluster_{_dot_id(group.id)}") as sub:
                sub.attr(
                    label=graphviz.nohtml(_dot_text(group.label)),
                    style="rounded",
                    color="#9bb0d3" if group.kind != "scope" else "#c9b26b",
                )
                fill(sub, group.id)

    fill(root, None)
    node_ids = {node.id for node in model.nodes}
    parent_of = {g.id: g.parent for g in model.groups}
    first_leaf: dict[str, str] = {}
    for node in model.nodes:
        gid = node.group
        while gid is not None and gid not in first_leaf:
            first_leaf[gid] = node.id
            gid = parent_of[gid]
    for edge in model.edges:
        label = graphviz.nohtml(_dot_text(edge.type))
        if edge.dst in node_ids:
            root.edge(_dot_id(edge.src), _dot_id(edge.dst), label=label)
        elif edge.dst in first_leaf:  # an operand of the group itself: end at its box
            root.edge(
                _dot_id(edge.src),
                _dot_id(first_leaf[edge.dst]),
                label=label,
                lhead=f"cluster_{_dot_id(edge.dst)}",
            )
    return root


def graph_from_jaxpr_view(view: Any) -> GraphView:
    """The ``GraphView`` of a ``JaxprView`` (``JaxprView.graph()``, ``js.graph``)."""
    return GraphView(build_graph(view.model, title=getattr(view, "function_name", "")))
