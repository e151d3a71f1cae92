// The grouping model: what each container (the top level, a group, an artificial
// layer) holds, in program order, and the edges between its direct children lifted
// from the leaf edges. Pure: no DOM, so node's test runner checks it.

import { ROOT } from "./decode.js";
import { due, runSync } from "./slice.js";

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
// The program's inputs (outputs) make one "inputs" ("outputs") box from this many on.
export const IO_MIN = 6;
// A level holding groups and more than LEVEL_READABLE items wraps each run of at
// least RUN_MIN loose equations in a box labelled by its source lines.
export const LEVEL_READABLE = 24;
export const RUN_MIN = 8;
// SERIES_MIN or more consecutive groups of one kind named alike with consecutive
// numbers ("layer0" ... "layer68") make one collapsed series, opened SERIES_PAGE at a time.
export const SERIES_MIN = 10;
export const SERIES_PAGE = 10;
// Loose equations allowed between two members of a series (a residual add).
const SERIES_GAP = 4;
const NUMBERED = /^(.*?)(\d+)(\D*)$/;

/**
 * The groups the first view opens, as the bundles that open together, in order,
 * while at most `budget` items show. The user's own groups (origin 0) open first,
 * the forward pass's before the backward's, those adding the fewest items first;
 * then the library calls made from the user's code (origin 1, `self.head`,
 * `optimizer.update`) while the budget lasts; groups inside a library or JAX
 * (origin 2, `jit _where`) never do. Artificial boxes and
 * three or more numbered siblings ("layer0", "layer1", ..., "Block #1", ...) stay
 * closed, two open together or not at all.
 */
export function defaultExpansion(h, budget) {
  let visible = h.members(ROOT).length;
  const opened = [];
  const queue = []; // bundles: [ids, rank (origin, then backward), cost]
  const push = (c) => {
    const bundles = new Map();
    for (const id of h.children.get(c) || []) {
      if (id[0] !== "g" || !h.isContainer(id)) continue;
      const num = h.numbered(id);
      const key = num ? num.key : id;
      if (!bundles.has(key)) bundles.set(key, []);
      bundles.get(key).push(id);
    }
    // three or more numbered siblings stay closed: their names are the structure
    for (const ids of bundles.values()) {
      if (ids.length >= 3) continue;
      const origin = Math.max(...ids.map((id) => h.item.get(id).origin || 0));
      if (origin >= 2) continue;
      const backward = ids.some((id) => h.item.get(id).backward) ? 1 : 0;
      queue.push([ids, origin * 2 + backward, ids.reduce((a, id) => a + h.members(id).length - 1, 0)]);
    }
  };
  push(ROOT);
  while (queue.length) {
    queue.sort((a, b) => b[1] - a[1] || b[2] - a[2]);
    const [ids, , cost] = queue.pop();
    if (visible + cost > budget) continue;
    visible += cost;
    opened.push(ids);
    for (const id of ids) push(id);
  }
  return opened;
}

/**
 * Item ids: "R" the top level, "n<k>" node k, "g<k>" group k, "a<k>" an artificial
 * layer, "x<k>@<container>" a stub of auxiliary node k inside a consuming container.
 */
export class Hierarchy {
  /**
   * @param g a decoded payload; @param opts {chunkMax, chunkSize} (tests, benchmarks),
   * `deferred`: built later by running `build()` (in slices: see slice.js)
   */
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
    if (!opts.deferred) runSync(this.build());
  }

  /** Builds the model: steps that pause where a slice is spent (see slice.js). */
  *build() {
    const g = this.g;
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
      if ((n.index & 127) === 127 && due()) yield;
    }
    // Program order: a container's nodes come in order; its (few) groups, sorted by
    // their first node, are merged in.
    const kidGroups = new Map();
    for (const grp of g.groups) {
      if (!kidGroups.has(grp.parent)) kidGroups.set(grp.parent, []);
      kidGroups.get(grp.parent).push(grp.id);
    }
    for (const n of g.nodes) {
      this.children.get(n.parent).push(n.id);
      if ((n.index & 127) === 127 && due()) yield;
    }
    const firstOf = (id) => first.get(id) ?? 1e12;
    for (const [c, gids] of kidGroups) {
      gids.sort((a, b) => firstOf(a) - firstOf(b));
      const nodes = this.children.get(c), merged = [];
      let i = 0;
      for (const gid of gids) {
        const at = firstOf(gid);
        while (i < nodes.length && this.item.get(nodes[i]).index < at) merged.push(nodes[i++]);
        merged.push(gid);
      }
      while (i < nodes.length) merged.push(nodes[i++]);
      this.children.set(c, merged);
      if (due()) yield;
    }
    for (const [c, list] of [...this.children]) {
      yield* this.structure(c, list);
      if (due()) yield;
    }
    yield* this.link();
    // A level whose edges span far (a training step's inputs feeding every layer and
    // its backward pass) costs dagre a dummy node per rank crossed: split it finer.
    // Its structure first (shorter series, every run of loose equations), artificial
    // layers only if that is not enough.
    for (let pass = 0; pass < 2; pass++) {
      const heavy = [];
      for (const c of [...this.children.keys()]) {
        if (this.spanCost(c) > SPAN_BUDGET) heavy.push(c);
        if (due()) yield;
      }
      if (!heavy.length) break;
      for (const c of heavy) {
        const list = this.children.get(c);
        if (pass === 0) yield* this.structure(c, list, true);
        else this.children.set(c, yield* this.makeChunks(list, Math.max(8, Math.ceil(Math.sqrt(list.length)))));
        if (due()) yield;
      }
      yield* this.link();
    }
    yield* this.adjacency();
  }

  *link() {
    this.parent = new Map();
    for (const [c, list] of this.children) {
      for (const id of list) this.parent.set(id, c);
      if (due()) yield;
    }
    // ancestors of each leaf, outermost first (root excluded): one array per
    // container, shared by the leaves in it (read only)
    const chains = new Map([[ROOT, []]]);
    const chainOf = (c) => {
      let chain = chains.get(c);
      if (chain === undefined) {
        chain = [...chainOf(this.parent.get(c) ?? ROOT), c];
        chains.set(c, chain);
      }
      return chain;
    };
    const nodes = this.g.nodes;
    this.ancestors = new Array(nodes.length);
    for (let k = 0; k < nodes.length; k++) {
      this.ancestors[k] = chainOf(this.parent.get(nodes[k].id) ?? ROOT);
      if ((k & 127) === 127 && due()) yield;
    }
    yield* this.liftEdges();
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

  // A level's structure, made of what the payload says: the program's inputs and
  // outputs in a box each, long runs of loose equations beside groups in a box each
  // (labelled by their source lines), numbered series of groups collapsed; artificial
  // layers only where that leaves more than chunkMax items. `heavy`: a level whose
  // edges span far (see the constructor), structured more eagerly. These steps pause
  // where a slice is spent (see slice.js): a level may hold 100,000 items.
  *structure(c, list, heavy) {
    let out = list;
    if (c === ROOT) out = yield* this.ioBoxes(out);
    if (out.some((id) => id[0] !== "n") && (heavy || out.length > LEVEL_READABLE)) out = yield* this.wrapRuns(out);
    out = yield* this.series(out, heavy ? 4 : SERIES_MIN);
    this.children.set(c, out);
    yield* this.chunkLevel(c, out);
  }

  // A new artificial container of `members` (program order), structured in turn.
  *box(kind, label, members, extra) {
    const id = "a" + this.nChunks++;
    let size = 0;
    for (const m of members) size += m[0] === "n" ? 1 : this.item.get(m).size;
    this.item.set(id, { id, kind, label, size, first: this.firstIndex(members[0]), ...(extra || {}) });
    this.children.set(id, members);
    yield* this.chunkLevel(id, members);
    return id;
  }

  *ioBoxes(list) {
    for (const kind of ["input", "output"]) {
      const io = [];
      for (let i = 0; i < list.length; i++) {
        const id = list[i];
        if (id[0] === "n" && this.item.get(id).kind === kind) io.push(id);
        if ((i & 127) === 127 && due()) yield;
      }
      if (io.length < IO_MIN) continue;
      const taken = new Set(io);
      const at = list.indexOf(io[0]);
      const box = yield* this.box("io", kind === "input" ? "inputs" : "outputs", io);
      const rest = [];
      for (let i = 0; i < list.length; i++) {
        if (i === at) rest.push(box);
        if (!taken.has(list[i])) rest.push(list[i]);
        if ((i & 127) === 127 && due()) yield;
      }
      list = rest;
    }
    return list;
  }

  // Runs of RUN_MIN or more loose equations (a tree_map'd optimizer update) in a box.
  *wrapRuns(list) {
    const out = [];
    let run = [];
    for (let i = 0; i <= list.length; i++) {
      const id = list[i];
      if (i < list.length && id[0] === "n" && this.item.get(id).kind === "eqn") { run.push(id); continue; }
      if (run.length >= RUN_MIN) {
        const range = this.lineRange(run, true);
        out.push(yield* this.box("chunk", range.label, run, { lines: range }));
      } else for (const r of run) out.push(r);
      run = [];
      if (i < list.length) out.push(id);
      if (due()) yield;
    }
    return out;
  }

  // The number of a group named "<prefix><number><suffix>" ("layer12", "Block #3",
  // "layer5 (backward)") and the key its series shares, or null.
  numbered(id) {
    if (id[0] !== "g") return null;
    const it = this.item.get(id);
    const m = NUMBERED.exec(it.label);
    return m ? { key: `${it.kind}\u0000${m[1]}\u0000${m[3]}\u0000${it.backward ? 1 : 0}`, num: Number(m[2]) } : null;
  }

  // Consecutive groups numbered one after another (up or down), a few loose
  // equations allowed between them, become one collapsed series when there are at
  // least `min` of them; a series longer than SERIES_PAGE opens on pages.
  *series(list, min) {
    const out = [];
    let i = 0;
    while (i < list.length) {
      if ((i & 127) === 127 && due()) yield;
      const head = this.numbered(list[i]);
      if (!head) { out.push(list[i++]); continue; }
      const members = [i];
      let step = 0, last = head.num, j = i + 1;
      while (j < list.length) {
        let k = j;
        while (k < list.length && k - j < SERIES_GAP && list[k][0] === "n") k++;
        const next = k < list.length ? this.numbered(list[k]) : null;
        if (!next || next.key !== head.key) break;
        const d = next.num - last;
        if (Math.abs(d) !== 1 || (step && d !== step)) break;
        step = d; last = next.num; members.push(k); j = k + 1;
      }
      if (members.length < min) { out.push(list[i++]); continue; }
      const end = members[members.length - 1] + 1;
      const span = list.slice(i, end);
      const groups = members.map((k) => list[k]);
      const label = (a, b, n) => `${this.item.get(a).label} \u2026 ${this.item.get(b).label}` + (n ? ` (${n} blocks)` : "");
      let kids = span;
      if (groups.length > SERIES_PAGE) {
        kids = [];
        for (let p = 0; p < groups.length; p += SERIES_PAGE) {
          const page = groups.slice(p, p + SERIES_PAGE);
          const from = p === 0 ? 0 : span.indexOf(page[0]);
          const to = p + SERIES_PAGE >= groups.length ? span.length : span.indexOf(groups[p + SERIES_PAGE]);
          kids.push(yield* this.box("series", label(page[0], page[page.length - 1], 0), span.slice(from, to), { blocks: page.length }));
        }
      }
      out.push(yield* this.box("series", label(groups[0], groups[groups.length - 1], groups.length), kids, { blocks: groups.length }));
      i = end;
    }
    return out;
  }

  // A level with more than chunkMax items is split into artificial layers: where it
  // has groups, runs of loose equations longer than chunkSize first (the groups are
  // its structure), then the whole level if that is not enough; where it has none, all
  // of it, and layers of layers as needed.
  *chunkLevel(c, list) {
    if (list.length <= this.chunkMax) return;
    let out = list;
    if (list.some((id) => id[0] !== "n")) {
      out = [];
      let run = [];
      for (let i = 0; i <= list.length; i++) {
        const id = list[i];
        if (i < list.length && id[0] === "n") { run.push(id); continue; }
        if (run.length > this.chunkSize) for (const k of yield* this.makeChunks(run)) out.push(k);
        else for (const r of run) out.push(r);
        run = [];
        if (i < list.length) out.push(id);
      }
    } else {
      out = yield* this.makeChunks(list);
    }
    while (out.length > this.chunkMax) out = yield* this.makeChunks(out);
    this.children.set(c, out);
  }

  *makeChunks(list, size) {
    const step = size || this.chunkSize;
    const chunks = [];
    for (let i = 0; i < list.length; i += step) {
      const members = list.slice(i, i + step);
      const id = "a" + this.nChunks++;
      let size = 0;
      for (const m of members) size += m[0] === "n" ? 1 : this.item.get(m).size;
      const range = this.lineRange(members);
      const named = members.filter((m) => m[0] !== "n").map((m) => this.item.get(m).label);
      const label = named.length > 1 ? `${named[0]} \u2026 ${named[named.length - 1]}` : range.label;
      this.item.set(id, { id, kind: "chunk", label, lines: range, size, first: this.firstIndex(members[0]) });
      this.children.set(id, members);
      chunks.push(id);
      if (due()) yield;
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

  // The source lines of the members, in the file holding most of them: "lines 10–120"
  // (with `named`, "f: lines 10–120" when one named function holds them all). Members with no source
  // line (the program's inputs, a library's equations) are named by their first and
  // last labels, or by their commonest primitives.
  lineRange(members, named) {
    const files = new Map();
    const fns = new Set();
    const add = (file, lo, hi, n) => {
      const f = files.get(file);
      if (!f) files.set(file, [n, lo, hi]);
      else { f[0] += n; f[1] = Math.min(f[1], lo); f[2] = Math.max(f[2], hi); }
    };
    for (const m of members) {
      const it = this.item.get(m);
      if (m[0] === "n") { if (it.source) { add(it.source.file, it.source.line, it.source.line, 1); fns.add(it.source.fn); } }
      else if (it.lines && it.lines.file !== undefined) { add(it.lines.file, it.lines.first, it.lines.last, it.size || 1); fns.add(""); }
      else if (it.source) { add(it.source.file, it.source.line, it.source.line, it.size || 1); fns.add(""); }
    }
    if (!files.size) return { label: this.namesLabel(members) };
    const [file, [, first, last]] = [...files].reduce((a, b) => (b[1][0] > a[1][0] ? b : a));
    // "step.<locals>.<lambda>" (a tree_map'd update) is named after "step"
    const fn = named && fns.size === 1 ? [...fns][0].replace(/\.<locals>\.<lambda>$/, "").split(".<locals>.").pop() : "";
    const where = first === last ? `line ${first}` : `lines ${first}\u2013${last}`;
    return { file, first, last, label: fn && !fn.includes("<") ? `${fn}: ${where}` : where };
  }

  namesLabel(members) {
    const leaves = members.filter((m) => m[0] === "n").map((m) => this.item.get(m));
    if (leaves.length === members.length && leaves.every((n) => n.kind !== "eqn")) {
      const a = leaves[0].label, b = leaves[leaves.length - 1].label;
      return members.length === 1 ? a : `${a} \u2026 ${b}`;
    }
    const count = new Map();
    for (const n of leaves) count.set(n.primitive || n.label, (count.get(n.primitive || n.label) || 0) + 1);
    const top = [...count].sort((x, y) => y[1] - x[1]).slice(0, 3).map(([p]) => p);
    if (!top.length) return `${this.item.get(members[0]).label} \u2026 ${this.item.get(members[members.length - 1]).label}`;
    return `${top.join(", ")}${count.size > 3 ? ", \u2026" : ""} (${leaves.length} equations)`;
  }

  // For each container: the edges between its direct children, lifted from leaf edges.
  // An auxiliary node (a weight or mask feeding many groups) gets no long edges: each
  // consuming group holds a stub of it wired to its consumers there.
  *liftEdges() {
    const lifted = [];
    const fanout = new Map();
    let count = 0;
    for (const e of this.g.edges) {
      if ((++count & 127) === 0 && due()) yield;
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
      if (this.leafLike(from) && to[0] !== "n") {
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
      if ((++count & 127) === 0 && due()) yield;
      if (this.aux.has(e.src) && this.leafLike(from) && to[0] !== "n") {
        if (inner === null) continue;
        const stub = `x${e.src}@${to}`;
        if (!this.parent.has(stub)) {
          const src = this.item.get("n" + e.src);
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

  // A node, or the box of the program's inputs (an auxiliary input in it still gets a
  // stub in each group it feeds, not an edge from the box).
  leafLike(id) {
    return id[0] === "n" || this.item.get(id).kind === "io";
  }

  *adjacency() {
    const n = this.g.nodes.length;
    this.out = Array.from({ length: n }, () => []);
    this.inn = Array.from({ length: n }, () => []);
    let count = 0;
    for (const e of this.g.edges) {
      if ((++count & 127) === 0 && due()) yield;
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
