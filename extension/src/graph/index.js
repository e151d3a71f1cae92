// jaxscope graph viewer: an anywidget front-end (and a static mount for HTML exports).
//
// Data: the payload of jaxscope._graph.to_payload (format 1). Layout: dagre in a Web
// Worker (layout.js, worker.js), run lazily per expanded container (a group, or an
// "artificial layer" that chunks a level with no structure, as Model Explorer does),
// cached until a descendant is expanded or collapsed. Every user string is written
// with textContent / createTextNode; nothing user-controlled reaches innerHTML.

import WORKER_SOURCE from "virtual:worker";
import { layoutGraph } from "./layout.js";

const SVGNS = "http://www.w3.org/2000/svg";
const ROOT = "R";
// A level with more than CHUNK_MAX items is split into artificial layers of
// CHUNK_SIZE (program order), laid out only when opened: first its runs of loose
// equations, then, if still too many, its groups (dagre's cost grows quickly past a
// few hundred boxes, more so with a training step's long skip edges).
const CHUNK_MAX = 150;
const CHUNK_SIZE = 100;
// The most a level's layout may cost (items + program-order span of its edges).
const SPAN_BUDGET = 3000;
// A node feeding this many groups is drawn as a stub in each (unless the payload says).
const AUX_MIN_GROUPS = 4;
// Layouts of at most this many nodes + edges run inline (a few ms: less than a post).
const INLINE_MAX = 120;
const MIN_HEIGHT = 200;
// Groups up to this many leaf nodes may start expanded, smallest first, as long as
// the first view shows at most VISIBLE_BUDGET items.
const AUTO_EXPAND = 60;
const VISIBLE_BUDGET = 80;
const PAD = 10;
const HEADER = 22;
const MAX_RESULTS = 100;

const KINDS = ["eqn", "input", "output", "const"];

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}

function svgText(x, y, text, cls) {
  const t = svg("text", { x, y, class: cls || "" });
  t.appendChild(document.createTextNode(text));
  return t;
}

function clip(text, n) {
  return text.length > n ? text.slice(0, n - 1) + "\u2026" : text;
}

// ------------------------------------------------------------------ data decoding

export function decode(data) {
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
    params: pairs(g[7]), source: loc(g[8]), scope: str(g[9]),
    lines: g[11] && g[11].length ? { file: str(g[11][0]), first: g[11][1], last: g[11][2] } : null,
  }));
  const nodes = (data.nodes || []).map((n, k) => ({
    id: "n" + k, index: k, kind: KINDS[n[0]] || "eqn", label: str(n[1]),
    parent: n[2] < 0 ? ROOT : "g" + n[2], primitive: str(n[3]), inputs: pairs(n[4]),
    outputs: pairs(n[5]), params: pairs(n[6]), source: loc(n[7]), scope: str(n[8]),
  }));
  const edges = [];
  const E = data.edges || [];
  for (let i = 0; i + 3 < E.length; i += 4) {
    edges.push({ src: E[i], dst: E[i + 1], var: str(E[i + 2]), type: str(E[i + 3]) });
  }
  return {
    title: data.title || "", groups, nodes, edges, sources: data.sources || {},
    aux: Array.isArray(data.aux) ? data.aux : null, auxMinGroups: data.auxMinGroups || 0,
  };
}

// ---------------------------------------------------------------------- the model

class Hierarchy {
  constructor(g, opts) {
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

  // Containers holding the item, outermost first (root excluded).
  containersOf(id) {
    if (id[0] === "n") return this.ancestors[this.item.get(id).index];
    const chain = [];
    let p = this.parent.get(id);
    while (p && p !== ROOT) { chain.push(p); p = this.parent.get(p); }
    return chain.reverse();
  }
}

// ------------------------------------------------------------------------ layout

// Runs layouts in a Web Worker started from the bundled source (a blob: URL: no second
// file, works offline). Small graphs are laid out inline, where posting costs more than
// the layout; every layout is inline where the page forbids blob: workers.
class LayoutEngine {
  constructor(inlineMax) {
    this.inlineMax = inlineMax;
    this.pending = new Map();
    this.seq = 0;
    this.worker = null;
    if (typeof Worker === "undefined" || !WORKER_SOURCE) return;
    try {
      const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
      this.worker = new Worker(url);
      URL.revokeObjectURL(url);
      this.worker.onmessage = (ev) => {
        const job = this.pending.get(ev.data.id);
        if (!job) return;
        this.pending.delete(ev.data.id);
        if (ev.data.error) job.reject(new Error(ev.data.error));
        else job.resolve(ev.data.out);
      };
      this.worker.onerror = (ev) => {
        ev.preventDefault && ev.preventDefault();
        this.fallBack();
      };
    } catch (err) {
      this.worker = null;
    }
  }

  inline(input) {
    return !this.worker || input.nodes.length + input.edges.length <= this.inlineMax;
  }

  run(input) {
    if (this.inline(input)) return Promise.resolve(layoutGraph(input));
    const id = this.seq++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { input, resolve, reject });
      this.worker.postMessage({ id, input });
    });
  }

  // The worker could not start (a page policy): lay out what it held inline.
  fallBack() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
    const jobs = [...this.pending.values()];
    this.pending.clear();
    for (const job of jobs) {
      try { job.resolve(layoutGraph(job.input)); } catch (err) { job.reject(err); }
    }
  }

  close() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
  }
}

// ------------------------------------------------------------------------ the view

class GraphViewer {
  constructor(host, data, opts) {
    this.opts = opts || {};
    this.onSelect = this.opts.onSelect || (() => {});
    this.host = host;
    this.g = decode(data);
    this.h = new Hierarchy(this.g, this.opts);
    this.engine = new LayoutEngine(this.opts.inlineMax ?? INLINE_MAX);
    this.expanded = new Set([ROOT]);
    this.layouts = new Map();
    this.epochs = new Map();
    this.gen = 0;
    this.selected = null;
    this.focused = null;
    this.marks = new Map(); // visible id -> css class
    this.io = new Map(); // visible id -> jsg-producer | jsg-consumer
    this.results = [];
    this.current = -1;
    this.lastQuery = null;
    this.elements = new Map();
    this.k = 1; this.tx = 0; this.ty = 0; this.minK = 0.02;
    this.defaultExpansion();
    this.build();
    this.ready = this.update(() => this.fit());
  }

  // Open small groups first (fewest leaves), while the view stays under VISIBLE_BUDGET
  // items; groups of more than AUTO_EXPAND leaves and artificial layers start closed.
  defaultExpansion() {
    const h = this.h;
    let visible = h.members(ROOT).length;
    const queue = [];
    const push = (c) => {
      for (const id of h.children.get(c) || []) {
        if (!h.isContainer(id)) continue;
        const it = h.item.get(id);
        if (it.kind !== "chunk" && it.size <= AUTO_EXPAND) queue.push(id);
      }
    };
    push(ROOT);
    while (queue.length) {
      queue.sort((a, b) => h.item.get(b).size - h.item.get(a).size);
      const id = queue.pop();
      const cost = h.members(id).length - 1;
      if (visible + cost > VISIBLE_BUDGET) continue;
      visible += cost;
      this.expanded.add(id);
      push(id);
    }
  }

  // -------------------------------------------------------------------- DOM skeleton
  build() {
    const root = el("div", "jaxscope-graph");
    root.style.height = (this.opts.height || 520) + "px";
    root.tabIndex = 0;
    root.setAttribute("role", "application");
    root.setAttribute("aria-label", "dataflow graph: arrows move between nodes, Enter expands, Escape collapses, f full window");
    const bar = el("div", "jsg-toolbar");
    const title = el("span", "jsg-title", this.g.title ? `graph of ${this.g.title}` : "graph");
    this.search = el("input", "jsg-search");
    this.search.type = "search";
    this.search.placeholder = "search: primitive, %var, file:line, line";
    this.search.setAttribute("aria-label", "search the graph");
    const prev = el("button", "jsg-btn jsg-prev", "\u2039");
    const next = el("button", "jsg-btn jsg-next", "\u203a");
    prev.title = "previous result (Shift+Enter)"; next.title = "next result (Enter)";
    this.count = el("span", "jsg-count", "");
    const zoomIn = el("button", "jsg-btn jsg-zoom-in", "+");
    const zoomOut = el("button", "jsg-btn jsg-zoom-out", "\u2212");
    zoomIn.title = "zoom in"; zoomOut.title = "zoom out";
    const fit = el("button", "jsg-btn jsg-fit", "fit");
    fit.title = "fit the whole graph";
    const collapse = el("button", "jsg-btn jsg-collapse", "collapse all");
    const clear = el("button", "jsg-btn jsg-clear", "clear");
    const full = el("button", "jsg-btn jsg-full-btn", "full");
    full.title = "full window (f; Esc leaves)";
    this.busy = el("span", "jsg-busy", "");
    const stats = el("span", "jsg-stats",
      `${this.g.nodes.length} nodes \u00b7 ${this.g.edges.length} edges \u00b7 ${this.g.groups.length} groups`);
    bar.append(title, this.search, prev, next, this.count, zoomIn, zoomOut, fit, collapse, clear, full, this.busy, stats);
    this.crumbs = el("div", "jsg-crumbs");
    const main = el("div", "jsg-main");
    this.canvas = el("div", "jsg-canvas");
    this.svg = svg("svg", { class: "jsg-svg" });
    const defs = svg("defs");
    const marker = svg("marker", { id: "jsg-arrow-" + uid, viewBox: "0 0 8 8", refX: "8", refY: "4",
      markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.appendChild(svg("path", { d: "M0,0 L8,4 L0,8 z", class: "jsg-arrowhead" }));
    defs.appendChild(marker);
    this.arrowId = "jsg-arrow-" + uid;
    uid++;
    this.svg.appendChild(defs);
    this.viewport = svg("g", { class: "jsg-viewport" });
    this.svg.appendChild(this.viewport);
    this.canvas.appendChild(this.svg);
    this.panel = el("div", "jsg-panel");
    this.panel.appendChild(el("div", "jsg-hint",
      "Click a node for its primitive, shapes, params and source line; click a group to expand or collapse it. " +
      "Drag to pan, wheel to zoom. Keys: arrows move, Enter expands, Esc collapses, f full window."));
    main.append(this.canvas, this.panel);
    const grip = el("div", "jsg-resize");
    grip.title = "drag to resize";
    root.append(bar, this.crumbs, main, grip);
    this.host.appendChild(root);
    this.root = root;
    this.renderCrumbs();

    fit.addEventListener("click", () => this.fit());
    zoomIn.addEventListener("click", () => this.zoomBy(1.25));
    zoomOut.addEventListener("click", () => this.zoomBy(0.8));
    full.addEventListener("click", () => this.setFull(!root.classList.contains("jsg-full")));
    collapse.addEventListener("click", () => {
      this.expanded = new Set([ROOT]);
      this.layouts.clear();
      this.update(() => this.fit());
    });
    clear.addEventListener("click", () => {
      this.search.value = "";
      this.selected = null;
      this.marks.clear();
      this.io.clear();
      this.results = [];
      this.lastQuery = null;
      this.count.textContent = "";
      this.render();
    });
    prev.addEventListener("click", () => this.step(-1));
    next.addEventListener("click", () => this.step(1));
    let timer = null;
    this.search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.runSearch(this.search.value), 120);
    });
    this.search.addEventListener("keydown", (ev) => {
      ev.stopPropagation();
      if (ev.key === "Enter") {
        clearTimeout(timer);
        // Enter goes to the next result (Shift+Enter: previous), searching first if
        // the query changed, so it always lands on a result as a browser's find does
        if (this.search.value !== this.lastQuery) this.runSearch(this.search.value);
        this.step(ev.shiftKey ? -1 : 1);
      } else if (ev.key === "Escape") {
        this.search.blur();
        this.root.focus();
      }
    });
    root.addEventListener("keydown", (ev) => this.onKey(ev));
    this.installPanZoom();
    this.installResize(grip);
  }

  installPanZoom() {
    let drag = null;
    this.svg.addEventListener("mousedown", (ev) => {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, tx: this.tx, ty: this.ty, moved: false };
    });
    window.addEventListener("mousemove", (ev) => {
      if (!drag) return;
      const dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      this.tx = drag.tx + dx; this.ty = drag.ty + dy;
      this.applyTransform();
    });
    window.addEventListener("mouseup", () => {
      if (drag && drag.moved) this.suppressClick = true;
      drag = null;
      setTimeout(() => { this.suppressClick = false; }, 0);
    });
    this.svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const r = this.svg.getBoundingClientRect();
      const mx = ev.clientX - r.left, my = ev.clientY - r.top;
      this.zoomBy(Math.exp(-ev.deltaY * 0.0015), mx, my);
    }, { passive: false });
  }

  installResize(grip) {
    grip.addEventListener("pointerdown", (ev) => {
      ev.preventDefault();
      const y0 = ev.clientY, h0 = this.root.getBoundingClientRect().height;
      const move = (e) => { this.root.style.height = Math.max(MIN_HEIGHT, Math.round(h0 + e.clientY - y0)) + "px"; };
      const up = () => {
        window.removeEventListener("pointermove", move);
        window.removeEventListener("pointerup", up);
      };
      window.addEventListener("pointermove", move);
      window.addEventListener("pointerup", up);
    });
  }

  setFull(on) {
    this.root.classList.toggle("jsg-full", on);
    this.root.focus();
    requestAnimationFrame(() => this.fit());
  }

  zoomBy(f, mx, my) {
    if (mx === undefined) {
      mx = (this.canvas.clientWidth || 800) / 2;
      my = (this.canvas.clientHeight || 480) / 2;
    }
    const k = Math.min(4, Math.max(this.minK, this.k * f));
    this.tx = mx - ((mx - this.tx) * k) / this.k;
    this.ty = my - ((my - this.ty) * k) / this.k;
    this.k = k;
    this.applyTransform();
  }

  applyTransform() {
    this.viewport.setAttribute("transform", `translate(${this.tx},${this.ty}) scale(${this.k})`);
  }

  // The whole graph, however small that makes it (zoom in from there).
  fit() {
    const lay = this.layouts.get(ROOT);
    if (!lay) return;
    const w = this.canvas.clientWidth || 800, hgt = this.canvas.clientHeight || 480;
    const k = Math.min(1.2, (w - 20) / lay.w, (hgt - 20) / lay.h);
    this.minK = Math.min(0.02, k / 2);
    this.k = k;
    this.tx = (w - lay.w * k) / 2;
    this.ty = (hgt - lay.h * k) / 2;
    this.applyTransform();
  }

  // Bring an item into view: centred, zoomed out only as far as it needs (a tall
  // group shows its top).
  centreOn(id, zoomToFit) {
    const box = this.absolute(id);
    if (!box) return;
    const w = this.canvas.clientWidth || 800, hgt = this.canvas.clientHeight || 480;
    let k = this.k;
    if (zoomToFit) k = Math.min(Math.max(k, 0.8), Math.max(Math.min(0.35, k), Math.min((w - 20) / box.w, (hgt - 20) / box.h)));
    this.k = k;
    this.minK = Math.min(this.minK, k / 2);
    this.tx = w / 2 - (box.x + box.w / 2) * k;
    this.ty = box.h * k > hgt - 20 ? 10 - box.y * k : hgt / 2 - (box.y + box.h / 2) * k;
    this.applyTransform();
  }

  // ---------------------------------------------------------------------- layout
  itemSize(id) {
    const h = this.h;
    const it = h.item.get(id);
    if (it.kind === "stub") return { w: Math.max(40, clip(it.label, 16).length * 6.4 + 14), h: 20 };
    if (!h.isContainer(id)) {
      const n = it;
      const sub = n.kind === "eqn" ? n.outputs.map((o) => o[1]).join(" ") : (n.kind === "output" ? n.inputs : n.outputs).map((o) => o[1]).join(" ");
      const chars = Math.max(clip(n.label, 28).length * 1.15, clip(sub, 32).length);
      return { w: Math.max(56, chars * 6.4 + 18), h: 34 };
    }
    if (this.expanded.has(id)) {
      const lay = this.layouts.get(id);
      return { w: lay.w, h: lay.h };
    }
    return { w: Math.max(90, clip(it.label, 40).length * 7 + 24), h: 40 };
  }

  // Expanded containers still to lay out, inner ones first (a parent needs their size).
  missing() {
    const out = [];
    const walk = (c) => {
      for (const id of this.h.children.get(c) || []) if (this.expanded.has(id) && this.h.isContainer(id)) walk(id);
      if (!this.layouts.has(c)) out.push(c);
    };
    walk(ROOT);
    return out;
  }

  layoutInput(c) {
    const kids = this.h.members(c);
    const nodes = kids.map((id) => { const s = this.itemSize(id); return { id, w: s.w, h: s.h }; });
    const edges = (this.h.lifted.get(c) || []).map((e) => ({ a: e.a, b: e.b }));
    return { nodes, edges };
  }

  store(c, input, out) {
    const top = PAD + (c === ROOT ? 0 : HEADER);
    const pos = new Map();
    for (const n of input.nodes) {
      const p = out.pos[n.id];
      pos.set(n.id, { x: p[0] + PAD, y: p[1] + top, w: n.w, h: n.h });
    }
    const lifted = this.h.lifted.get(c) || [];
    const edges = lifted.map((e, i) => ({ a: e.a, b: e.b, type: e.type, var: e.var,
      points: out.edges[i].map((p) => [p[0] + PAD, p[1] + top]) }));
    const empty = !input.nodes.length;
    this.layouts.set(c, { w: Math.max((empty ? 60 : out.w) + 2 * PAD, 120), h: (empty ? 10 : out.h) + 2 * PAD + (c === ROOT ? 0 : HEADER), pos, edges });
  }

  // Lays out what the view needs. Returns null when that was done inline, else a
  // promise of whether it finished (false: a newer update took over).
  prepare(gen) {
    const todo = this.missing();
    let i = 0;
    for (; i < todo.length; i++) {
      const input = this.layoutInput(todo[i]);
      if (!this.engine.inline(input)) break;
      this.store(todo[i], input, layoutGraph(input));
    }
    if (i === todo.length) return null;
    return (async () => {
      for (; i < todo.length; i++) {
        const c = todo[i];
        if (this.layouts.has(c)) continue;
        const epoch = this.epochs.get(c) || 0;
        const input = this.layoutInput(c);
        const out = await this.engine.run(input);
        if (gen !== this.gen) return false;
        if ((this.epochs.get(c) || 0) === epoch) this.store(c, input, out);
      }
      return gen === this.gen;
    })();
  }

  // Lay out (off the main thread when large), draw, then `after`. Resolves once drawn.
  update(after) {
    const gen = ++this.gen;
    const finish = () => {
      if (gen !== this.gen) return;
      if (this.missing().length) { this.update(after); return; }
      this.render();
      if (after) after();
      this.setBusy(false);
    };
    let pending;
    try {
      pending = this.prepare(gen);
    } catch (err) {
      this.fail(err);
      return Promise.resolve();
    }
    if (!pending) { finish(); return Promise.resolve(); }
    this.setBusy(true);
    return pending.then((done) => { if (done) finish(); }, (err) => this.fail(err));
  }

  setBusy(on) {
    if (on) this.root.dataset.busy = "1"; else delete this.root.dataset.busy;
    this.busy.textContent = on ? "laying out\u2026" : "";
  }

  fail(err) {
    this.setBusy(false);
    this.count.textContent = "layout failed: " + err;
    throw err;
  }

  invalidate(c) {
    let p = c;
    while (p) {
      this.layouts.delete(p);
      this.epochs.set(p, (this.epochs.get(p) || 0) + 1);
      if (p === ROOT) break;
      p = this.h.parent.get(p);
    }
  }

  toggle(id) {
    const opening = !this.expanded.has(id);
    if (opening) this.expanded.add(id);
    else this.expanded.delete(id);
    this.invalidate(id);
    this.focused = id;
    return this.update(() => { this.centreOn(id, opening); this.renderCrumbs(); });
  }

  // The visible item standing for a leaf: its outermost collapsed container, or itself.
  rep(index) {
    for (const c of this.h.ancestors[index]) if (!this.expanded.has(c)) return c;
    return "n" + index;
  }

  reveal(id) {
    let changed = false;
    for (const c of this.h.containersOf(id)) {
      if (!this.expanded.has(c)) { this.expanded.add(c); this.invalidate(c); changed = true; }
    }
    return changed;
  }

  // ----------------------------------------------------------------------- render
  render() {
    const t0 = performance.now();
    const vp = this.viewport;
    while (vp.firstChild) vp.removeChild(vp.firstChild);
    this.elements = new Map();
    this.boxes = new Map(); // visible id -> absolute box, for keyboard moves
    const edgeLayer = svg("g", { class: "jsg-edges" });
    const frameLayer = svg("g", { class: "jsg-frames" });
    const nodeLayer = svg("g", { class: "jsg-nodes" });
    vp.append(frameLayer, edgeLayer, nodeLayer);
    let visible = 0;
    const draw = (c, ox, oy) => {
      const lay = this.layouts.get(c);
      for (const e of lay.edges) {
        if (e.points.length < 2) continue;
        const d = "M" + e.points.map((p) => `${(p[0] + ox).toFixed(1)},${(p[1] + oy).toFixed(1)}`).join("L");
        const path = svg("path", { d, class: e.a[0] === "x" ? "jsg-edge jsg-aux-edge" : "jsg-edge", "marker-end": `url(#${this.arrowId})` });
        path.dataset.a = e.a; path.dataset.b = e.b;
        const tip = svg("title");
        tip.appendChild(document.createTextNode(`${e.var}: ${e.type}`));
        path.appendChild(tip);
        edgeLayer.appendChild(path);
      }
      for (const [id, p] of lay.pos) {
        const x = p.x + ox, y = p.y + oy;
        this.boxes.set(id, { x, y, w: p.w, h: p.h });
        if (this.h.isContainer(id)) {
          if (this.expanded.has(id)) {
            this.drawFrame(frameLayer, id, x, y, p.w, p.h);
            draw(id, x, y);
          } else {
            this.drawGroup(nodeLayer, id, x, y, p.w, p.h);
            visible++;
          }
        } else if (id[0] === "x") {
          this.drawStub(nodeLayer, id, x, y, p.w, p.h);
        } else {
          this.drawNode(nodeLayer, id, x, y, p.w, p.h);
          visible++;
        }
      }
    };
    draw(ROOT, 0, 0);
    this.applyMarks();
    this.applyTransform();
    this.root.dataset.visible = String(visible);
    if (this.root.dataset.state !== "ready") this.root.dataset.readyAt = String(performance.now());
    this.root.dataset.state = "ready";
    this.root.dataset.renders = String(Number(this.root.dataset.renders || 0) + 1);
    this.lastRenderMs = performance.now() - t0;
  }

  drawNode(layer, id, x, y, w, hgt) {
    const n = this.h.item.get(id);
    const aux = this.h.aux.has(n.index) ? " jsg-aux" : "";
    const g = svg("g", { class: `jsg-node jsg-${n.kind}${aux}`, transform: `translate(${x},${y})` });
    g.dataset.id = id;
    g.dataset.primitive = n.primitive;
    const shape = n.kind === "eqn" || n.kind === "const"
      ? svg("rect", { width: w, height: hgt, rx: 5 })
      : svg("rect", { width: w, height: hgt, rx: hgt / 2 });
    g.appendChild(shape);
    g.appendChild(svgText(w / 2, 14, clip(n.label, 28), "jsg-label"));
    const types = (n.kind === "output" ? n.inputs : n.outputs).map((o) => o[1]).join(" ");
    g.appendChild(svgText(w / 2, 27, clip(types, 32), "jsg-sub"));
    const tip = svg("title");
    tip.appendChild(document.createTextNode(n.source ? `${n.label}  ${n.source.file}:${n.source.line}` : n.label));
    g.appendChild(tip);
    g.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (this.suppressClick) return;
      this.focused = id;
      this.select(id);
    });
    layer.appendChild(g);
    this.elements.set(id, g);
  }

  // A copy of an auxiliary node (a shared weight) where a group uses it.
  drawStub(layer, id, x, y, w, hgt) {
    const it = this.h.item.get(id);
    const g = svg("g", { class: "jsg-stub", transform: `translate(${x},${y})` });
    g.dataset.id = id;
    g.appendChild(svg("rect", { width: w, height: hgt, rx: hgt / 2 }));
    g.appendChild(svgText(w / 2, 14, clip(it.label, 16), "jsg-label"));
    const tip = svg("title");
    tip.appendChild(document.createTextNode(`${it.label} (shared: used in ${this.fanout(it.of)} groups); click to select it`));
    g.appendChild(tip);
    g.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (this.suppressClick) return;
      this.goTo("n" + it.of);
    });
    layer.appendChild(g);
    this.elements.set(id, g);
  }

  fanout(index) {
    let n = 0;
    for (const [, list] of this.h.stubs) for (const s of list) if (this.h.item.get(s).of === index) n++;
    return n;
  }

  drawGroup(layer, id, x, y, w, hgt) {
    const it = this.h.item.get(id);
    const g = svg("g", { class: `jsg-group jsg-collapsed jsg-k-${cssKind(it.kind)}`, transform: `translate(${x},${y})` });
    g.dataset.id = id;
    g.appendChild(svg("rect", { x: 3, y: 3, width: w - 3, height: hgt - 3, rx: 6, class: "jsg-stack" }));
    g.appendChild(svg("rect", { width: w - 3, height: hgt - 3, rx: 6 }));
    g.appendChild(svgText((w - 3) / 2, 16, "\u25b8 " + clip(it.label, 40), "jsg-label"));
    g.appendChild(svgText((w - 3) / 2, 30, `${it.size} nodes`, "jsg-sub"));
    g.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (this.suppressClick) return;
      this.showGroup(id);
      this.toggle(id);
    });
    layer.appendChild(g);
    this.elements.set(id, g);
  }

  drawFrame(layer, id, x, y, w, hgt) {
    const it = this.h.item.get(id);
    const g = svg("g", { class: `jsg-frame jsg-k-${cssKind(it.kind)}`, transform: `translate(${x},${y})` });
    g.dataset.id = id;
    g.appendChild(svg("rect", { width: w, height: hgt, rx: 8 }));
    const head = svg("g", { class: "jsg-frame-head" });
    head.appendChild(svg("rect", { width: w, height: HEADER, rx: 8 }));
    head.appendChild(svgText(8, 15, "\u25be " + clip(it.label, Math.max(8, Math.floor(w / 7))), "jsg-frame-label"));
    head.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (this.suppressClick) return;
      this.showGroup(id);
      this.toggle(id);
    });
    g.appendChild(head);
    layer.appendChild(g);
    this.elements.set(id, g);
  }

  // ------------------------------------------------------------------- keyboard
  onKey(ev) {
    if (ev.target === this.search) return;
    const key = ev.key;
    if (key === "f" && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      this.setFull(!this.root.classList.contains("jsg-full"));
    } else if (key === "Escape") {
      if (this.root.classList.contains("jsg-full")) this.setFull(false);
      else this.collapseFocused();
    } else if (key === "Enter" || key === " ") {
      if (!this.focused) this.moveFocus(null);
      else if (this.h.isContainer(this.focused)) { this.showGroup(this.focused); this.toggle(this.focused); }
      else if (this.focused[0] === "n") this.select(this.focused);
    } else if (key.startsWith("Arrow")) {
      this.moveFocus(key.slice(5).toLowerCase());
    } else {
      return;
    }
    ev.preventDefault();
  }

  // Move to the nearest visible item in a direction (none: the first item).
  moveFocus(dir) {
    const here = this.focused && this.boxes.get(this.focused);
    let best = null, bestScore = Infinity;
    for (const [id, b] of this.boxes) {
      if (id === this.focused || (this.h.isContainer(id) && this.expanded.has(id)) || !this.elements.has(id)) continue;
      const cx = b.x + b.w / 2, cy = b.y + b.h / 2;
      let score;
      if (!here) score = cy * 4 + cx;
      else {
        const dx = cx - (here.x + here.w / 2), dy = cy - (here.y + here.h / 2);
        const [along, across] = dir === "up" ? [-dy, dx] : dir === "down" ? [dy, dx] : dir === "left" ? [-dx, dy] : [dx, dy];
        if (along <= 1) continue;
        score = along + 3 * Math.abs(across);
      }
      if (score < bestScore) { bestScore = score; best = id; }
    }
    if (best === null) return;
    this.focusItem(best);
  }

  focusItem(id) {
    this.focused = id;
    for (const e of this.viewport.querySelectorAll(".jsg-focus")) e.classList.remove("jsg-focus");
    const e = this.elements.get(id);
    if (e) e.classList.add("jsg-focus");
    if (id[0] === "n") this.select(id);
    else if (this.h.isContainer(id)) this.showGroup(id);
    this.root.dataset.focused = id;
    this.keepInView(id);
    this.renderCrumbs();
  }

  keepInView(id) {
    const b = this.boxes.get(id);
    if (!b) return;
    const w = this.canvas.clientWidth || 800, hgt = this.canvas.clientHeight || 480;
    const x0 = b.x * this.k + this.tx, y0 = b.y * this.k + this.ty;
    if (x0 < 0 || y0 < 0 || x0 + b.w * this.k > w || y0 + b.h * this.k > hgt) {
      this.tx = w / 2 - (b.x + b.w / 2) * this.k;
      this.ty = hgt / 2 - (b.y + b.h / 2) * this.k;
      this.applyTransform();
    }
  }

  collapseFocused() {
    const id = this.focused;
    if (!id) return;
    const c = this.h.isContainer(id) && this.expanded.has(id) ? id : this.h.parent.get(id);
    if (!c || c === ROOT) return;
    this.showGroup(c);
    this.toggle(c).then(() => this.focusItem(c));
  }

  // ----------------------------------------------------------------- breadcrumb
  renderCrumbs() {
    const box = this.crumbs;
    while (box.firstChild) box.removeChild(box.firstChild);
    const id = this.focused || this.selected;
    const path = [ROOT];
    if (id && this.h.item.has(id)) {
      path.push(...this.h.containersOf(id));
      if (this.h.isContainer(id) && id !== ROOT) path.push(id);
    }
    path.forEach((c, i) => {
      if (i) box.appendChild(el("span", "jsg-crumb-sep", "\u203a"));
      const a = el("a", "jsg-crumb", c === ROOT ? (this.g.title || "graph") : this.h.item.get(c).label);
      a.href = "#";
      a.dataset.id = c;
      a.addEventListener("click", (ev) => {
        ev.preventDefault();
        if (c === ROOT) { this.fit(); return; }
        this.showGroup(c);
        this.centreOn(c, true);
      });
      box.appendChild(a);
    });
  }

  // -------------------------------------------------------------- highlighting
  // `entries`: [leaf indices, class]; later entries win, the selection always does.
  setMarks(entries, io) {
    this.marks = new Map();
    for (const [leaves, cls] of entries) {
      for (const i of leaves) {
        const r = this.rep(i);
        if (this.marks.get(r) === "jsg-selected") continue;
        this.marks.set(r, cls);
      }
    }
    this.io = new Map();
    for (const [leaves, cls] of io || []) for (const i of leaves) this.io.set(this.rep(i), cls);
    this.applyMarks();
  }

  markOf(id) {
    if (id[0] === "x") return this.marks.get(this.rep(this.h.item.get(id).of));
    return this.marks.get(id);
  }

  applyMarks() {
    for (const [id, e] of this.elements) {
      e.classList.remove("jsg-selected", "jsg-up", "jsg-down", "jsg-match", "jsg-line", "jsg-producer", "jsg-consumer", "jsg-current");
      const cls = this.markOf(id);
      if (cls) e.classList.add(cls);
      const io = id[0] === "x" ? null : this.io.get(id);
      if (io) e.classList.add(io);
    }
    const cur = this.current >= 0 && this.results[this.current];
    if (cur !== undefined && cur !== false) {
      const e = this.elements.get(this.rep(cur));
      if (e) e.classList.add("jsg-current", "jsg-selected");
    }
    for (const p of this.viewport.querySelectorAll(".jsg-edge")) {
      const a = this.markOf(p.dataset.a), b = this.markOf(p.dataset.b);
      const on = (a === "jsg-up" || a === "jsg-selected") && (b === "jsg-up" || b === "jsg-selected")
        ? "jsg-edge-up"
        : (a === "jsg-down" || a === "jsg-selected") && (b === "jsg-down" || b === "jsg-selected")
          ? "jsg-edge-down" : null;
      p.classList.remove("jsg-edge-up", "jsg-edge-down");
      if (on && a !== b) p.classList.add(on);
    }
    for (const e of this.viewport.querySelectorAll(".jsg-focus")) e.classList.remove("jsg-focus");
    const f = this.focused && this.elements.get(this.focused);
    if (f) f.classList.add("jsg-focus");
    this.root.dataset.marked = String(this.marks.size);
  }

  // Marks what the node reads from (upstream, producers in bold) and feeds (downstream,
  // consumers in bold), and shows it in the panel.
  select(id) {
    const n = this.h.item.get(id);
    this.selected = id;
    const up = this.h.reach(n.index, this.h.inn);
    const down = this.h.reach(n.index, this.h.out);
    const producers = [...new Set(this.h.inn[n.index])], consumers = [...new Set(this.h.out[n.index])];
    this.setMarks([[up, "jsg-up"], [down, "jsg-down"], [[n.index], "jsg-selected"]],
      [[producers, "jsg-producer"], [consumers, "jsg-consumer"]]);
    this.showNode(n, up.size, down.size, producers, consumers);
    this.renderCrumbs();
    this.onSelect(n.index);
  }

  highlightLine(file, line) {
    const leaves = [];
    for (const n of this.g.nodes) if (n.source && n.source.file === file && n.source.line === line) leaves.push(n.index);
    this.setMarks([[leaves, "jsg-line"]]);
    this.count.textContent = `${leaves.length} node${leaves.length === 1 ? "" : "s"} from ${file}:${line}`;
    return leaves.length;
  }

  // ---------------------------------------------------------------------- panel
  clearPanel() {
    while (this.panel.firstChild) this.panel.removeChild(this.panel.firstChild);
  }

  table(title, rows, cls) {
    const box = el("div", "jsg-section " + (cls || ""));
    box.appendChild(el("div", "jsg-section-title", title));
    if (!rows.length) { box.appendChild(el("div", "jsg-empty", "none")); return box; }
    const t = el("table", "jsg-table");
    for (const [a, b] of rows) {
      const tr = el("tr");
      tr.append(el("td", "jsg-k", a), el("td", "jsg-v", b));
      t.appendChild(tr);
    }
    box.appendChild(t);
    return box;
  }

  sourceSection(source) {
    const box = el("div", "jsg-section jsg-source");
    box.appendChild(el("div", "jsg-section-title", "source"));
    if (!source) { box.appendChild(el("div", "jsg-empty", "unknown")); return box; }
    const link = el("a", "jsg-line-link", `${source.file}:${source.line}` + (source.fn ? ` (${source.fn})` : ""));
    link.href = "#";
    link.title = "highlight every node from this line";
    link.addEventListener("click", (ev) => { ev.preventDefault(); this.highlightLine(source.file, source.line); });
    box.appendChild(link);
    const lines = this.g.sources[source.file];
    if (lines) {
      const pre = el("pre", "jsg-snippet");
      for (let l = source.line - 3; l <= source.line + 3; l++) {
        const text = lines[String(l)];
        if (text === undefined) continue;
        const row = el("div", l === source.line ? "jsg-src-row jsg-src-current" : "jsg-src-row");
        row.append(el("span", "jsg-lineno", String(l).padStart(4, " ") + "  "), document.createTextNode(text));
        row.addEventListener("click", () => this.highlightLine(source.file, l));
        pre.appendChild(row);
      }
      box.appendChild(pre);
    }
    return box;
  }

  linesSection(leaves) {
    const counts = new Map();
    for (const i of leaves) {
      const s = this.g.nodes[i].source;
      if (!s) continue;
      const key = s.file + "\u0000" + s.line;
      counts.set(key, (counts.get(key) || 0) + 1);
    }
    const box = el("div", "jsg-section jsg-lines");
    box.appendChild(el("div", "jsg-section-title", "source lines"));
    const list = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 30);
    for (const [key, n] of list) {
      const [file, line] = key.split("\u0000");
      const a = el("a", "jsg-line-link", `${file}:${line}  (${n})`);
      a.href = "#";
      a.addEventListener("click", (ev) => { ev.preventDefault(); this.highlightLine(file, Number(line)); });
      box.appendChild(a);
    }
    if (!list.length) box.appendChild(el("div", "jsg-empty", "unknown"));
    return box;
  }

  neighbours(title, list, cls) {
    const box = el("div", "jsg-section " + cls);
    box.appendChild(el("div", "jsg-section-title", `${title} (${list.length})`));
    for (const i of list.slice(0, 30)) {
      const m = this.g.nodes[i];
      const a = el("a", "jsg-result", `${m.label}  ${m.outputs.map((o) => o[0]).join(" ")}` + (m.source ? `  line ${m.source.line}` : ""));
      a.href = "#";
      a.addEventListener("click", (ev) => { ev.preventDefault(); this.goTo(m.id); });
      box.appendChild(a);
    }
    if (list.length > 30) box.appendChild(el("div", "jsg-empty", `\u2026 ${list.length - 30} more`));
    return box;
  }

  showNode(n, nUp, nDown, producers, consumers) {
    this.clearPanel();
    this.panel.appendChild(el("div", "jsg-panel-title", n.kind === "eqn" ? n.primitive : `${n.kind} ${n.label}`));
    if (n.scope) this.panel.appendChild(el("div", "jsg-scope", n.scope));
    this.panel.appendChild(el("div", "jsg-reach", `${nUp} upstream \u00b7 ${nDown} downstream`));
    this.panel.appendChild(this.table("inputs", n.inputs, "jsg-inputs"));
    this.panel.appendChild(this.table("outputs", n.outputs, "jsg-outputs"));
    if (producers && producers.length) this.panel.appendChild(this.neighbours("producers", producers, "jsg-producers"));
    if (consumers && consumers.length) this.panel.appendChild(this.neighbours("consumers", consumers, "jsg-consumers"));
    if (n.kind === "eqn") this.panel.appendChild(this.table("params", n.params, "jsg-params"));
    this.panel.appendChild(this.sourceSection(n.source));
  }

  leavesOf(id) {
    const out = [];
    const walk = (c) => {
      for (const k of this.h.children.get(c) || []) {
        if (this.h.isContainer(k)) walk(k); else out.push(this.h.item.get(k).index);
      }
    };
    walk(id);
    return out;
  }

  showGroup(id) {
    const it = this.h.item.get(id);
    this.clearPanel();
    this.panel.appendChild(el("div", "jsg-panel-title", it.label));
    this.panel.appendChild(el("div", "jsg-reach", `${it.kind} \u00b7 ${it.size} nodes`));
    if (it.inputs) this.panel.appendChild(this.table("inputs", it.inputs, "jsg-inputs"));
    if (it.outputs) this.panel.appendChild(this.table("outputs", it.outputs, "jsg-outputs"));
    if (it.params && it.params.length) this.panel.appendChild(this.table("params", it.params, "jsg-params"));
    if (it.source !== undefined) this.panel.appendChild(this.sourceSection(it.source));
    this.panel.appendChild(this.linesSection(this.leavesOf(id)));
  }

  // --------------------------------------------------------------------- search
  matches(query) {
    const q = query.trim().toLowerCase();
    if (!q) return [];
    // "%e": variable e only; "12": source line 12; otherwise primitive, label,
    // exact variable name, function or file:line.
    const digits = /^\d+$/.test(q);
    const varOnly = q[0] === "%" ? q.slice(1) : null;
    const out = [];
    for (const n of this.g.nodes) {
      const s = n.source;
      let hit = false;
      if (varOnly !== null) hit = n.inputs.some((p) => p[0].toLowerCase() === varOnly) || n.outputs.some((p) => p[0].toLowerCase() === varOnly);
      else if (digits) hit = !!s && String(s.line) === q;
      else {
        hit = n.label.toLowerCase().includes(q) || n.primitive.toLowerCase().includes(q) ||
          n.inputs.some((p) => p[0].toLowerCase() === q) || n.outputs.some((p) => p[0].toLowerCase() === q) ||
          (!!s && (`${s.file}:${s.line}`.toLowerCase().includes(q) || (s.fn && s.fn.toLowerCase() === q)));
      }
      if (hit) out.push(n.index);
    }
    return out;
  }

  runSearch(query) {
    const found = this.matches(query);
    this.results = found;
    this.current = -1;
    this.lastQuery = query;
    if (!query.trim()) {
      this.marks.clear(); this.applyMarks(); this.count.textContent = ""; return found;
    }
    this.setMarks([[found, "jsg-match"]]);
    this.count.textContent = `${found.length} match${found.length === 1 ? "" : "es"}`;
    this.clearPanel();
    this.panel.appendChild(el("div", "jsg-panel-title", `search: ${query}`));
    const list = el("div", "jsg-results");
    found.slice(0, MAX_RESULTS).forEach((i, k) => {
      const n = this.g.nodes[i];
      const a = el("a", "jsg-result", `${n.label}  ${n.outputs.map((o) => o[0] + ":" + o[1]).join(" ")}` +
        (n.source ? `  ${n.source.file}:${n.source.line}` : ""));
      a.href = "#";
      a.addEventListener("click", (ev) => { ev.preventDefault(); this.showResult(k); });
      list.appendChild(a);
    });
    if (found.length > MAX_RESULTS) list.appendChild(el("div", "jsg-empty", `\u2026 ${found.length - MAX_RESULTS} more (next/previous reach them)`));
    this.resultList = list;
    this.panel.appendChild(list);
    return found;
  }

  // Next (+1) or previous (-1) search result, wrapping around.
  step(d) {
    if (!this.results.length) return Promise.resolve();
    const n = this.results.length;
    return this.showResult(((this.current < 0 && d < 0 ? 0 : this.current + d) % n + n) % n);
  }

  showResult(k) {
    this.current = k;
    const n = this.results.length;
    this.count.textContent = `${k + 1} of ${n} match${n === 1 ? "" : "es"}`;
    const index = this.results[k];
    const done = this.goTo("n" + index, { keepPanel: true });
    if (this.resultList && this.resultList.isConnected) {
      [...this.resultList.children].forEach((a, j) => a.classList.toggle("jsg-result-current", j === k));
    }
    return done;
  }

  // Open the groups holding a node, select it (marks, panel) and centre on it.
  goTo(id, opts) {
    const keepPanel = opts && opts.keepPanel;
    const show = () => {
      this.focused = id;
      if (keepPanel) {
        // a search result: the matches stay marked and listed, the current one selected
        const n = this.h.item.get(id);
        this.selected = id;
        this.setMarks([[this.results, "jsg-match"]],
          [[this.h.inn[n.index], "jsg-producer"], [this.h.out[n.index], "jsg-consumer"]]);
        this.onSelect(n.index);
      } else {
        this.select(id);
      }
      this.centreOn(id, false);
      if (this.k < 0.6) { this.zoomBy(0.8 / this.k, ...this.screenCentre()); }
      this.renderCrumbs();
    };
    if (this.reveal(id)) return this.update(show);
    show();
    return Promise.resolve();
  }

  screenCentre() {
    return [(this.canvas.clientWidth || 800) / 2, (this.canvas.clientHeight || 480) / 2];
  }

  absolute(id) {
    if (this.boxes && this.boxes.has(id)) return this.boxes.get(id);
    const chain = [...this.h.containersOf(id)];
    let ox = 0, oy = 0, c = ROOT;
    for (const next of [...chain, id]) {
      const lay = this.layouts.get(c);
      const p = lay && lay.pos.get(next);
      if (!p) return null;
      if (next === id) return { x: ox + p.x, y: oy + p.y, w: p.w, h: p.h };
      ox += p.x; oy += p.y; c = next;
    }
    return null;
  }

  // ------------------------------------------------------------------- test hooks
  // Actions return a promise resolved once the view is drawn.
  api() {
    return {
      expand: (id) => (this.expanded.has(id) ? Promise.resolve() : this.toggle(id)),
      collapse: (id) => (this.expanded.has(id) ? this.toggle(id) : Promise.resolve()),
      search: (q) => this.runSearch(q).length,
      step: (d) => this.step(d),
      select: (i) => this.goTo("n" + i),
      highlightLine: (f, l) => this.highlightLine(f, l),
      groups: () => this.g.groups.map((g) => ({ id: g.id, label: g.label, size: g.size, kind: g.kind })),
      visible: () => Number(this.root.dataset.visible),
      focus: (id) => this.focusItem(id),
      view: () => ({ k: this.k, tx: this.tx, ty: this.ty, minK: this.minK }),
      box: (id) => this.absolute(id),
      ready: () => this.ready,
      layoutInWorker: () => !!this.engine.worker,
    };
  }

  close() {
    this.engine.close();
  }
}

let uid = 0;

function cssKind(kind) {
  return /^[a-z_0-9]+$/i.test(kind) ? kind : "other";
}

// ----------------------------------------------------------------------- entries

function mount(el, data, opts) {
  const viewer = new GraphViewer(el, data, opts);
  el.__jaxscopeGraph = viewer.api();
  return viewer;
}

/** Mount the viewer without a widget manager (the static HTML output). */
export function mountStatic(el, data, opts) {
  try {
    return mount(el, data, opts || {});
  } catch (err) {
    el.appendChild(document.createTextNode("jaxscope graph viewer failed: " + err));
    throw err;
  }
}

function render({ model, el }) {
  let viewer = null;
  const draw = () => {
    while (el.firstChild) el.removeChild(el.firstChild);
    if (viewer) viewer.close();
    viewer = mount(el, model.get("graph") || {}, {
      height: model.get("height") || 520,
      onSelect: (i) => { model.set("selected", i); model.save_changes(); },
    });
  };
  draw();
  model.on("change:graph", draw);
  return () => {
    model.off && model.off("change:graph", draw);
    if (viewer) viewer.close();
    viewer = null;
  };
}

export default { render };
