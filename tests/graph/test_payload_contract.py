"""The viewer's decoder (extension/src/graph/decode.js, run by Node) reads a real
payload as the Python graph model wrote it: the two ends of the payload contract."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js

ROOT = Path(__file__).resolve().parents[2]
GRAPH_SRC = ROOT / "extension" / "src" / "graph"

# Decodes the payload in argv[1], builds the grouping model, prints both as JSON.
DECODE = """
import { readFileSync } from "node:fs";
import { decode } from "%(src)s/decode.js";
import { Hierarchy } from "%(src)s/hierarchy.js";
const g = decode(JSON.parse(readFileSync(process.argv[1], "utf-8")));
const h = new Hierarchy(g);
const real = (chain) => chain.filter((c) => c[0] === "g");
console.log(JSON.stringify({
  title: g.title, nodes: g.nodes, groups: g.groups, edges: g.edges,
  leaves: h.leavesOf("R"), chains: g.nodes.map((n) => real(h.containersOf(n.id))),
}));
"""


def mlp_loss(params, x):
    for i, w in enumerate(params):
        with jax.named_scope(f"layer{i}"):
            x = jnp.tanh(x @ w)
    return jnp.sum(x**2)


def train_step(params, x):
    return jax.grad(mlp_loss)(params, x)


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed (CI installs it; see .ci/run)")
    return found


def _decoded(node: str, view, tmp_path: Path) -> dict:
    data = tmp_path / "payload.json"
    data.write_text(json.dumps(view.payload()), "utf-8")
    script = DECODE % {"src": GRAPH_SRC.as_uri()}
    out = subprocess.run(
        [node, "--input-type=module", "-e", script, str(data)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def _loc(loc) -> dict | None:
    if loc is None:
        return None
    return {"file": loc.file, "line": loc.line, "fn": loc.function or ""}


@pytest.fixture(params=["nested", "train_step"])
def view(request, nested):
    if request.param == "nested":
        return js.graph(nested)(jnp.ones(4), 1.0)
    params = [jnp.ones((3, 3)) * 0.1 for _ in range(3)]
    return js.graph(train_step)(params, jnp.ones((2, 3)))


def test_the_viewer_decodes_every_node_as_python_wrote_it(node, view, tmp_path):
    got = _decoded(node, view, tmp_path)
    groups = {g.id: k for k, g in enumerate(view.groups)}
    assert got["title"] == view.title
    assert len(got["nodes"]) == len(view.nodes)
    for k, (mine, theirs) in enumerate(zip(view.nodes, got["nodes"], strict=True)):
        assert theirs["index"] == k
        assert theirs["kind"] == mine.kind
        assert theirs["label"] == mine.label
        assert theirs["primitive"] == mine.primitive
        assert theirs["parent"] == (
            "R" if mine.group is None else f"g{groups[mine.group]}"
        )
        assert [tuple(p) for p in theirs["inputs"]] == list(mine.inputs)
        assert [tuple(p) for p in theirs["outputs"]] == list(mine.outputs)
        assert theirs["source"] == _loc(mine.source)
        assert theirs["scope"] == mine.scope


def test_the_viewer_decodes_every_group_and_edge_as_python_wrote_them(
    node, view, tmp_path
):
    got = _decoded(node, view, tmp_path)
    groups = {g.id: k for k, g in enumerate(view.groups)}
    nodes = {n.id: k for k, n in enumerate(view.nodes)}
    for mine, theirs in zip(view.groups, got["groups"], strict=True):
        assert theirs["kind"] == mine.kind
        assert theirs["label"] == mine.label
        assert theirs["parent"] == (
            "R" if mine.parent is None else f"g{groups[mine.parent]}"
        )
        assert theirs["size"] == mine.size
        assert theirs["backward"] == mine.backward
        assert theirs["function"] == mine.function
        assert theirs["origin"] == mine.origin
        lines = mine.lines
        assert theirs["lines"] == (
            None
            if lines is None
            else {"file": lines[0], "first": lines[1], "last": lines[2]}
        )
    edges = [
        {
            "src": nodes[e.src],
            "dst": nodes[e.dst] if e.dst in nodes else -1 - groups[e.dst],
            "var": e.var,
            "type": e.type,
        }
        for e in view.edges
    ]
    assert got["edges"] == edges


def test_the_grouping_model_places_every_node_once_under_its_groups(
    node, view, tmp_path
):
    got = _decoded(node, view, tmp_path)
    assert sorted(got["leaves"]) == list(range(len(view.nodes)))
    parent = {g.id: g.parent for g in view.groups}
    groups = {g.id: k for k, g in enumerate(view.groups)}
    for n, chain in zip(view.nodes, got["chains"], strict=True):
        expected, gid = [], n.group
        while gid is not None:
            expected.insert(0, f"g{groups[gid]}")
            gid = parent[gid]
        assert chain == expected, n.label


def test_a_training_step_has_backward_groups_for_the_viewer_to_read(node, tmp_path):
    params = [jnp.ones((3, 3)) * 0.1 for _ in range(3)]
    view = js.graph(train_step)(params, jnp.ones((2, 3)))
    got = _decoded(node, view, tmp_path)
    assert any(g["backward"] for g in got["groups"])
    assert any(not g["backward"] for g in got["groups"])


# The program the checked-in example (extension/tests/payload-example.json) was
# written from, its file named "model.py" there; extension/tests/decode.test.mjs
# decodes that example, so both ends read one document.
EXAMPLE = ROOT / "extension" / "tests" / "payload-example.json"


def _example():
    def loss(params, x):
        for i, w in enumerate(params):
            with jax.named_scope(f"layer{i}"):
                x = jnp.tanh(x @ w)
        return jnp.sum(x**2)

    def step(params, x):
        g = jax.grad(loss)(params, x)
        return [w - 0.1 * d for w, d in zip(params, g, strict=True)]

    return step


def test_python_writes_the_payload_the_checked_in_example_shows():
    from jaxscope._graph.payload import FORMAT

    example = json.loads(EXAMPLE.read_text("utf-8"))
    fresh = json.loads(
        json.dumps(js.graph(_example())([jnp.eye(2)] * 2, jnp.ones(2)).payload())
    )
    assert fresh["format"] == example["format"] == FORMAT
    assert list(fresh) == list(example)
    # every record has the fields the example's have, in the same places
    for key in ("nodes", "groups"):
        assert {len(r) for r in fresh[key]} == {len(r) for r in example[key]}, key
        for got, want in zip(fresh[key], example[key], strict=False):
            assert [type(v) for v in got] == [type(v) for v in want], key
    assert len(fresh["edges"]) % 4 == len(example["edges"]) % 4 == 0

    def labels(payload):
        s = payload["strings"]
        return [(s[g[0]], s[g[1]], g[2], g[10], g[13]) for g in payload["groups"]]

    assert labels(fresh) == labels(example)
