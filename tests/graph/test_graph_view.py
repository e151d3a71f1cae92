"""GraphView: DOT and SVG export, text and HTML output, the widget, errors."""

from __future__ import annotations

import json
import os
import re

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope import GraphView, GraphvizMissingError
from jaxscope._display import GRAPH_MIME
from jaxscope._graph.render import (
    TREE_BUDGET,
    TREE_WIDTH,
    json_for_script,
    payload_from_html,
)
from jaxscope._source import short_path

HERE = os.path.abspath(__file__)
CONFTEST = os.path.join(os.path.dirname(HERE), "conftest.py")
# Files as the text tree shows them: relative to the working directory.
CONF = re.escape(short_path(CONFTEST))


def test_graph_returns_a_graph_view_with_nodes_edges_groups(nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    assert isinstance(g, GraphView) and isinstance(g, js.GraphView)
    assert g.title == "nested_program"
    assert repr(g) == "<GraphView of nested_program: 21 nodes, 24 edges, 11 groups>"


def test_to_dot_has_a_cluster_per_group_and_an_edge_per_use(nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    dot = g.to_dot()
    assert dot.startswith("digraph nested_program {")
    assert dot.count("subgraph cluster_") == len(g.groups)
    assert dot.count(" -> ") == len(g.edges)
    assert 'label="jit _inner"' in dot
    assert "lhead=cluster_g5" in dot  # the cond's branch index ends at the cond box


def test_to_svg_draws_every_node(nested, require_dot):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    svg = g.to_svg()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    assert svg.count('class="node"') == len(g.nodes)
    assert svg.count('class="cluster"') == len(g.groups)


def test_to_svg_without_dot_says_how_to_get_it(monkeypatch, tmp_path, nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(
        GraphvizMissingError, match=r"needs the Graphviz `dot` program"
    ) as info:
        g.to_svg()
    assert "\n" not in str(info.value)
    assert isinstance(info.value, js.JaxscopeError) and isinstance(
        info.value, RuntimeError
    )
    assert g.to_dot().startswith("digraph")  # DOT needs no binary


def test_to_dot_refuses_huge_graphs_with_a_pointer_to_the_viewer(monkeypatch):
    import jaxscope._graph.view as gv

    monkeypatch.setattr(gv, "DOT_MAX_NODES", 3)
    g = js.graph(lambda x: jnp.cos(jnp.sin(x)) + 1.0)(jnp.ones(2))
    with pytest.raises(
        js.JaxscopeError,
        match=r"5 nodes, more than to_dot draws \(3\); use the notebook viewer",
    ):
        g.to_dot()


def test_dot_labels_with_html_like_names_are_plain_text(require_dot):
    def f(x):
        with jax.named_scope("<b>"):
            return jnp.sin(x)

    f.__name__ = f.__qualname__ = "<script>bad"
    g = js.graph(f)(jnp.ones(2))
    dot = g.to_dot()
    assert 'label="<b>"' in dot  # quoted, not an HTML-like <...> label
    assert "<svg" in g.to_svg()


def test_text_rendering_is_a_group_tree(nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    text = str(g)
    lines = text.splitlines()
    assert lines[0] == "graph of nested_program: 21 nodes, 24 edges, 11 groups"
    assert re.search(rf"^├── pre  2 eqns  {CONF}:\d+$", text, re.M)
    assert re.search(rf"^│   └── jit _inner  2 eqns  {CONF}:\d+$", text, re.M)
    assert re.search(rf"^├── scan @ {CONF}:(\d+)  4 eqns  {CONF}:\1$", text, re.M)
    assert re.search(rf"^│   ├── cond_jaxpr  1 eqn  {CONF}:\d+$", text, re.M)
    assert re.search(rf"^├── custom_jvp_call\(_cj\)  1 eqn  {CONF}:\d+$", text, re.M)
    assert lines[-1] == "└── 4 eqns outside groups"


def test_text_tree_shows_files_relative_to_the_working_directory(nested, monkeypatch):
    monkeypatch.chdir(os.path.dirname(os.path.dirname(HERE)))  # tests/
    text = str(js.graph(nested)(jnp.ones(4), 1.0))
    assert CONFTEST not in text
    assert re.search(
        r"^├── scan @ graph/conftest\.py:(\d+)  4 eqns  graph/conftest\.py:\1$",
        text,
        re.M,
    )


def test_text_tree_is_bounded_and_counts_what_it_leaves_out():
    def deep(x):
        for i in range(30):
            with jax.named_scope(f"layer{i}"):
                for j in range(3):
                    with jax.named_scope(f"sub{j}"):
                        with jax.named_scope("inner"):
                            with jax.named_scope("leaf"):
                                with jax.named_scope("deepest"):
                                    x = jnp.sin(x)
                                    x = x * 2.0
        return x

    g = js.graph(deep)(jnp.ones(3))
    assert len(g.groups) == 30 * (1 + 3 * 4)
    text = str(g)
    lines = text.splitlines()
    assert len(lines) <= 2 + 2 * TREE_BUDGET + TREE_WIDTH  # a "…" line per parent
    # the first TREE_WIDTH layers are shown, the rest summed up
    assert re.search(
        rf"^├── layer0  6 eqns  {re.escape(short_path(HERE))}:\d+\u2013\d+$", text, re.M
    )
    hidden = 30 - TREE_WIDTH
    assert lines[-1] == f"└── … {hidden} more groups ({hidden * 6} eqns)"
    assert "deepest" not in text  # beyond TREE_DEPTH
    assert re.search(r"… 1 group \(2 eqns\)$", text, re.M)


def test_html_embeds_the_viewer_and_escaped_data(nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    bundle = g._repr_mimebundle_()
    # no widget view, kernel or not: nothing a reopened notebook could miss
    assert set(bundle) == {"text/plain", "text/html", GRAPH_MIME}
    assert bundle[GRAPH_MIME] == {"version": 1}  # the data lives once, in the HTML
    html = bundle["text/html"]
    assert "data-jaxscope-graph" in html and "mountStatic" in html
    payload = payload_from_html(html)
    assert payload == json.loads(json.dumps(g.payload()))


def test_json_for_script_cannot_close_the_script_element():
    text = json_for_script({"a": "</script><script>alert(1)</script>", "b": "<!--&"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["a"] == "</script><script>alert(1)</script>"


def test_html_never_contains_raw_user_markup():
    def f(x):
        with jax.named_scope("<script>window.__pwned=1</script>"):
            return jnp.sin(x)

    f.__name__ = f.__qualname__ = "<img src=x onerror=alert(1)>"
    html = js.graph(f)(jnp.ones(2))._repr_mimebundle_()["text/html"]
    assert "<script>window" not in html and "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # the text summary, escaped


def test_widget_carries_the_payload(nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    w = g.widget()
    assert type(w).__name__ == "GraphWidget"
    assert w.graph == g.payload()
    assert w.selected == -1
    # the committed bundle, read from package data: no Node, no CDN
    assert (
        "mountStatic" in w._esm and "import(" not in w._esm and "https://" not in w._esm
    )
    assert ".jaxscope-graph" in w._css


def test_graph_rejects_a_non_callable_with_one_line():
    with pytest.raises(js.InvalidCallError) as info:
        js.graph(42)
    assert "\n" not in str(info.value)


def test_graph_reports_trace_errors_as_one_line():
    def bad(x):
        return x @ jnp.ones((5, 5))

    with pytest.raises(js.TraceError) as info:
        js.graph(bad)(jnp.ones(3))
    assert "\n" not in str(info.value)


def test_graph_takes_static_args_and_shape_dtype_structs():
    def f(x, n):
        for _ in range(n):
            x = jnp.sin(x)
        return x

    g = js.graph(f, static_argnums=1)(jax.ShapeDtypeStruct((3,), jnp.float32), 3)
    assert [n.label for n in g.nodes if n.kind == "eqn"] == ["sin", "sin", "sin"]


def test_jaxpr_view_graph_is_the_same_graph(nested):
    v = js.jaxpr(nested)(jnp.ones(4), 1.0)
    a, b = v.graph(), js.graph(nested)(jnp.ones(4), 1.0)
    assert [n.id for n in a.nodes] == [n.id for n in b.nodes]
    assert a.edges == b.edges


def test_the_html_carries_the_payload_compressed():
    def f(x):
        for i in range(300):
            with jax.named_scope(f"block{i % 30}"):
                x = jnp.sin(x) * 1.5
        return x

    g = js.graph(f)(jnp.ones(3))
    html = g._repr_mimebundle_()["text/html"]
    raw = len(json.dumps(g.payload(), separators=(",", ":")))
    data = re.search(r'class="jaxscope-graph-data"[^>]*>([^<]*)<', html)
    assert data and len(data.group(1)) < raw / 3
    assert payload_from_html(html) == json.loads(json.dumps(g.payload()))
    with pytest.raises(ValueError, match="no jaxscope graph payload"):
        payload_from_html("<p>a table</p>")
