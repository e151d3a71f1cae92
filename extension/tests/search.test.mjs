import assert from "node:assert/strict";
import { test } from "node:test";

import { decode } from "../src/graph/decode.js";
import { matches, stepIndex } from "../src/graph/search.js";
import { Payload } from "./payload.mjs";

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
