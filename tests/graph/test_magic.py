"""``%jaxgraph`` and ``%jaxpr --graph`` in a real IPython shell."""

from __future__ import annotations

import re

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

TRAIN = """
import jax, jax.numpy as jnp
def loss(params, x):
    for i, w in enumerate(params):
        with jax.named_scope(f"block{i}"):
            h = jnp.tanh(x @ w)
            x = x + h
    return jnp.mean(x ** 2)
@jax.jit
def step(params, x):
    grads = jax.grad(loss)(params, x)
    return [p - 0.1 * g for p, g in zip(params, grads)]
params = [jnp.ones((4, 4)), jnp.ones((4, 4))]
x = jnp.ones((2, 4))
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
    assert re.search(r"^├── block  2 eqns  In \[\d+\]:\d+$", text, re.M)
    assert text.splitlines()[-1] == "└── 1 eqn outside groups"


def test_jaxgraph_in_a_terminal_prints_the_group_tree_of_a_train_step(ip):
    ip.run_cell(TRAIN)
    with capture_output() as captured:
        ip.run_line_magic("jaxgraph", "step(params, x)")
    [out] = _graph_outputs(captured)
    lines = out.data["text/plain"].splitlines()
    tops = [line for line in lines if line.startswith(("├── ", "└── "))]
    labels = [re.sub(r"  \d+ eqns?.*$", "", t[4:]) for t in lines[1:]]
    # the loss function's call holds the scopes it opens, in each pass
    assert labels[:6] == [
        "loss",
        "├── block0",
        "└── block1",
        "loss (backward)",
        "├── block1",
        "└── block0",
    ]
    assert len(tops) == 3  # and the update, outside groups
    assert all(
        re.search(r"  \d+ eqns  In \[\d+\]:\d+(\u2013\d+)?$", t) for t in lines[1:7]
    )


def test_jaxgraph_dot_and_svg_write_files(ip, tmp_path, require_dot):
    ip.run_cell(SETUP)
    dot, svg = tmp_path / "g.dot", tmp_path / "g.svg"
    with capture_output() as captured:
        ip.run_line_magic("jaxgraph", f"--dot {dot} --svg {svg} f(x)")
    assert dot.read_text().startswith("digraph f {")
    assert "cluster_s0" in dot.read_text()
    assert svg.read_text().lstrip().startswith(("<?xml", "<svg"))
    assert f"DOT written to {dot}" in captured.stdout
    assert f"SVG written to {svg}" in captured.stdout
    assert not _graph_outputs(captured)


def test_jaxgraph_bare_dot_prints_even_before_a_call_with_spaces(ip):
    ip.run_cell(SETUP + "def g(a, b):\n    return f(a) + b\n")
    with capture_output() as captured:
        ip.run_line_magic("jaxgraph", "--dot g(x, 2.0)")
    assert captured.stdout.startswith("digraph g {")


def test_jaxgraph_unwritable_file_is_a_one_line_usage_error(ip, tmp_path):
    ip.run_cell(SETUP)
    target = tmp_path / "missing" / "g.dot"
    with pytest.raises(UsageError, match=r"cannot write DOT to .*g\.dot: ") as info:
        ip.run_line_magic("jaxgraph", f"--dot {target} f(x)")
    assert "\n" not in str(info.value)


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
