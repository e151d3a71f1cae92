// ELK (elkjs, layered) against dagre on the graphs the viewer lays out, one container
// at a time: the basis of extension/README.md's choice of layout engine.
//
//   npm --prefix extension install --no-save elkjs
//   node benchmarks/graph_layout_eval.mjs
//
// Graphs: a flat chain of 1,000 equations (and of 100, one artificial layer); 200
// collapsed named-scope blocks in a chain sharing 4 weights (800 long-span edges), and
// the same with the weights as per-block stubs (what the viewer draws); a transformer
// step's top level (24 layers forward, backward and update, weights into both); a
// block's body (300 equations, each reading 1-2 of the previous 10). Median of RUNS (default 3).
import { createRequire } from "node:module";
const require = createRequire(new URL("../extension/package.json", import.meta.url));
const dagre = require("@dagrejs/dagre");
const ELK = require("elkjs/lib/elk.bundled.js");

const RUNS = Number(process.env.RUNS || 3);

function chain(n) {
  const nodes = Array.from({ length: n }, (_, i) => "n" + i);
  return { nodes, edges: nodes.slice(1).map((v, i) => [nodes[i], v]) };
}
function scoped(stubs) {
  const g = chain(200);
  for (let w = 0; w < 4; w++) {
    g.nodes.push("w" + w);
    for (let b = 0; b < 200; b++) {
      if (stubs) { g.nodes.push(`s${w}_${b}`); } else g.edges.push(["w" + w, "n" + b]);
    }
  }
  return g;
}
function transformer(L) {
  const nodes = [], edges = [];
  for (let i = 0; i < L; i++) nodes.push("f" + i, "b" + i, "u" + i, "w" + i);
  for (let i = 0; i < L; i++) {
    if (i) edges.push(["f" + (i - 1), "f" + i]);
    edges.push(["w" + i, "f" + i], ["w" + i, "b" + i], ["f" + i, "b" + i], ["b" + i, "u" + i], ["w" + i, "u" + i]);
    if (i < L - 1) edges.push(["b" + (i + 1), "b" + i]);
  }
  edges.push(["f" + (L - 1), "b" + (L - 1)]);
  return { nodes, edges };
}
function body(n) {
  let seed = 1;
  const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const nodes = Array.from({ length: n }, (_, i) => "n" + i), edges = [];
  for (let i = 1; i < n; i++) {
    const k = 1 + (rnd() < 0.4);
    for (let j = 0; j < k; j++) edges.push([nodes[Math.max(0, i - 1 - Math.floor(rnd() * 10))], nodes[i]]);
  }
  return { nodes, edges };
}

function runDagre(g) {
  const gr = new dagre.graphlib.Graph();
  gr.setGraph({ rankdir: "TB", nodesep: 14, ranksep: 26, edgesep: 8 });
  gr.setDefaultEdgeLabel(() => ({}));
  for (const v of g.nodes) gr.setNode(v, { width: 90, height: 34 });
  for (const [a, b] of g.edges) gr.setEdge(a, b);
  dagre.layout(gr);
  return gr.graph();
}
const elk = new ELK();
function runElk(g) {
  return elk.layout({
    id: "root",
    layoutOptions: { "elk.algorithm": "layered", "elk.direction": "DOWN", "elk.spacing.nodeNode": "14",
      "elk.layered.spacing.nodeNodeBetweenLayers": "26" },
    children: g.nodes.map((id) => ({ id, width: 90, height: 34 })),
    edges: g.edges.map(([a, b], i) => ({ id: "e" + i, sources: [a], targets: [b] })),
  });
}
async function time(fn, g) {
  const ms = [];
  let out;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    out = await fn(g);
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return { ms: ms[Math.floor(ms.length / 2)], w: Math.round(out.width), h: Math.round(out.height) };
}
const graphs = {
  "flat chain 100 (one layer)": chain(100), "block body 300 eqns": body(300),
  "transformer step top level (24 layers)": transformer(24), "200 blocks, weights as stubs": scoped(true),
  "flat chain 1,000": chain(1000), "200 blocks + 4 shared weights": scoped(false),
};
await time(runElk, chain(50)); // JIT warm-up of both
await time(runDagre, chain(50));
console.log("graph | nodes | edges | dagre ms | dagre w x h | ELK ms | ELK w x h");
for (const [name, g] of Object.entries(graphs)) {
  const d = await time(runDagre, g), e = await time(runElk, g);
  console.log(`${name} | ${g.nodes.length} | ${g.edges.length} | ${d.ms.toFixed(0)} | ${d.w}x${d.h} | ${e.ms.toFixed(0)} | ${e.w}x${e.h}`);
}
