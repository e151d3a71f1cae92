"""The graph model against the jaxpr it comes from, on real nested programs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax

import jaxscope as js
from jaxscope._graph.model import operand_map, parse_name_stack, scope_names


def _expected_counts(view):
    eqns = view.eqns
    leaves = [e for e in eqns if e.n_subjaxprs == 0]
    holders = [e for e in eqns if e.n_subjaxprs > 0]
    regions = sum(e.n_subjaxprs for e in holders if e.n_subjaxprs > 1)
    n_io = len(view.top.invars) + len(view.top.outvars) + len(view.top.constvars)
    return len(leaves) + n_io, len(holders) + regions


def _check_consistent(g):
    node_ids = {n.id for n in g.nodes}
    group_ids = {gr.id for gr in g.groups}
    assert len(node_ids) == len(g.nodes)
    assert len(group_ids) == len(g.groups)
    for n in g.nodes:
        assert n.group is None or n.group in group_ids
    seen = set()
    for gr in g.groups:  # parents before children
        assert gr.parent is None or gr.parent in seen
        seen.add(gr.id)
    for e in g.edges:
        assert e.src in node_ids
        assert e.dst in node_ids or e.dst in group_ids


def test_nested_program_counts_match_the_jaxpr(nested):
    v = js.jaxpr(nested)(jnp.ones(4), 1.0)
    g = v.graph()
    n_nodes, n_eqn_groups = _expected_counts(v)
    assert len(g.nodes) == n_nodes == 21
    scopes = [gr for gr in g.groups if gr.kind == "scope"]
    assert [s.label for s in scopes] == ["pre"]
    assert len(g.groups) - len(scopes) == n_eqn_groups == 10
    kinds = sorted(gr.kind for gr in g.groups)
    assert kinds == sorted(
        [
            "scope",
            "jit",
            "scan",
            "while",
            "region",
            "region",
            "cond",
            "region",
            "region",
            "remat2",
            "custom_jvp_call",
        ]
    )
    _check_consistent(g)


def test_group_sizes_count_leaf_nodes_at_any_depth(nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    by_id = {gr.id: gr for gr in g.groups}
    for gr in g.groups:
        direct = sum(1 for n in g.nodes if n.group == gr.id)
        nested_sizes = sum(c.size for c in g.groups if c.parent == gr.id)
        assert gr.size == direct + nested_sizes
    scope = next(gr for gr in g.groups if gr.kind == "scope")
    jit = next(gr for gr in g.groups if gr.kind == "jit")
    assert jit.parent == scope.id and jit.label == "jit _inner"
    assert scope.size == jit.size == 2
    while_ = next(gr for gr in g.groups if gr.kind == "while")
    assert sorted(by_id[c].label for c in by_id if by_id[c].parent == while_.id) == [
        "body_jaxpr",
        "cond_jaxpr",
    ]


def test_inputs_are_labelled_with_argument_names_and_outputs_with_result_paths():
    def f(params, batch):
        return {"loss": jnp.sum(params["w"] * batch), "n": batch.shape[0] * 1.0}

    g = js.graph(f)({"w": jnp.ones(3)}, jnp.ones(3))
    inputs = [n.label for n in g.nodes if n.kind == "input"]
    outputs = [n.label for n in g.nodes if n.kind == "output"]
    assert inputs == ["params['w']", "batch"]
    assert outputs == ["result['loss']", "result['n']"]


def test_edges_link_producers_to_consumers_with_types():
    g = js.graph(lambda x: jnp.cos(jnp.sin(x)))(jnp.ones((2, 3)))
    labels = {n.id: n.label for n in g.nodes}
    chain = sorted((labels[e.src], labels[e.dst], e.type) for e in g.edges)
    assert chain == [
        ("cos", "result", "f32[2,3]"),
        ("sin", "cos", "f32[2,3]"),
        ("x", "sin", "f32[2,3]"),
    ]


def test_an_operand_used_twice_or_through_two_branches_is_one_edge():
    # x * x: one edge from x; a cond whose branches both pass x through: one edge
    # per (producer, consumer, variable), duplicates dropped per consumer.
    def f(x, i):
        y = x * x
        z = lax.cond(i > 0, lambda v: v, lambda v: v, y)
        return z + z

    g = js.graph(f)(jnp.ones(3), 1)
    keys = [(e.src, e.dst, e.var) for e in g.edges]
    assert len(keys) == len(set(keys))
    labels = {n.id: n.label for n in g.nodes}
    into_mul = [e for e in g.edges if labels.get(e.dst) == "mul"]
    assert [labels[e.src] for e in into_mul] == ["x"]
    into_add = [e for e in g.edges if labels.get(e.dst) == "add"]
    assert len(into_add) == 1


def test_scope_paths_are_parsed_once_per_distinct_name_stack(monkeypatch):
    from jaxscope._graph import model

    calls = []
    real = model.scope_path
    monkeypatch.setattr(model, "scope_path", lambda info: calls.append(1) or real(info))

    def f(x):
        for _ in range(20):
            with jax.named_scope("layer"):
                x = jnp.sin(x) * 2.0
        return x

    g = js.graph(f)(jnp.ones(3))
    assert len([n for n in g.nodes if n.kind == "eqn"]) == 40
    assert len(calls) == 1
    assert [gr.label for gr in g.groups] == ["layer"]


def test_edges_cross_into_and_out_of_nested_jaxprs(nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    nodes = {n.id: n for n in g.nodes}
    pairs = {
        (nodes[e.src].label, nodes[e.dst].label) for e in g.edges if e.dst in nodes
    }
    # x flows into the jit's sin; the scan's stacked output leaves to result[1]
    assert ("x", "sin") in pairs
    assert ("mul", "result[1]") in pairs
    # while body feeds both cond branches (through the cond's operand)
    assert ("add", "mul") in pairs and ("add", "sub") in pairs
    # the cond's branch index is consumed by the cond group itself
    cond = next(gr for gr in g.groups if gr.kind == "cond")
    into_cond = [e for e in g.edges if e.dst == cond.id]
    assert [e.type for e in into_cond] == ["i32[]"]


def test_scan_with_consts_and_carry_aligns_operands_positionally():
    w = jnp.arange(3.0)

    def f(c0, xs):
        return lax.scan(lambda c, x: (c * w + x, c.sum()), c0, xs)

    v = js.jaxpr(f)(jnp.ones(3), jnp.ones((5, 3)))
    scan = next(e for e in v.eqns if e.primitive == "scan")
    region = v.top.children[scan.path[-1]][0]
    assert operand_map(scan, 0, region) == list(range(len(scan.inputs)))
    g = v.graph()
    inp = {n.label: n.id for n in g.nodes if n.kind == "input"}
    consumers = {e.src for e in g.edges}
    assert inp["c0"] in consumers and inp["xs"] in consumers


def test_while_with_consts_maps_cond_and_body_binders():
    def f(x, lim, step):
        return lax.while_loop(lambda c: c < lim, lambda c: c + step, x)

    v = js.jaxpr(f)(0.0, 10.0, 1.0)
    wh = next(e for e in v.eqns if e.primitive == "while")
    cond_r, body_r = v.top.children[wh.path[-1]]
    assert wh.params["cond_nconsts"] == "1" and wh.params["body_nconsts"] == "1"
    assert operand_map(wh, 0, cond_r) == [0, 2]
    assert operand_map(wh, 1, body_r) == [1, 2]
    g = v.graph()
    nodes = {n.id: n for n in g.nodes}
    pairs = {
        (nodes[e.src].label, nodes[e.dst].label) for e in g.edges if e.dst in nodes
    }
    assert ("lim", "lt") in pairs and ("step", "add") in pairs


def test_jit_in_jit_nests_groups_three_deep():
    @jax.jit
    def a(x):
        return jnp.tanh(x)

    @jax.jit
    def b(x):
        return a(x) + 1.0

    @jax.jit
    def c(x):
        return b(x) * 2.0

    g = js.graph(lambda x: c(x))(jnp.ones(3))
    by_id = {gr.id: gr for gr in g.groups}
    tanh = next(n for n in g.nodes if n.label == "tanh")
    chain = []
    gid = tanh.group
    while gid is not None:
        chain.append(by_id[gid].label)
        gid = by_id[gid].parent
    assert chain == ["jit a", "jit b", "jit c"]


def test_named_scopes_nest_and_the_backward_pass_is_a_scope_apart():
    def layer(x):
        with jax.named_scope("block"):
            with jax.named_scope("attn"):
                y = jnp.tanh(x)
            with jax.named_scope("mlp"):
                y = y * 2.0
        return y.sum()

    g = js.graph(jax.grad(layer))(jnp.ones(3))
    scopes = {gr.id: gr for gr in g.groups if gr.kind == "scope"}
    labels = sorted(gr.label for gr in scopes.values())
    assert labels == ["attn", "attn", "block", "block (backward)", "mlp", "mlp"]
    for block in (gr for gr in scopes.values() if gr.label.startswith("block")):
        children = sorted(
            (gr.label, gr.backward) for gr in scopes.values() if gr.parent == block.id
        )
        assert children == [("attn", block.backward), ("mlp", block.backward)]
    tanh = next(n for n in g.nodes if n.label == "tanh")
    assert tanh.group is not None
    assert scopes[tanh.group].label == "attn"
    assert not scopes[tanh.group].backward


@pytest.mark.parametrize(
    ("scope", "names"),
    [
        ("", []),
        ("layer1", ["layer1"]),
        ("vmap(jvp(layer1))/inner", ["layer1", "inner"]),
        ("vmap(transpose(jvp()))", []),
        ("a/b/c", ["a", "b", "c"]),
    ],
)
def test_scope_names_parse_name_stacks(scope, names):
    assert scope_names(scope) == names


def test_printed_name_stacks_parse_into_transforms_and_scopes():
    assert parse_name_stack("transpose(jvp(layer0))/attn") == [
        ("transform", "transpose"),
        ("transform", "jvp"),
        ("scope", "layer0"),
        ("scope", "attn"),
    ]


def test_constants_become_const_nodes():
    import numpy as np

    table = np.arange(6.0, dtype=np.float32).reshape(2, 3)

    def f(x):
        return x + jnp.asarray(table)

    v = js.jaxpr(f)(jnp.ones((2, 3)))
    g = v.graph()
    consts = [n for n in g.nodes if n.kind == "const"]
    assert len(consts) == len(v.top.constvars)
    _check_consistent(g)


def test_vmap_grad_program_counts_match():
    def loss(w, x):
        h = jnp.tanh(x @ w)
        return jnp.mean(h**2)

    f = jax.vmap(jax.grad(loss), in_axes=(None, 0))
    v = js.jaxpr(f)(jnp.ones((4, 3)), jnp.ones((8, 5, 4)))
    g = v.graph()
    n_nodes, n_groups = _expected_counts(v)
    assert len(g.nodes) == n_nodes
    assert len([gr for gr in g.groups if gr.kind != "scope"]) == n_groups
    _check_consistent(g)


def test_graph_of_custom_vjp_and_shard_map_programs():
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    @jax.custom_vjp
    def clip_grad(x):
        return x

    clip_grad.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1, 1),))

    mesh = Mesh(jax.devices()[:4], ("d",))

    def body(x):
        return jax.lax.psum(jnp.sin(x), "d")

    sm = jax.shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=P())

    def f(x):
        return sm(clip_grad(x))

    v = js.jaxpr(f)(jnp.ones(8))
    g = v.graph()
    kinds = {gr.kind for gr in g.groups}
    assert "shard_map" in kinds and "custom_vjp_call" in kinds
    n_nodes, _ = _expected_counts(v)
    assert len(g.nodes) == n_nodes
    _check_consistent(g)
    sin = next(n for n in g.nodes if n.label == "sin")
    inp = next(n for n in g.nodes if n.kind == "input")
    # x reaches sin through custom_vjp_call and shard_map binders
    reach = {inp.id}
    for _ in range(5):
        reach |= {e.dst for e in g.edges if e.src in reach}
    assert sin.id in reach


def test_payload_interns_strings_and_round_trips_counts(nested):
    g = js.graph(nested)(jnp.ones(4), 1.0)
    p = g.payload()
    assert p["format"] == 1
    assert len(p["nodes"]) == len(g.nodes)
    assert len(p["groups"]) == len(g.groups)
    assert len(p["edges"]) == 4 * len(g.edges)
    assert len(p["strings"]) == len(set(p["strings"]))
    strings = p["strings"]
    sin = next(n for n in p["nodes"] if strings[n[1]] == "sin")
    file_, line, fn = sin[7]
    assert strings[file_].endswith("conftest.py") and strings[fn] == "_inner"
    assert str(line) in p["sources"][strings[file_]]
    assert "jnp.sin(x)" in p["sources"][strings[file_]][str(line)]
