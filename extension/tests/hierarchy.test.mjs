import assert from "node:assert/strict";
import { test } from "node:test";

import { ROOT, decode } from "../src/graph/decode.js";
import { AUX_MIN_GROUPS, Hierarchy, IO_MIN, defaultExpansion } from "../src/graph/hierarchy.js";
import { Payload, chain } from "./payload.mjs";

const build = (p, opts) => new Hierarchy(decode(p.json()), opts);

// x -> [enc: sin -> cos] -> [dec: [inner: exp]] -> out, in program order.
function nested() {
  const p = new Payload("model");
  const enc = p.group({ label: "enc", size: 2 });
  const dec = p.group({ label: "dec", size: 1 });
  const inner = p.group({ label: "inner", parent: dec, size: 1 });
  const x = p.node({ kind: 1, label: "x" });
  const sin = p.node({ label: "sin", group: enc, source: ["m.py", 3, "f"] });
  const cos = p.node({ label: "cos", group: enc, source: ["m.py", 4, "f"] });
  const exp = p.node({ label: "exp", group: inner, source: ["m.py", 7, "f"] });
  const out = p.node({ kind: 2, label: "out" });
  p.edge(x, sin);
  p.edge(sin, cos);
  p.edge(cos, exp);
  p.edge(exp, out);
  return p;
}

test("each container holds its groups and nodes in program order", () => {
  const h = build(nested());
  assert.deepEqual(h.children.get(ROOT), ["n0", "g0", "g1", "n4"]);
  assert.deepEqual(h.children.get("g0"), ["n1", "n2"]);
  assert.deepEqual(h.children.get("g1"), ["g2"]);
  assert.deepEqual(h.children.get("g2"), ["n3"]);
  assert.equal(h.item.get(ROOT).label, "model");
  assert.equal(h.parent.get("n3"), "g2");
});

test("ancestors and containers run outermost first, the top level excluded", () => {
  const h = build(nested());
  assert.deepEqual(h.ancestors[3], ["g1", "g2"]);
  assert.deepEqual(h.containersOf("n3"), ["g1", "g2"]);
  assert.deepEqual(h.containersOf("g2"), ["g1"]);
  assert.deepEqual(h.containersOf("n0"), []);
  assert.ok(h.isContainer("g1") && h.isContainer(ROOT) && !h.isContainer("n0"));
});

test("edges between leaves are lifted to the direct children of their common container", () => {
  const h = build(nested());
  const pairs = (c) => (h.lifted.get(c) || []).map((e) => `${e.a}>${e.b}`);
  assert.deepEqual(pairs(ROOT), ["n0>g0", "g0>g1", "g1>n4"]);
  assert.deepEqual(pairs("g0"), ["n1>n2"]);
  assert.deepEqual(pairs("g1"), []);
  assert.equal(h.lifted.get(ROOT)[0].type, "f32[]");
});

test("reach follows edges transitively, upstream and downstream, without the start", () => {
  const h = build(nested());
  assert.deepEqual([...h.reach(2, h.inn)].sort(), [0, 1]);
  assert.deepEqual([...h.reach(2, h.out)].sort(), [3, 4]);
  assert.equal(h.reach(0, h.inn).size, 0);
});

test("leavesOf lists the node indices inside a container, nested groups included", () => {
  const h = build(nested());
  assert.deepEqual(h.leavesOf("g1"), [3]);
  assert.deepEqual(h.leavesOf(ROOT), [0, 1, 2, 3, 4]);
});

test("a level past chunkMax splits into artificial layers named by their source lines", () => {
  const h = build(chain(25), { chunkMax: 10, chunkSize: 10 });
  const top = h.children.get(ROOT);
  assert.deepEqual(top, ["a0", "a1", "a2"]);
  assert.deepEqual(top.map((id) => h.item.get(id).size), [10, 10, 6]);
  // the input x has no source line; the chain's lines start at 10
  assert.equal(h.item.get("a0").label, "lines 10\u201318");
  assert.equal(h.item.get("a2").label, "lines 29\u201334");
  assert.deepEqual(h.containersOf("n25"), ["a2"]);
  assert.deepEqual(h.leavesOf("a1"), [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
});

test("layers from one source line are told apart by their position", () => {
  const p = new Payload("loop");
  for (let i = 0; i < 6; i++) p.node({ label: "add", source: ["m.py", 5, "f"] });
  const h = build(p, { chunkMax: 4, chunkSize: 3 });
  assert.deepEqual(h.children.get(ROOT).map((id) => h.item.get(id).label),
    ["line 5 \u00b7 part 1/2", "line 5 \u00b7 part 2/2"]);
});

test("a level with groups chunks only its long runs of loose equations", () => {
  const p = new Payload("mixed");
  const g = p.group({ label: "block", size: 1 });
  p.node({ label: "exp", group: g });
  for (let i = 0; i < 12; i++) p.node({ label: "add", source: ["m.py", 20 + i, "f"] });
  const h = build(p, { chunkMax: 8, chunkSize: 5 });
  const top = h.children.get(ROOT);
  assert.equal(top[0], "g0");
  assert.ok(top.slice(1).every((id) => h.item.get(id).kind === "chunk"));
  assert.deepEqual(h.leavesOf(ROOT).length, 13);
});

test("a node feeding many groups gets a stub in each instead of long edges", () => {
  const p = new Payload("mlp");
  const w = p.node({ kind: 1, label: "w" });
  const groups = [];
  for (let i = 0; i < AUX_MIN_GROUPS; i++) {
    const g = p.group({ label: "layer" + i, size: 1 });
    groups.push(g);
    p.edge(w, p.node({ label: "dot_general", group: g }), "w", "f32[4,4]");
  }
  const h = build(p);
  assert.ok(h.aux.has(w));
  assert.deepEqual(h.stubs.get("g0"), ["x0@g0"]);
  assert.deepEqual(h.members("g0"), ["n1", "x0@g0"]);
  assert.deepEqual(h.lifted.get("g0").map((e) => `${e.a}>${e.b}`), ["x0@g0>n1"]);
  assert.equal(h.lifted.get(ROOT), undefined, "no long edge from w into the layers");
  assert.equal(h.fanout(w), AUX_MIN_GROUPS);
  assert.equal(h.item.get("x0@g3").label, "w");
});

test("fewer consuming groups than the threshold keep their ordinary edges", () => {
  const p = new Payload("two");
  const w = p.node({ kind: 1, label: "w" });
  for (let i = 0; i < AUX_MIN_GROUPS - 1; i++) {
    p.edge(w, p.node({ label: "mul", group: p.group({ label: "l" + i, size: 1 }) }));
  }
  const h = build(p);
  assert.equal(h.aux.size, 0);
  assert.equal(h.lifted.get(ROOT).length, AUX_MIN_GROUPS - 1);
});

test("the payload's own aux list wins over the viewer's threshold", () => {
  const p = new Payload("given");
  const w = p.node({ kind: 1, label: "w" });
  p.edge(w, p.node({ label: "mul", group: p.group({ label: "l", size: 1 }) }));
  const h = new Hierarchy(decode(p.json({ aux: [w], auxMinGroups: 4 })));
  assert.deepEqual(h.stubs.get("g0"), ["x0@g0"]);
});

test("an operand a group consumes itself is an edge into that group", () => {
  const p = new Payload("loop");
  const x = p.node({ kind: 1, label: "x" });
  const loop = p.group({ kind: "while", label: "while", size: 1 });
  p.node({ label: "add", group: loop });
  p.edge(x, -1 - loop, "x", "i32[]");
  const h = build(p);
  assert.deepEqual(h.lifted.get(ROOT).map((e) => `${e.a}>${e.b}`), ["n0>g0"]);
  assert.deepEqual(h.out[0], [], "group destinations stay out of the node adjacency");
});

test("a level whose edges span far is split finer than chunkMax alone would", () => {
  // 120 equations all reading the input: each edge spans up to 120 positions.
  const p = new Payload("wide");
  const x = p.node({ kind: 1, label: "x" });
  for (let i = 0; i < 120; i++) p.edge(x, p.node({ label: "mul", source: ["m.py", 100 + i, "f"] }));
  const h = build(p);
  const top = h.children.get(ROOT);
  assert.ok(top.length < 121 && top.every((id) => h.item.get(id).kind === "chunk"), top.join(","));
  assert.equal(h.leavesOf(ROOT).length, 121);
});

// A plain-JAX training step: inputs, `layer0..layer{n-1}` forward scopes, their
// backward scopes in reverse, a tree_map'd update of loose equations, outputs.
function step(layers) {
  const p = new Payload("sgd_step");
  const params = [];
  for (let i = 0; i < 2 * layers + 2; i++) params.push(p.node({ kind: 1, label: `p[${i}]` }));
  let prev = params[0];
  const scope = (label, backward) => {
    const g = p.group({ label, size: 2, backward: backward ? 1 : 0 });
    for (let k = 0; k < 2; k++) {
      const n = p.node({ label: "dot_general", group: g, source: ["model.py", 10 + k, "loss"] });
      p.edge(prev, n);
      p.edge(params[(n * 7) % params.length], n); // weights from far away
      prev = n;
    }
  };
  for (let i = 0; i < layers; i++) scope(`layer${i}`, false);
  for (let i = layers - 1; i >= 0; i--) scope(`layer${i}`, true);
  const updates = [];
  for (const w of params) {
    const n = p.node({ label: "sub", source: ["model.py", 24, "sgd_step.<locals>.<lambda>"] });
    p.edge(w, n);
    p.edge(prev, n);
    updates.push(n);
  }
  for (const u of updates) p.edge(u, p.node({ kind: 2, label: "out" }));
  return p;
}

const labels = (h, c) => h.children.get(c).map((id) => h.item.get(id).label);

test("a training step opens on its inputs, layers, update and outputs", () => {
  const h = build(step(6));
  assert.deepEqual(labels(h, ROOT), [
    "inputs", "layer0", "layer1", "layer2", "layer3", "layer4", "layer5",
    "layer5", "layer4", "layer3", "layer2", "layer1", "layer0", "sgd_step: line 24", "outputs",
  ]);
  assert.deepEqual(h.children.get(ROOT).map((id) => h.item.get(id).kind).filter((k) => k !== "scope"),
    ["io", "chunk", "io"]);
  assert.equal(h.item.get(h.children.get(ROOT)[0]).size, 14);
});

test("a long numbered series of groups collapses and opens page by page", () => {
  const h = build(step(69));
  const top = labels(h, ROOT);
  assert.deepEqual(top, [
    "inputs", "layer0 \u2026 layer68 (69 blocks)", "layer68 \u2026 layer0 (69 blocks)",
    "sgd_step: line 24", "outputs",
  ]);
  const forward = h.children.get(ROOT)[1];
  assert.equal(h.item.get(forward).kind, "series");
  const pages = labels(h, forward);
  assert.equal(pages.length, 7);
  assert.equal(pages[0], "layer0 \u2026 layer9");
  assert.equal(pages[6], "layer60 \u2026 layer68");
  const page = h.children.get(forward)[0];
  assert.deepEqual(labels(h, page), ["layer0", "layer1", "layer2", "layer3", "layer4",
    "layer5", "layer6", "layer7", "layer8", "layer9"]);
  // inputs too many to show at once are named by their first and last labels
  const small = build(step(69), { chunkMax: 100, chunkSize: 100 });
  const inputs = small.children.get(ROOT)[0];
  assert.deepEqual(labels(small, inputs), ["p[0] \u2026 p[99]", "p[100] \u2026 p[139]"]);
});

test("a series allows a few loose equations between its members, not other groups", () => {
  const p = new Payload("net");
  for (let i = 0; i < 12; i++) {
    const g = p.group({ kind: "call", label: `Block #${i + 1}`, size: 1 });
    p.node({ label: "exp", group: g });
    p.node({ label: "add" }); // the residual
  }
  p.group({ kind: "call", label: "head", size: 1 });
  p.node({ label: "dot_general", group: 12 });
  const h = build(p);
  assert.deepEqual(labels(h, ROOT), ["Block #1 \u2026 Block #12 (12 blocks)", "add", "head"]);
  // unlike kinds or a jump in the numbers end a series
  const q = new Payload("mixed");
  for (let i = 0; i < 12; i++) {
    const g = q.group({ kind: i === 6 ? "call" : "scope", label: `layer${i}`, size: 1 });
    q.node({ label: "exp", group: g });
  }
  assert.equal(build(q).children.get(ROOT).length, 12);
});

test("equations with no source line are named by their primitives", () => {
  const p = new Payload("lib");
  const g = p.group({ label: "tx.update", size: 40 });
  p.group({ label: "inner", parent: g, size: 1 });
  p.node({ label: "exp", group: 1 });
  for (let i = 0; i < 30; i++) p.node({ label: i % 3 ? "mul" : "sqrt", group: g });
  for (let i = 0; i < 9; i++) p.node({ label: "add", group: g });
  const h = build(p, { chunkMax: 30, chunkSize: 20 });
  const kids = labels(h, "g0");
  assert.equal(kids[0], "inner");
  assert.equal(kids[1], "mul, sqrt, add (39 equations)");
});

test("a shared weight in the inputs' box still gets a stub in each group it feeds", () => {
  const p = new Payload("mlp");
  const inputs = [];
  for (let i = 0; i < IO_MIN; i++) inputs.push(p.node({ kind: 1, label: `w${i}` }));
  for (let i = 0; i < AUX_MIN_GROUPS; i++) {
    const g = p.group({ label: "block", size: 1 });
    p.edge(inputs[0], p.node({ label: "dot_general", group: g }), "w0", "f32[4,4]");
  }
  const h = build(p);
  assert.equal(h.item.get(h.children.get(ROOT)[0]).kind, "io");
  for (let g = 0; g < AUX_MIN_GROUPS; g++) assert.deepEqual(h.stubs.get("g" + g), [`x0@g${g}`]);
  assert.equal((h.lifted.get(ROOT) || []).length, 0); // no edge from the box
});

// A loss as a user writes it: their jitted helper, optax's loss (holding JAX's own
// jits), and a jnp.where at the top level (JAX's `jit _where`).
function libraryLoss() {
  const p = new Payload("loss");
  const x = p.node({ kind: 1, label: "x" });
  const where = p.group({ kind: "jit", label: "jit _where", origin: 2 });
  const w = p.node({ label: "select_n", group: where });
  const helper = p.group({ kind: "jit", label: "jit helper" });
  const inHelper = [0, 1, 2, 3, 4].map(() => p.node({ label: "tanh", group: helper }));
  const loss = p.group({ kind: "call", label: "softmax_cross_entropy_with_integer_labels", origin: 1 });
  const take = p.group({ kind: "jit", label: "jit _take", parent: loss, origin: 2 });
  const taken = [0, 1].map(() => p.node({ label: "gather", group: take }));
  const lse = p.node({ label: "log_softmax", group: loss });
  const out = p.node({ kind: 2, label: "out" });
  let prev = x;
  for (const n of [w, ...inHelper, ...taken, lse, out]) {
    p.edge(prev, n);
    prev = n;
  }
  return p;
}

test("the first view opens the user's groups first, then library calls, never library internals", () => {
  const h = build(libraryLoss());
  const label = (id) => h.item.get(id).label;
  const order = defaultExpansion(h, 60).map((ids) => ids.map(label));
  // the library call adds fewer items than the user's helper, yet opens after it
  assert.deepEqual(order, [["jit helper"], ["softmax_cross_entropy_with_integer_labels"]]);
  // a budget for the user's group alone leaves the library call closed
  const tight = h.members(ROOT).length + h.members("g1").length - 1;
  assert.deepEqual(defaultExpansion(h, tight).map((ids) => ids.map(label)), [["jit helper"]]);
});

test("a payload without origins opens by cost alone, as before the field existed", () => {
  const data = libraryLoss().json();
  data.groups = data.groups.map((g) => g.slice(0, 13));
  const h = new Hierarchy(decode(data));
  const order = defaultExpansion(h, 60).map((ids) => ids.map((id) => h.item.get(id).label));
  assert.deepEqual(order, [["jit _where"], ["softmax_cross_entropy_with_integer_labels"], ["jit _take"], ["jit helper"]]);
});

test("the first view opens the forward pass's groups before the backward's", () => {
  const p = new Payload("step");
  const x = p.node({ kind: 1, label: "x" });
  const fwd = p.group({ kind: "call", label: "loss_fn" });
  const model = p.group({ kind: "scope", label: "CNN", parent: fwd });
  const inModel = [0, 1, 2].map(() => p.node({ label: "conv", group: model }));
  const bwd = p.group({ kind: "call", label: "loss_fn (backward)", backward: 1 });
  const back = p.node({ label: "transpose", group: bwd });
  const back2 = p.node({ label: "mul", group: bwd });
  let prev = x;
  for (const n of [...inModel, back, back2]) {
    p.edge(prev, n);
    prev = n;
  }
  const h = build(p);
  const order = defaultExpansion(h, 60).map((ids) => ids.map((id) => h.item.get(id).label));
  assert.deepEqual(order, [["loss_fn"], ["CNN"], ["loss_fn (backward)"]]);
});
