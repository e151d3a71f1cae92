// The payload of jaxscope._graph.to_payload (format 1; its docstring is the contract)
// decoded into plain records. Pure: no DOM, so node's test runner checks it.

import { due, runSync } from "./slice.js";

/** The id of the top level (the container of everything). */
export const ROOT = "R";
/** The payload format this viewer reads. */
export const FORMAT = 1;

const KINDS = ["eqn", "input", "output", "const"];

/** @throws {Error} when the payload names a format other than FORMAT. */
export function checkFormat(data) {
  if (data.format !== undefined && data.format !== FORMAT) {
    throw new Error(
      `graph payload format ${data.format} is not ${FORMAT}, the one this viewer reads: ` +
        "rebuild the viewer (npm --prefix extension run build) or upgrade jaxscope",
    );
  }
}

/**
 * Decode a payload. Strings are interned in `strings`; nodes and groups are arrays
 * (see `_payload` in jaxscope/_graph/model.py). Fields added after the first release
 * are optional: an older payload decodes with their defaults.
 *
 * @throws {Error} when the payload names a format other than FORMAT.
 */
export function decode(data) {
  return runSync(decodeSteps(data));
}

/** `decode` as steps that pause where a slice is spent (see slice.js). */
export function* decodeSteps(data) {
  checkFormat(data);
  const S = data.strings || [];
  const str = (i) => S[i] ?? "";
  const pairs = (flat) => {
    const out = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push([str(flat[i]), str(flat[i + 1])]);
    return out;
  };
  const loc = (l) => (l && l.length ? { file: str(l[0]), line: l[1], fn: str(l[2]) } : null);
  const groups = (data.groups || []).map((g, k) => ({
    id: "g" + k, index: k, kind: str(g[0]), label: str(g[1]), parent: g[2] < 0 ? ROOT : "g" + g[2],
    size: g[3], primitive: str(g[4]), inputs: pairs(g[5]), outputs: pairs(g[6]),
    params: pairs(g[7]), source: loc(g[8]), scope: str(g[9]), backward: g[10] === 1,
    lines: g[11] && g[11].length ? { file: str(g[11][0]), first: g[11][1], last: g[11][2] } : null,
    function: g[12] === undefined ? "" : str(g[12]),
    origin: typeof g[13] === "number" ? g[13] : 0,
  }));
  const N = data.nodes || [];
  const nodes = new Array(N.length);
  for (let k = 0; k < N.length; k++) {
    const n = N[k];
    nodes[k] = {
      id: "n" + k, index: k, kind: KINDS[n[0]] || "eqn", label: str(n[1]),
      parent: n[2] < 0 ? ROOT : "g" + n[2], primitive: str(n[3]), inputs: pairs(n[4]),
      outputs: pairs(n[5]), params: pairs(n[6]), source: loc(n[7]), scope: str(n[8]), stack: -1,
    };
    if ((k & 63) === 63 && due()) yield;
  }
  // Each equation's call stack (payload `stacks`, `nodeStacks` run-length encoded):
  // `stacks[k]` lists its frames innermost first, "fn" or "package/module.py:fn".
  const stacks = (data.stacks || []).map((row) => row.map(str));
  const runs = data.nodeStacks || [];
  for (let i = 0, k = 0; i + 1 < runs.length; i += 2) {
    for (let j = 0; j < runs[i + 1] && k < nodes.length; j++, k++) nodes[k].stack = runs[i];
  }
  const edges = [];
  const E = data.edges || [];
  for (let i = 0; i + 3 < E.length; i += 4) {
    edges.push({ src: E[i], dst: E[i + 1], var: str(E[i + 2]), type: str(E[i + 3]) });
    if ((i & 1023) === 1020 && due()) yield;
  }
  return {
    title: data.title || "", groups, nodes, edges, sources: data.sources || {}, stacks,
    aux: Array.isArray(data.aux) ? data.aux : null, auxMinGroups: data.auxMinGroups || 0,
  };
}
