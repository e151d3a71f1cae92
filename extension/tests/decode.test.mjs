import assert from "node:assert/strict";
import { test } from "node:test";

import { FORMAT, ROOT, decode } from "../src/graph/decode.js";
import { Payload } from "./payload.mjs";

// y = sin(x) * 2 inside a name scope "layer", as jaxscope writes it.
function scoped() {
  const p = new Payload("f");
  const layer = p.group({
    label: "layer", size: 2, inputs: [["x", "f32[3]"]], outputs: [["c", "f32[3]"]],
    source: ["model.py", 4, "f"], scope: "layer", lines: ["model.py", 5, 6], fn: "layer_fn",
  });
  const x = p.node({ kind: 1, label: "x", outputs: [["x", "f32[3]"]] });
  const sin = p.node({ label: "sin", group: layer, inputs: [["x", "f32[3]"]],
    outputs: [["b", "f32[3]"]], params: [["accuracy", "None"]], source: ["model.py", 5, "f"], scope: "layer" });
  const mul = p.node({ label: "mul", group: layer, inputs: [["b", "f32[3]"]],
    outputs: [["c", "f32[3]"]], source: ["model.py", 6, "f"], scope: "layer" });
  const out = p.node({ kind: 2, label: "out", inputs: [["c", "f32[3]"]] });
  p.edge(x, sin, "x", "f32[3]");
  p.edge(sin, mul, "b", "f32[3]");
  p.edge(mul, out, "c", "f32[3]");
  p.sources = { "model.py": { 5: "    b = jnp.sin(x)", 6: "    return b * 2" } };
  return p;
}

test("decode reads nodes, their strings, pairs, source and group", () => {
  const g = decode(scoped().json());
  assert.equal(g.title, "f");
  assert.deepEqual(g.nodes.map((n) => [n.id, n.kind, n.label, n.parent]), [
    ["n0", "input", "x", ROOT], ["n1", "eqn", "sin", "g0"], ["n2", "eqn", "mul", "g0"], ["n3", "output", "out", ROOT],
  ]);
  const sin = g.nodes[1];
  assert.equal(sin.primitive, "sin");
  assert.deepEqual(sin.inputs, [["x", "f32[3]"]]);
  assert.deepEqual(sin.outputs, [["b", "f32[3]"]]);
  assert.deepEqual(sin.params, [["accuracy", "None"]]);
  assert.deepEqual(sin.source, { file: "model.py", line: 5, fn: "f" });
  assert.equal(sin.scope, "layer");
  assert.equal(g.nodes[0].source, null);
  assert.equal(g.sources["model.py"]["6"], "    return b * 2");
});

test("decode reads every group field, the later optional ones included", () => {
  const [layer] = decode(scoped().json()).groups;
  assert.equal(layer.id, "g0");
  assert.equal(layer.parent, ROOT);
  assert.equal(layer.label, "layer");
  assert.equal(layer.size, 2);
  assert.deepEqual(layer.outputs, [["c", "f32[3]"]]);
  assert.deepEqual(layer.source, { file: "model.py", line: 4, fn: "f" });
  assert.equal(layer.backward, false);
  assert.deepEqual(layer.lines, { file: "model.py", first: 5, last: 6 });
  assert.equal(layer.function, "layer_fn");
  assert.equal(layer.origin, 0);
});

test("decode reads whose code a group is", () => {
  const p = new Payload();
  p.group({ kind: "call", label: "softmax_cross_entropy_with_integer_labels", origin: 1 });
  p.group({ kind: "jit", label: "jit _take", parent: 0, origin: 2 });
  assert.deepEqual(decode(p.json()).groups.map((g) => g.origin), [1, 2]);
});

test("decode reads a backward group", () => {
  const p = new Payload();
  p.group({ label: "dense (backward)", backward: 1 });
  assert.equal(decode(p.json()).groups[0].backward, true);
});

test("decode accepts a group written before the optional fields existed", () => {
  const p = scoped();
  const data = p.json();
  data.groups = data.groups.map((g) => g.slice(0, 10));
  const [layer] = decode(data).groups;
  assert.equal(layer.lines, null);
  assert.equal(layer.backward, false);
  assert.equal(layer.function, "");
  assert.equal(layer.label, "layer");
  assert.equal(layer.origin, 0);
});

test("decode reads edges as node indices and interned strings", () => {
  const g = decode(scoped().json());
  assert.deepEqual(g.edges, [
    { src: 0, dst: 1, var: "x", type: "f32[3]" },
    { src: 1, dst: 2, var: "b", type: "f32[3]" },
    { src: 2, dst: 3, var: "c", type: "f32[3]" },
  ]);
});

test("decode keeps a destination that names a group (an operand it consumes itself)", () => {
  const p = new Payload();
  const loop = p.group({ kind: "while", label: "while", size: 0 });
  const x = p.node({ kind: 1, label: "x" });
  p.edge(x, -1 - loop, "x", "i32[]");
  assert.equal(decode(p.json()).edges[0].dst, -1);
});

test("decode reads the auxiliary nodes and their threshold, or none", () => {
  assert.deepEqual(decode(scoped().json({ aux: [0], auxMinGroups: 4 })).aux, [0]);
  const g = decode(scoped().json());
  assert.equal(g.aux, null);
  assert.equal(g.auxMinGroups, 0);
});

test("decode of an empty payload is an empty graph", () => {
  const g = decode({});
  assert.deepEqual([g.title, g.nodes, g.groups, g.edges, g.aux], ["", [], [], [], null]);
});

test("decode refuses a payload format it does not read, naming both formats", () => {
  assert.throws(() => decode({ ...scoped().json(), format: 2 }), /graph payload format 2 is not 1/);
});

test("decode turns a string index past the table into an empty string", () => {
  const data = scoped().json();
  data.nodes[1][1] = 999;
  assert.equal(decode(data).nodes[1].label, "");
});

test("a group's facts: the values crossing its boundary, equations and flops", async () => {
  const { groupFacts, flopsOf } = await import("../src/graph/panel.js");
  const { Payload } = await import("./payload.mjs");
  const p = new Payload("f");
  const g = p.group({ kind: "scope", label: "layer0", size: 2 });
  const x = p.node({ kind: 1, label: "x", outputs: [["x", "f32[8,16]"]] });
  const w = p.node({ kind: 1, label: "w", outputs: [["w", "f32[16,32]"]] });
  const dot = p.node({ label: "dot_general", group: g, inputs: [["x", "f32[8,16]"], ["w", "f32[16,32]"]],
    outputs: [["h", "f32[8,32]"]], params: [["dimension_numbers", "(((1,), (0,)), ((), ()))"]] });
  const tanh = p.node({ label: "tanh", group: g, inputs: [["h", "f32[8,32]"]], outputs: [["t", "f32[8,32]"]] });
  const out = p.node({ kind: 2, label: "out", inputs: [["t", "f32[8,32]"]] });
  p.edge(x, dot, "x", "f32[8,16]");
  p.edge(w, dot, "w", "f32[16,32]");
  p.edge(dot, tanh, "h", "f32[8,32]");
  p.edge(tanh, out, "t", "f32[8,32]");
  const d = decode(p.json());
  const facts = groupFacts(d, [dot, tanh], d.groups[0]);
  assert.deepEqual(facts.inputs, [["x", "f32[8,16]"], ["w", "f32[16,32]"]]);
  assert.deepEqual(facts.outputs, [["t", "f32[8,32]"]]);
  assert.equal(facts.eqns, 2);
  assert.equal(flopsOf(d.nodes[dot]), 2 * 8 * 32 * 16);
  assert.equal(facts.flops, 2 * 8 * 32 * 16 + 8 * 32);
});

test("the checked-in payload example (tests/graph/test_payload_contract.py writes its like) decodes", async () => {
  const { readFileSync } = await import("node:fs");
  const data = JSON.parse(readFileSync(new URL("./payload-example.json", import.meta.url), "utf-8"));
  assert.equal(data.format, FORMAT);
  const g = decode(data);
  assert.equal(g.title, "step");
  const labels = g.groups.map((x) => x.label);
  assert.deepEqual(labels, ["loss", "layer0", "layer1", "loss (backward)", "layer1", "layer0"]);
  assert.deepEqual(g.groups.map((x) => x.backward), [false, false, false, true, true, true]);
  assert.deepEqual(g.groups.map((x) => x.origin), [0, 0, 0, 0, 0, 0]);
  assert.deepEqual(g.nodes.filter((n) => n.kind === "input").map((n) => n.label), ["params[0]", "params[1]", "x"]);
  const dot = g.nodes.find((n) => n.primitive === "dot_general");
  assert.equal(dot.source.file, "model.py");
  assert.equal(dot.parent, "g1");
  assert.ok(g.sources["model.py"][String(dot.source.line)].includes("x @ w"));
  assert.ok(g.edges.every((e) => e.src >= 0 && e.src < g.nodes.length && e.type));
  assert.deepEqual(g.stacks[dot.stack], ["loss", "step"]);
  assert.ok(g.nodes.every((n) => (n.kind === "eqn") === (n.stack >= 0)));
  assert.throws(() => decode({ ...data, format: FORMAT + 1 }), /is not 1/);
});
