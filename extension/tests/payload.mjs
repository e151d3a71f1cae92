// Writes graph payloads in the format jaxscope._graph.payload._payload documents
// (format 1), so the tests read as the programs they stand for.

export class Payload {
  constructor(title = "f") {
    this.title = title;
    this.strings = [];
    this.index = new Map();
    this.nodes = [];
    this.groups = [];
    this.edges = [];
    this.sources = {};
  }

  s(text) {
    if (!this.index.has(text)) {
      this.index.set(text, this.strings.length);
      this.strings.push(text);
    }
    return this.index.get(text);
  }

  pairs(list) {
    return list.flatMap(([name, type]) => [this.s(name), this.s(type)]);
  }

  loc(source) {
    return source ? [this.s(source[0]), source[1], this.s(source[2] || "")] : [];
  }

  /** A group; returns its index. `parent` -1 is the top level. */
  group({ kind = "scope", label, parent = -1, size = 0, primitive = "", inputs = [], outputs = [],
    params = [], source = null, scope = "", backward = 0, lines = null, fn = "", origin = 0 }) {
    this.groups.push([
      this.s(kind), this.s(label), parent, size, this.s(primitive), this.pairs(inputs),
      this.pairs(outputs), this.pairs(params), this.loc(source), this.s(scope), backward,
      lines ? [this.s(lines[0]), lines[1], lines[2]] : [], this.s(fn), origin,
    ]);
    return this.groups.length - 1;
  }

  /** A node (kind 0 eqn, 1 input, 2 output, 3 const); returns its index. */
  node({ kind = 0, label, group = -1, primitive = "", inputs = [], outputs = [], params = [],
    source = null, scope = "" }) {
    this.nodes.push([
      kind, this.s(label), group, this.s(primitive || (kind === 0 ? label : "")),
      this.pairs(inputs), this.pairs(outputs), this.pairs(params), this.loc(source), this.s(scope),
    ]);
    return this.nodes.length - 1;
  }

  /** An edge from node `src` to node `dst` (or to group k as `-1 - k`). */
  edge(src, dst, v = "a", type = "f32[]") {
    this.edges.push(src, dst, this.s(v), this.s(type));
  }

  json(extra = {}) {
    return {
      format: 1, title: this.title, strings: this.strings, nodes: this.nodes, groups: this.groups,
      edges: this.edges, sources: this.sources, ...extra,
    };
  }
}

/** A chain of n equations at the top level, each on its own source line. */
export function chain(n, file = "model.py") {
  const p = new Payload("chain");
  let prev = p.node({ kind: 1, label: "x", outputs: [["x", "f32[3]"]] });
  for (let i = 0; i < n; i++) {
    const cur = p.node({ label: "sin", inputs: [["v" + i, "f32[3]"]], outputs: [["v" + (i + 1), "f32[3]"]],
      source: [file, 10 + i, "f"] });
    p.edge(prev, cur, "v" + i, "f32[3]");
    prev = cur;
  }
  return p;
}
