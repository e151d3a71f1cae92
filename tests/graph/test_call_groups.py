"""Groups of the user's calls where the program has no name scopes (see ``_graph/calls``)."""

from __future__ import annotations

import linecache

import jax
import jax.numpy as jnp

import jaxscope as js
from jaxscope._graph.calls import call_label


def _calls(graph):
    return [gr.label for gr in graph.groups if gr.kind == "call"]


def _layer(w, x):
    h = x @ w
    return jnp.tanh(h)


def _stack(ws, x):
    for w in ws:  # one call site, a call per weight
        x = _layer(w, x)
    return x


def test_calls_from_one_line_in_a_loop_are_told_apart_and_numbered():
    ws = [jnp.ones((3, 3))] * 3
    g = js.graph(lambda ws, x: jnp.sum(_stack(ws, x)))(ws, jnp.ones(3))
    assert _calls(g) == ["_stack", "_layer #1", "_layer #2", "_layer #3"]
    stack = next(gr for gr in g.groups if gr.label == "_stack")
    layers = [gr for gr in g.groups if gr.label.startswith("_layer")]
    assert all(gr.parent == stack.id and gr.size == 2 for gr in layers)


def test_a_loop_inside_a_call_does_not_split_it():
    def mlp(ws, x):
        for w in ws:
            x = x @ w
            x = jnp.tanh(x)  # the line goes back on every turn: still one call
        return x

    g = js.graph(lambda ws, x: jnp.sum(mlp(ws, x)))([jnp.ones((3, 3))] * 3, jnp.ones(3))
    [mlp_group] = [gr for gr in g.groups if gr.kind == "call"]
    assert (mlp_group.label, mlp_group.size) == ("mlp", 6)


def _wrapped(w, x):
    h = jnp.tanh(
        x @ w  # runs before tanh, one line below it
    )
    return 2.0 * h


def test_a_call_spread_over_lines_is_one_call():
    def f(ws, x):
        for w in ws:
            x = _wrapped(w, x)
        return x

    g = js.graph(f)([jnp.ones((3, 3))] * 2, jnp.ones(3))
    assert _calls(g) == ["_wrapped #1", "_wrapped #2"]
    assert [gr.size for gr in g.groups if gr.kind == "call"] == [3, 3]


def test_backward_calls_mirror_the_forward_ones():
    ws = [jnp.ones((3, 3))] * 2
    g = js.graph(jax.grad(lambda ws, x: jnp.sum(_stack(ws, x))))(ws, jnp.ones(3))
    assert _calls(g) == [
        "_stack",
        "_layer #1",
        "_layer #2",
        "_stack (backward)",
        "_layer #2",
        "_layer #1",
    ]
    backward = [gr for gr in g.groups if gr.kind == "call" and gr.backward]
    assert [gr.label for gr in backward] == [
        "_stack (backward)",
        "_layer #2",
        "_layer #1",
    ]


def test_without_the_source_calls_are_merged_not_split():
    code = "def helper(w, x):\n    h = x @ w\n    return jnp.tanh(h)\n"
    namespace = {"jnp": jnp}
    exec(compile(code, "<generated-helper>", "exec"), namespace)
    helper = namespace["helper"]
    assert not linecache.getlines("<generated-helper>")

    def f(ws, x):
        for w in ws:
            x = helper(w, x)
        return jnp.sum(x)

    g = js.graph(f)([jnp.ones((3, 3))] * 3, jnp.ones(3))
    [group] = [gr for gr in g.groups if gr.kind == "call"]
    assert (group.label, group.size) == ("helper", 6)


def test_lambdas_and_single_equation_calls_make_no_group():
    def scale(x):
        return 2.0 * x

    def f(params):
        params = jax.tree.map(lambda p: jnp.tanh(p) + 1.0, params)
        return scale(params["a"]) + scale(params["b"])

    g = js.graph(f)({"a": jnp.ones(3), "b": jnp.ones(3)})
    assert _calls(g) == []
    assert len([n for n in g.nodes if n.kind == "eqn"]) == 7


def test_a_call_that_only_wraps_a_scope_adds_no_group_and_calls_beside_it_do():
    def scoped_layer(w, x):
        with jax.named_scope("block"):
            return _layer(w, x)

    def f(x):
        x = scoped_layer(jnp.ones((3, 3)), x)  # holds a scope: no call group
        x = _layer(jnp.ones((3, 3)), x)  # beside it: a group
        return jnp.sum(x)

    g = js.graph(f)(jnp.ones(3))
    assert [(gr.kind, gr.label, gr.parent) for gr in g.groups] == [
        ("scope", "block", None),
        ("call", "_layer", None),
    ]
    assert [gr.size for gr in g.groups] == [2, 2]


def _scoped_helper(w, x):
    x = 2.0 * x
    with jax.named_scope("inner"):
        x = _layer(w, x)
    return x + 1.0


def test_calls_and_named_scopes_nest_neither_hides_the_other():
    def f(x):
        x = _scoped_helper(jnp.ones((3, 3)), x)
        return jnp.sum(_stack([jnp.ones((3, 3))] * 2, x))

    g = js.graph(jax.grad(f))(jnp.ones(3))
    by_id = {gr.id: gr for gr in g.groups}
    tree = [
        (gr.kind, gr.label, by_id[gr.parent].label if gr.parent else None)
        for gr in g.groups
    ]
    assert tree == [
        ("call", "_scoped_helper", None),
        ("scope", "inner", "_scoped_helper"),
        ("call", "_stack", None),
        ("call", "_layer #1", "_stack"),
        ("call", "_layer #2", "_stack"),
        ("call", "_stack (backward)", None),
        ("call", "_layer #2", "_stack (backward)"),
        ("call", "_layer #1", "_stack (backward)"),
        ("call", "_scoped_helper (backward)", None),
        ("scope", "inner", "_scoped_helper (backward)"),
    ]
    assert [gr.size for gr in g.groups if gr.label == "inner"] == [3, 4]


def test_a_backward_call_that_only_wraps_a_scope_passes_its_label_on():
    def f(x):
        return jnp.sum(_only_scope(x))

    g = js.graph(jax.grad(f))(jnp.ones(3))
    assert [(gr.kind, gr.label, gr.parent) for gr in g.groups] == [
        ("scope", "block", None),
        ("scope", "block (backward)", None),
    ]


def _only_scope(x):
    with jax.named_scope("block"):
        return jnp.tanh(jnp.sin(x) * 2.0)


def test_call_labels():
    assert call_label("Block.__call__") == "Block"
    assert call_label("train_step.<locals>.loss_fn") == "loss_fn"
    assert call_label("MLP.encode") == "MLP.encode"
    assert call_label("make.<locals>.Block.__call__") == "Block"
    assert call_label("f") == "f"


def _mix(h, x):
    a = h * x
    b = jnp.sin(a)
    return a + b


def _scan_body(h, x):
    h = _mix(h, x)
    return h, jnp.cos(h)


def test_calls_in_a_scan_body_keep_their_direction_in_the_backward_pass():
    from jax import lax

    def f(h, xs):
        return jnp.sum(lax.scan(_scan_body, h, xs)[1])

    g = js.graph(jax.grad(f))(jnp.ones(3), jnp.ones((4, 3)))
    by_id = {gr.id: gr for gr in g.groups}
    mixes = [gr for gr in g.groups if gr.kind == "call" and "_mix" in gr.label]
    # Inside the scan, the equations' name stacks no longer say "transpose": the
    # backward scan's calls must still be backward, and not split by its line order.
    assert sorted((gr.label, gr.backward) for gr in mixes) == [
        ("_mix", False),
        ("_mix", True),
    ]
    for gr in mixes:
        scan = by_id[gr.parent]
        while scan.kind != "scan":
            scan = by_id[scan.parent]
        assert ("transpose(" in scan.scope) == gr.backward
