// The grouping model: what each container (the top level, a group, an artificial
// layer) holds, in program order, and the edges between its direct children lifted
// from the leaf edges. Pure: no DOM, so node's test runner checks it.

import { ROOT } from "./decode.js";

// A level with more than CHUNK_MAX items is split into artificial layers of
// CHUNK_SIZE (program order), laid out only when opened: first its runs of loose
// equations, then, if still too many, its groups (dagre's cost grows quickly past a
// few hundred boxes, more so with a training step's long skip edges).
export const CHUNK_MAX = 150;
export const CHUNK_SIZE = 100;
// The most a level's layout may cost (items + program-order span of its edges).
export const SPAN_BUDGET = 3000;
// A node feeding this many groups is drawn as a stub in each (unless the payload says).
export const AUX_MIN_GROUPS = 4;

/**
 * Item ids: "R" the top level, "n<k>" node k, "g<k>" group k, "a<k>" an artificial
 * layer, "x<k>@<container>" a stub of auxiliary node k inside a consuming container.
 */
export class Hierarchy {
  /** @param g a decoded payload; @param opts {chunkMax, chunkSize} (tests, benchmarks) */
  constructor(g, opts) {
    opts = opts || {};
    this.g = g;
    this.chunkMax = opts.chunkMax || CHUNK_MAX;
    this.chunkSize = opts.chunkSize || CHUNK_SIZE;
    this.item = new Map(); // id -> node | group | chunk | stub
    this.parent = new Map(); // item id -> container id
    this.children = new Map(); // container id -> item ids (program order)
    this.stubs = new Map(); // container id -> ids of its aux stubs
    this.nChunks = 0;
    this.item.set(ROOT, { id: ROOT, kind: "root", label: g.title || "graph", size: g.nodes.length });
    this.children.set(ROOT, []);
    for (const grp of g.groups) {
      this.item.set(grp.id, grp);
      this.children.set(grp.id, []);
    }
    const first = new Map();
    for (const n of g.nodes) {
      this.item.set(n.id, n);
      let p = n.parent;
      while (p !== ROOT && !first.has(p)) {
        first.set(p, n.index);
        p = this.item.get(p).parent;
      }
    }
    const order = (id) => (id[0] === "n" ? this.item.get(id).index : first.get(id) ?? 1e12);
    for (const grp of g.groups) this.children.get(grp.parent).push(grp.id);
    for (const n of g.nodes) this.children.get(n.parent).push(n.id);
    for (const [, list] of this.children) list.sort((a, b) => order(a) - order(b));
    for (const [c, list] of [...this.children]) this.chunkLevel(c, list);
    this.link();
    // A level whose edges span far (a training step's inputs feeding every layer and
    // its backward pass) costs dagre a dummy node per rank crossed: split it finer.
    for (let pass = 0; pass < 2; pass++) {
      const heavy = [...this.children.keys()].filter((c) => this.spanCost(c) > SPAN_BUDGET);
      if (!heavy.length) break;
      for (const c of heavy) {
        const list = this.children.get(c);
        this.children.set(c, this.makeChunks(list, Math.max(8, Math.ceil(Math.sqrt(list.length)))));
      }
      this.link();
    }
    this.adjacency();
  }

  link() {
    this.parent = new Map();
    for (const [c, list] of this.children) for (const id of list) this.parent.set(id, c);
    // ancestors of each leaf, outermost first (root excluded)
    this.ancestors = this.g.nodes.map((n) => {
      const chain = [];
      let p = this.parent.get(n.id);
      while (p && p !== ROOT) {
        chain.push(p);
        p = this.parent.get(p);
      }
      return chain.reverse();
    });
    this.liftEdges();
  }

  // Items plus the program-order distance each edge spans (a stub sits by its consumer).
  spanCost(c) {
    const kids = this.children.get(c);
    if (kids.length <= 30) return 0;
    const pos = new Map(kids.map((id, i) => [id, i]));
    let cost = kids.length;
    for (const e of this.lifted.get(c) || []) {
      cost += e.a[0] === "x" ? 1 : Math.abs((pos.get(e.b) ?? 0) - (pos.get(e.a) ?? 0));
    }
    return cost;
  }

  // A level with more than chunkMax items is split into artificial layers: where it
  // has groups, runs of loose equations longer than chunkSize first (the groups are
  // its structure), then the whole level if that is not enough; where it has none, all
  // of it, and layers of layers as needed.
  chunkLevel(c, list) {
    if (list.length <= this.chunkMax) return;
    let out = list;
    if (list.some((id) => id[0] !== "n")) {
      out = [];
      let run = [];
      const flush = () => {
        if (run.length > this.chunkSize) out.push(...this.makeChunks(run));
        else out.push(...run);
        run = [];
      };
      for (const id of list) {
        if (id[0] === "n") run.push(id);
        else { flush(); out.push(id); }
      }
      flush();
    } else {
      out = this.makeChunks(list);
    }
    while (out.length > this.chunkMax) out = this.makeChunks(out);
    this.children.set(c, out);
  }

  makeChunks(list, size) {
    const step = size || this.chunkSize;
    const chunks = [];
    for (let i = 0; i < list.length; i += step) {
      const members = list.slice(i, i + step);
      const id = "a" + this.nChunks++;
      let size = 0;
      for (const m of members) size += m[0] === "n" ? 1 : this.item.get(m).size;
      const range = this.lineRange(members);
      const named = members.filter((m) => m[0] === "g").map((m) => this.item.get(m).label);
      const label = named.length > 1 ? `${named[0]} \u2026 ${named[named.length - 1]}` : range.label;
      this.item.set(id, { id, kind: "chunk", label, lines: range, size, first: this.firstIndex(members[0]) });
      this.children.set(id, members);
      chunks.push(id);
    }
    // chunks with the same label (one source line, a loop) are told apart by position
    const seen = new Map();
    for (const id of chunks) {
      const it = this.item.get(id);
      seen.set(it.label, (seen.get(it.label) || 0) + 1);
    }
    chunks.forEach((id, k) => {
      const it = this.item.get(id);
      if (seen.get(it.label) > 1) it.label += ` \u00b7 part ${k + 1}/${chunks.length}`;
    });
    return chunks;
  }

  firstIndex(id) {
    while (id[0] !== "n") id = this.children.get(id)[0];
    return this.item.get(id).index;
  }

  // The source lines of the members, in the file holding most of them: "lines 10–120".
  lineRange(members) {
    const files = new Map();
    const add = (file, lo, hi, n) => {
      const f = files.get(file);
      if (!f) files.set(file, [n, lo, hi]);
      else { f[0] += n; f[1] = Math.min(f[1], lo); f[2] = Math.max(f[2], hi); }
    };
    for (const m of members) {
      const it = this.item.get(m);
      if (m[0] === "n") { if (it.source) add(it.source.file, it.source.line, it.source.line, 1); }
      else if (it.lines && it.lines.file !== undefined) add(it.lines.file, it.lines.first, it.lines.last, it.size || 1);
      else if (it.source) add(it.source.file, it.source.line, it.source.line, it.size || 1);
    }
    if (!files.size) return { label: `nodes ${this.firstIndex(members[0]) + 1}\u2013${this.firstIndex(members[members.length - 1]) + 1}` };
    const [file, [, first, last]] = [...files].reduce((a, b) => (b[1][0] > a[1][0] ? b : a));
    return { file, first, last, label: first === last ? `line ${first}` : `lines ${first}\u2013${last}` };
  }

  // For each container: the edges between its direct children, lifted from leaf edges.
  // An auxiliary node (a weight or mask feeding many groups) gets no long edges: each
  // consuming group holds a stub of it wired to its consumers there.
  liftEdges() {
    const lifted = [];
    const fanout = new Map();
    for (const e of this.g.edges) {
      const a = this.ancestors[e.src];
      // A negative destination is a group (an operand its equation consumes itself).
      const b = e.dst >= 0 ? this.ancestors[e.dst] : [...this.containersOf("g" + (-1 - e.dst)), "g" + (-1 - e.dst)];
      let k = 0;
      while (k < a.length && k < b.length && a[k] === b[k]) k++;
      const from = k < a.length ? a[k] : "n" + e.src;
      const to = k < b.length ? b[k] : e.dst >= 0 ? "n" + e.dst : null;
      if (to === null || from === to) continue;
      const inner = k + 1 < b.length ? b[k + 1] : e.dst >= 0 ? "n" + e.dst : null;
      lifted.push({ lca: k === 0 ? ROOT : a[k - 1], from, to, inner, e });
      if (from[0] === "n" && to[0] !== "n") {
        if (!fanout.has(e.src)) fanout.set(e.src, new Set());
        fanout.get(e.src).add(to);
      }
    }
    const minGroups = this.g.auxMinGroups || AUX_MIN_GROUPS;
    this.aux = new Set(this.g.aux || [...fanout].filter(([, into]) => into.size >= minGroups).map(([s]) => s));
    this.lifted = new Map();
    this.stubs = new Map();
    const seen = new Set();
    const push = (c, a, b, e) => {
      const key = a + ">" + b;
      if (seen.has(key)) return;
      seen.add(key);
      if (!this.lifted.has(c)) this.lifted.set(c, []);
      this.lifted.get(c).push({ a, b, type: e.type, var: e.var });
    };
    for (const { lca, from, to, inner, e } of lifted) {
      if (this.aux.has(e.src) && from[0] === "n" && to[0] !== "n") {
        if (inner === null) continue;
        const stub = `x${e.src}@${to}`;
        if (!this.parent.has(stub)) {
          const src = this.item.get(from);
          this.item.set(stub, { id: stub, kind: "stub", of: e.src, label: src.label, node: src });
          if (!this.stubs.has(to)) this.stubs.set(to, []);
          this.stubs.get(to).push(stub);
          this.parent.set(stub, to);
        }
        push(to, stub, inner, e);
      } else {
        push(lca, from, to, e);
      }
    }
  }

  adjacency() {
    const n = this.g.nodes.length;
    this.out = Array.from({ length: n }, () => []);
    this.inn = Array.from({ length: n }, () => []);
    for (const e of this.g.edges) {
      if (e.dst < 0) continue;
      this.out[e.src].push(e.dst);
      this.inn[e.dst].push(e.src);
    }
  }

  reach(start, adj) {
    const seen = new Set([start]);
    const stack = [start];
    while (stack.length) {
      const v = stack.pop();
      for (const w of adj[v]) if (!seen.has(w)) { seen.add(w); stack.push(w); }
    }
    seen.delete(start);
    return seen;
  }

  isContainer(id) {
    return this.children.has(id);
  }

  // What a container's layout places: its children, then its aux stubs.
  members(c) {
    const stubs = this.stubs.get(c);
    const kids = this.children.get(c) || [];
    return stubs ? kids.concat(stubs) : kids;
  }

  // The leaf (node) indices inside a container, in program order.
  leavesOf(id) {
    const out = [];
    const walk = (c) => {
      for (const k of this.children.get(c) || []) {
        if (this.isContainer(k)) walk(k); else out.push(this.item.get(k).index);
      }
    };
    walk(id);
    return out;
  }

  // How many groups hold a stub of auxiliary node `index`.
  fanout(index) {
    let n = 0;
    for (const [, list] of this.stubs) for (const s of list) if (this.item.get(s).of === index) n++;
    return n;
  }

  // Containers holding the item, outermost first (root excluded).
  containersOf(id) {
    if (id[0] === "n") return this.ancestors[this.item.get(id).index];
    const chain = [];
    let p = this.parent.get(id);
    while (p && p !== ROOT) { chain.push(p); p = this.parent.get(p); }
    return chain.reverse();
  }
}
