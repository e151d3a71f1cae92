"""``%jaxgraph`` and ``%jaxpr --graph`` in a real IPython shell."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

SETUP = """
import jax, jax.numpy as jnp
def f(x):
    with jax.named_scope("block"):
        y = jnp.sin(x) * 2.0
    return jnp.tanh(y)
x = jnp.ones(3)
"""


def _graph_outputs(captured):
    return [
        o
        for o in captured.outputs
        if "text/html" in o.data and "data-jaxscope-graph" in o.data["text/html"]
    ]


def test_jaxgraph_shows_the_graph(ip):
    ip.run_cell(SETUP)
    with capture_output() as captured:
        ip.run_line_magic("jaxgraph", "f(x)")
    outs = _graph_outputs(captured)
    assert len(outs) == 1
    text = outs[0].data["text/plain"]
    assert text.splitlines()[0] == "graph of f: 5 nodes, 4 edges, 1 group"
    assert "block  2 nodes" in text


def test_jaxgraph_dot_prints_dot_source(ip):
    ip.run_cell(SETUP)
    with capture_output() as captured:
        ip.run_line_magic("jaxgraph", "--dot f(x)")
    assert captured.stdout.startswith("digraph f {")
    assert "cluster_s0" in captured.stdout


def test_jaxpr_graph_flag_shows_the_same_graph(ip):
    ip.run_cell(SETUP)
    with capture_output() as captured:
        ip.run_line_magic("jaxpr", "--graph f(x)")
    outs = _graph_outputs(captured)
    assert len(outs) == 1
    assert outs[0].data["text/plain"].startswith("graph of f: 5 nodes")


def test_jaxgraph_source_of_a_cell_function_is_the_cell(ip):
    ip.run_cell(SETUP)
    ip.run_cell("import jaxscope as js\ng = js.graph(f)(x)")
    g = ip.user_ns["g"]
    sin = next(n for n in g.nodes if n.label == "sin")
    assert sin.source.file.startswith("In [")
    p = g.payload()
    assert "jnp.sin(x) * 2.0" in p["sources"][sin.source.file][str(sin.source.line)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", r"%jaxgraph needs a call expression"),
        ("f", r"%jaxgraph needs a call expression, got `f`"),
        ("nope(x)", r"name 'nope' is not defined"),
        ("f(x", r"syntax error"),
        ("x(x)", r"not a function"),
        ("--bogus f(x)", r"unrecognized arguments: --bogus"),
    ],
)
def test_jaxgraph_bad_input_is_a_one_line_usage_error(ip, line, message):
    ip.run_cell(SETUP)
    with pytest.raises(UsageError, match=message) as info:
        ip.run_line_magic("jaxgraph", line)
    assert "\n" not in str(info.value)


def test_jaxgraph_trace_error_is_a_one_line_usage_error(ip):
    ip.run_cell(SETUP)
    ip.run_cell("def bad(x):\n    return x @ jnp.ones((5, 5))")
    with pytest.raises(UsageError) as info:
        ip.run_line_magic("jaxgraph", "bad(x)")
    assert "\n" not in str(info.value)
