import assert from "node:assert/strict";
import { test } from "node:test";
import { gzipSync } from "node:zlib";

import { decode, decodeSteps } from "../src/graph/decode.js";
import { Hierarchy } from "../src/graph/hierarchy.js";
import { join, readInWorker, split, unpack } from "../src/graph/packed.js";
import { due, runSliced, runSync } from "../src/graph/slice.js";
import { Payload } from "./payload.mjs";

// A training step's shape: inputs feeding 30 numbered layers (a series, stubs of the
// shared weights), a long run of loose update equations, outputs.
function step(layers = 30, per = 20, loose = 400) {
  const p = new Payload("step");
  const weights = [];
  for (let w = 0; w < 8; w++) weights.push(p.node({ kind: 1, label: `w${w}`, outputs: [[`w${w}`, "f32[8,8]"]] }));
  let x = p.node({ kind: 1, label: "x", outputs: [["x", "f32[8]"]] });
  for (let i = 0; i < layers; i++) {
    const g = p.group({ label: `layer${i}`, size: per, source: ["model.py", 10 + i, "loss"] });
    for (let k = 0; k < per; k++) {
      const n = p.node({ label: k % 2 ? "tanh" : "dot_general", group: g, source: ["model.py", 100 + k, "block"] });
      p.edge(x, n);
      if (k === 0) p.edge(weights[i % weights.length], n);
      x = n;
    }
  }
  for (let k = 0; k < loose; k++) {
    const n = p.node({ label: "sub", source: ["model.py", 300 + (k % 7), "step"] });
    p.edge(x, n);
    x = n;
  }
  for (let o = 0; o < 7; o++) p.edge(x, p.node({ kind: 2, label: `out${o}` }));
  return p.json();
}

// Everything the viewer reads of a model, as plain data.
function snapshot(h) {
  const items = [...h.item].map(([id, it]) => [id, it.kind, it.label, it.size ?? null]);
  return {
    items, children: [...h.children], parent: [...h.parent], lifted: [...h.lifted],
    stubs: [...h.stubs], ancestors: h.ancestors, aux: [...h.aux], out: h.out, inn: h.inn,
  };
}

test("runSync runs steps through without pausing; due() is never true there", () => {
  function* steps() {
    let pauses = 0;
    for (let i = 0; i < 1000; i++) if (due()) { pauses++; yield; }
    return pauses;
  }
  assert.equal(runSync(steps()), 0);
});

test("a model built in slices pauses and equals the one built in one go", async () => {
  const g = decode(step());
  const whole = new Hierarchy(g);
  const sliced = new Hierarchy(g, { deferred: true });
  assert.equal(sliced.lifted, undefined); // nothing built yet
  let pauses = 0;
  await runSliced(sliced.build(), 0, () => pauses++); // a spent slice at every check
  assert.ok(pauses > 50, `${pauses} pauses`);
  assert.deepEqual(snapshot(sliced), snapshot(whole));
  // the structure the viewer opens on is all there: the series, the run's box, inputs
  const labels = whole.children.get("R").map((id) => whole.item.get(id).label);
  assert.ok(labels.includes("inputs") && labels.includes("layer0 \u2026 layer29 (30 blocks)"), labels.join(" | "));
});

test("decoding in slices pauses and gives what decode gives", async () => {
  const data = step(60, 40, 3000);
  let pauses = 0;
  const g = await runSliced(decodeSteps(data), 0, () => pauses++);
  assert.ok(pauses > 5, `${pauses} pauses`);
  assert.deepEqual(g, decode(data));
});

test("a payload split into JSON parts joins back to itself, pausing between parts", async () => {
  const data = step();
  // strings that look like the JSON around them
  data.strings.push('a "quoted", [bracketed] {braced} \\ string', "\\", '"', "]", "caf\u00e9 \ud83d\ude00");
  data.title = '"],"nodes":[';
  const msg = split(JSON.stringify(data), 2000);
  assert.ok(msg.parts.nodes.length > 5 && msg.parts.edges.length > 5);
  assert.equal(msg.parts.strings, undefined); // under 2,000 characters: in the head
  assert.ok(Math.max(...msg.parts.nodes.map((t) => t.length)) < 4000);
  assert.deepEqual(JSON.parse(msg.head).nodes, []);
  let pauses = 0;
  assert.deepEqual(await runSliced(join(msg), 0, () => pauses++), data);
  assert.ok(pauses >= msg.parts.nodes.length);
  // small arrays and objects stay in the head
  const small = { format: 1, title: "t", nodes: [[0, 1, -1], [0, 2, 0]], sources: { "a.py": { 3: "x = [1, 2]" } } };
  assert.deepEqual(split(JSON.stringify(small), 1).parts, { nodes: ["[[0,1,-1]]", "[[0,2,0]]"] });
  assert.deepEqual(split(JSON.stringify(small)).parts, {});
  assert.deepEqual(runSync(join(split(JSON.stringify(small), 1))), small);
});

test("a packed block (gzip, base64) reads back, whole or in parts", async () => {
  const data = step(5, 5, 20);
  data.title = "caf\u00e9 \u2192 \ud83d\ude00 </script>";
  const b64 = gzipSync(Buffer.from(JSON.stringify(data), "utf8")).toString("base64");
  assert.deepEqual(await unpack(b64), data);
  const msg = await readInWorker(b64, 500);
  assert.ok(Object.keys(msg.parts).length > 0);
  assert.deepEqual(runSync(join(msg)), data);
});
