import assert from "node:assert/strict";
import { test } from "node:test";

import { decode } from "../src/graph/decode.js";
import { matches, search, stepIndex, suggest } from "../src/graph/search.js";
import { Payload, chain } from "./payload.mjs";

function program() {
  const p = new Payload("f");
  p.node({ kind: 1, label: "x", outputs: [["x", "f32[3]"]] });
  p.node({ label: "sin", inputs: [["x", "f32[3]"]], outputs: [["e", "f32[3]"]], source: ["/home/u/model.py", 12, "loss"] });
  p.node({ label: "mul", inputs: [["e", "f32[3]"]], outputs: [["ee", "f32[3]"]], source: ["/home/u/model.py", 13, "loss"] });
  p.node({ label: "reduce_sum", inputs: [["ee", "f32[3]"]], outputs: [["s", "f32[]"]], source: ["/home/u/other.py", 12, "g"] });
  return decode(p.json()).nodes;
}

test("a query matches primitives and labels by substring, case-insensitively", () => {
  assert.deepEqual(matches(program(), "SIN"), [1]);
  assert.deepEqual(matches(program(), "reduce"), [3]);
});

test("%name matches that variable exactly, as input or output", () => {
  assert.deepEqual(matches(program(), "%e"), [1, 2]);
  assert.deepEqual(matches(program(), "%ee"), [2, 3]);
});

test("a number matches the source line in any file", () => {
  assert.deepEqual(matches(program(), "12"), [1, 3]);
});

test("file:line and function names match", () => {
  assert.deepEqual(matches(program(), "model.py:13"), [2]);
  assert.deepEqual(matches(program(), "loss"), [1, 2]);
});

test("a blank query matches nothing", () => {
  assert.deepEqual(matches(program(), "   "), []);
});

test("stepping through results starts at the first and wraps around both ways", () => {
  assert.equal(stepIndex(-1, 1, 3), 0);
  assert.equal(stepIndex(-1, -1, 3), 0);
  assert.equal(stepIndex(1, -1, 3), 0);
  assert.equal(stepIndex(2, 1, 3), 0);
  assert.equal(stepIndex(0, -1, 3), 2);
});

// An NNX-like step: loss_fn > Block #1..#3 > self.qkv, attention, MLP; the update.
function model() {
  const p = new Payload("train_step");
  const file = "/home/u/model.py";
  p.sources = { [file]: { "20": "        x = nn.gelu(self.fc(x))", "31": "    optimizer = nnx.Optimizer(model, optax.adamw(1e-3))" } };
  const loss = p.group({ kind: "call", label: "loss_fn", source: [file, 40, "train_step"] });
  for (let b = 1; b <= 3; b++) {
    const block = p.group({ kind: "call", label: `Block #${b}`, parent: loss, source: [file, 12, "Model.__call__"] });
    const qkv = p.group({ kind: "call", label: "self.qkv", parent: block, source: [file, 15, "Attention.__call__"] });
    p.node({ label: "dot_general", group: qkv, source: [file, 15, "Attention.__call__"] });
    p.group({ kind: "custom_jvp_call", label: "custom_jvp_call(softmax)", parent: block, fn: "softmax" });
    p.node({ label: "tanh", group: block, source: [file, 20, "MLP.__call__"] });
  }
  p.group({ kind: "call", label: "optimizer.update", source: [file, 44, "train_step"] });
  p.node({ label: "sqrt", group: 10, source: [file, 31, "train_step"] });
  return decode(p.json());
}

test("search finds groups by their labels, ranked before the nodes inside", () => {
  const g = model();
  const label = (id) => (id[0] === "g" ? g.groups[Number(id.slice(1))].label : g.nodes[Number(id.slice(1))].label);
  assert.deepEqual(search(g, "Block #3").map(label), ["Block #3"]);
  assert.deepEqual(search(g, "block").map(label), ["Block #1", "Block #2", "Block #3"]);
  assert.deepEqual(search(g, "self.qkv").map(label), ["self.qkv", "self.qkv", "self.qkv"]);
  // a group's function, then nodes from lines whose source text says it
  assert.deepEqual(search(g, "softmax").map(label), Array(3).fill("custom_jvp_call(softmax)"));
  assert.deepEqual(search(g, "gelu").map(label), ["tanh", "tanh", "tanh"]);
  assert.deepEqual(search(g, "adamw").map(label), ["sqrt"]);
  // a function name matches whole or in part ("__call__" in "Attention.__call__")
  const calls = search(g, "__call__");
  assert.equal(calls.length, 3 + 3 + 6); // 3 blocks, 3 qkv groups, 6 nodes
  assert.deepEqual(calls.map((id) => id[0]), [..."gggggg", ..."nnnnnn"]);
  assert.deepEqual(search(g, "%nothing"), []);
});

// An optimizer update as optax runs it: its equations' stacks hold optax's functions.
function adamStep() {
  const p = new Payload("train_step");
  p.node({ kind: 1, label: "g", outputs: [["g", "f32[3]"]] });
  const user = [p.s("train_step")];
  const adam = [p.s("optax/_src/transform.py:scale_by_adam.<locals>.update_fn"), p.s("flax/nnx/training/optimizer.py:Optimizer.update"), ...user];
  p.node({ label: "mul", inputs: [["g", "f32[3]"]], outputs: [["m", "f32[3]"]], source: ["/home/u/train.py", 9, "train_step"] });
  p.node({ label: "sqrt", inputs: [["m", "f32[3]"]], outputs: [["v", "f32[3]"]], source: ["/home/u/train.py", 9, "train_step"] });
  p.node({ label: "add", inputs: [["v", "f32[3]"]], outputs: [["u", "f32[3]"]], source: ["/home/u/train.py", 10, "train_step"] });
  // input: no stack; two adam equations (one run); the last one the user's alone
  return decode(p.json({ stacks: [adam, user], nodeStacks: [-1, 1, 0, 2, 1, 1] }));
}

test("a function or library module on an equation's call stack matches it", () => {
  const g = adamStep();
  assert.deepEqual(g.nodes.map((n) => n.stack), [-1, 0, 0, 1]);
  assert.deepEqual(search(g, "scale_by_adam"), ["n1", "n2"]);
  assert.deepEqual(search(g, "adam"), ["n1", "n2"]);
  assert.deepEqual(search(g, "optax"), ["n1", "n2"]);
  assert.deepEqual(search(g, "Optimizer.update"), ["n1", "n2"]);
  assert.deepEqual(search(g, "adamw"), []);
  // a stack match ranks below a primitive's
  assert.deepEqual(search(g, "sqrt"), ["n2"]);
});

test("a query that finds nothing is offered terms that do", () => {
  const g = adamStep();
  assert.deepEqual(suggest(g, "adamw"), [
    { term: "adam", count: 2 }, { term: "flax", count: 2 }, { term: "optax", count: 2 },
  ]);
  assert.deepEqual(suggest(g, "zzzz"), [{ term: "flax", count: 2 }, { term: "optax", count: 2 }]);
  assert.deepEqual(suggest(g, "%zz"), []);
  // a payload without stacks (written before they were added) still searches
  const old = decode(chain(3).json());
  assert.deepEqual(search(old, "adam"), []);
  assert.deepEqual(suggest(old, "sinh"), [{ term: "sin", count: 3 }]);
});
