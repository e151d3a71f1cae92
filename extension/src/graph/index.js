// jaxscope graph viewer: an anywidget front-end (and a static mount for HTML exports).
//
// Data: the payload of jaxscope._graph.to_payload (format 1). Layout: dagre, run
// lazily per expanded container (a group, or an "artificial layer" that chunks a
// group with too many direct children, as Model Explorer does), cached until a
// descendant is expanded or collapsed. Every user string is written with
// textContent / createTextNode; nothing user-controlled reaches innerHTML.

import dagre from "@dagrejs/dagre";

const SVGNS = "http://www.w3.org/2000/svg";
const ROOT = "R";
// A container with more direct children than CHUNK_MAX is split into artificial
// layers of CHUNK_SIZE children each (program order), laid out only when opened.
const CHUNK_MAX = 150;
const CHUNK_SIZE = 100;
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
  return { title: data.title || "", groups, nodes, edges, sources: data.sources || {} };
}

// ---------------------------------------------------------------------- the model

class Hierarchy {
  constructor(g, opts) {
    this.g = g;
    this.chunkMax = opts.chunkMax || CHUNK_MAX;
    this.chunkSize = opts.chunkSize || CHUNK_SIZE;
    this.item = new Map(); // id -> node | group | chunk
    this.parent = new Map(); // item id -> container id
    this.children = new Map(); // container id -> item ids (program order)
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
    for (const [c, list] of this.children) list.sort((a, b) => order(a) - order(b));
    for (const [c, list] of [...this.children]) this.chunk(c, list);
    for (const [c, list] of this.children) for (const id of list) this.parent.set(id, c);
    // ancestors of each leaf, outermost first (root excluded)
    this.ancestors = g.nodes.map((n) => {
      const chain = [];
      let p = this.parent.get(n.id);
      while (p && p !== ROOT) {
        chain.push(p);
        p = this.parent.get(p);
      }
      return chain.reverse();
    });
    this.liftEdges();
    this.adjacency();
  }

  chunk(c, list) {
    if (list.length <= this.chunkMax) return;
    const base = this.item.get(c);
    const chunks = [];
    for (let i = 0; i < list.length; i += this.chunkSize) {
      const id = `a${c}:${i / this.chunkSize}`;
      const members = list.slice(i, i + this.chunkSize);
      let size = 0;
      for (const m of members) size += m[0] === "n" ? 1 : this.item.get(m).size;
      this.item.set(id, {
        id, kind: "chunk", label: `${base.label || "graph"} [${i + 1}\u2013${i + members.length}]`, size,
      });
      this.children.set(id, members);
      chunks.push(id);
      this.chunk(id, members);
    }
    this.children.set(c, chunks);
    if (chunks.length > this.chunkMax) this.chunk(c, chunks);
  }

  // For each container: the edges between its direct children, lifted from leaf edges.
  liftEdges() {
    this.lifted = new Map();
    const seen = new Set();
    for (const e of this.g.edges) {
      const a = this.ancestors[e.src];
      // A negative destination is a group (an operand its equation consumes itself).
      const b = e.dst >= 0 ? this.ancestors[e.dst] : [...this.containersOf("g" + (-1 - e.dst)), "g" + (-1 - e.dst)];
      let k = 0;
      while (k < a.length && k < b.length && a[k] === b[k]) k++;
      const lca = k === 0 ? ROOT : a[k - 1];
      const from = k < a.length ? a[k] : "n" + e.src;
      const to = k < b.length ? b[k] : e.dst >= 0 ? "n" + e.dst : null;
      if (to === null || from === to) continue;
      const key = from + ">" + to;
      if (seen.has(key)) continue;
      seen.add(key);
      if (!this.lifted.has(lca)) this.lifted.set(lca, []);
      this.lifted.get(lca).push({ a: from, b: to, type: e.type, var: e.var });
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

  // Containers holding the item, outermost first (root excluded).
  containersOf(id) {
    if (id[0] === "n") return this.ancestors[this.item.get(id).index];
    const chain = [];
    let p = this.parent.get(id);
    while (p && p !== ROOT) { chain.push(p); p = this.parent.get(p); }
    return chain.reverse();
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
    this.expanded = new Set([ROOT]);
    this.layouts = new Map();
    this.selected = null;
    this.marks = new Map(); // visible id -> css class
    this.k = 1; this.tx = 0; this.ty = 0;
    this.defaultExpansion();
    this.build();
    this.render();
    this.fit();
  }

  // Open small groups first (fewest leaves), while the view stays under VISIBLE_BUDGET
  // items; groups of more than AUTO_EXPAND leaves and artificial layers start closed.
  defaultExpansion() {
    const h = this.h;
    let visible = (h.children.get(ROOT) || []).length;
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
      const cost = (h.children.get(id) || []).length - 1;
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
    const bar = el("div", "jsg-toolbar");
    const title = el("span", "jsg-title", this.g.title ? `graph of ${this.g.title}` : "graph");
    this.search = el("input", "jsg-search");
    this.search.type = "search";
    this.search.placeholder = "search: primitive, %var, file:line, line";
    this.count = el("span", "jsg-count", "");
    const zoomIn = el("button", "jsg-btn jsg-zoom-in", "+");
    const zoomOut = el("button", "jsg-btn jsg-zoom-out", "\u2212");
    zoomIn.title = "zoom in"; zoomOut.title = "zoom out";
    const fit = el("button", "jsg-btn jsg-fit", "fit");
    const collapse = el("button", "jsg-btn jsg-collapse", "collapse all");
    const clear = el("button", "jsg-btn jsg-clear", "clear");
    const stats = el("span", "jsg-stats",
      `${this.g.nodes.length} nodes \u00b7 ${this.g.edges.length} edges \u00b7 ${this.g.groups.length} groups`);
    bar.append(title, this.search, this.count, zoomIn, zoomOut, fit, collapse, clear, stats);
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
      "Click a node for its primitive, shapes, params and source line; click a group to expand or collapse it. Drag to pan, wheel to zoom."));
    main.append(this.canvas, this.panel);
    root.append(bar, main);
    this.host.appendChild(root);
    this.root = root;

    fit.addEventListener("click", () => this.fit());
    zoomIn.addEventListener("click", () => this.zoomBy(1.25));
    zoomOut.addEventListener("click", () => this.zoomBy(0.8));
    collapse.addEventListener("click", () => {
      this.expanded = new Set([ROOT]);
      this.layouts.clear();
      this.render();
      this.fit();
    });
    clear.addEventListener("click", () => {
      this.search.value = "";
      this.selected = null;
      this.marks.clear();
      this.count.textContent = "";
      this.render();
    });
    let timer = null;
    this.search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.runSearch(this.search.value), 120);
    });
    this.search.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter") { clearTimeout(timer); this.runSearch(this.search.value); }
    });
    this.installPanZoom();
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

  zoomBy(f, mx, my) {
    if (mx === undefined) {
      mx = (this.canvas.clientWidth || 800) / 2;
      my = (this.canvas.clientHeight || 480) / 2;
    }
    const k = Math.min(4, Math.max(0.02, this.k * f));
    this.tx = mx - ((mx - this.tx) * k) / this.k;
    this.ty = my - ((my - this.ty) * k) / this.k;
    this.k = k;
    this.applyTransform();
  }

  applyTransform() {
    this.viewport.setAttribute("transform", `translate(${this.tx},${this.ty}) scale(${this.k})`);
  }

  fit() {
    const lay = this.layout(ROOT);
    const w = this.canvas.clientWidth || 800, hgt = this.canvas.clientHeight || 480;
    let k = Math.min(1.2, (w - 20) / lay.w, (hgt - 20) / lay.h);
    let top = false;
    if (k < 0.5) {
      // A tall graph shrunk to fit would be unreadable: fit the width, show the top.
      k = Math.min(1, Math.max(0.5, (w - 20) / lay.w));
      top = true;
    }
    k = Math.max(0.02, k);
    this.k = k;
    this.tx = (w - lay.w * k) / 2;
    this.ty = top ? 10 : Math.max(10, (hgt - lay.h * k) / 2);
    this.applyTransform();
  }

  // ---------------------------------------------------------------------- layout
  itemSize(id) {
    const h = this.h;
    if (!h.isContainer(id)) {
      const n = h.item.get(id);
      const sub = n.kind === "eqn" ? n.outputs.map((o) => o[1]).join(" ") : (n.kind === "output" ? n.inputs : n.outputs).map((o) => o[1]).join(" ");
      const chars = Math.max(clip(n.label, 28).length * 1.15, clip(sub, 32).length);
      return { w: Math.max(56, chars * 6.4 + 18), h: 34 };
    }
    if (this.expanded.has(id)) {
      const lay = this.layout(id);
      return { w: lay.w, h: lay.h };
    }
    const it = h.item.get(id);
    return { w: Math.max(90, clip(it.label, 40).length * 7 + 24), h: 40 };
  }

  layout(c) {
    const cached = this.layouts.get(c);
    if (cached) return cached;
    const h = this.h;
    const kids = h.children.get(c) || [];
    const gr = new dagre.graphlib.Graph({ multigraph: false });
    gr.setGraph({ rankdir: "TB", nodesep: 14, ranksep: 26, edgesep: 8, marginx: 0, marginy: 0 });
    gr.setDefaultEdgeLabel(() => ({}));
    const sizes = new Map();
    for (const id of kids) {
      const s = this.itemSize(id);
      sizes.set(id, s);
      gr.setNode(id, { width: s.w, height: s.h });
    }
    const edges = h.lifted.get(c) || [];
    for (const e of edges) if (sizes.has(e.a) && sizes.has(e.b)) gr.setEdge(e.a, e.b);
    if (kids.length) dagre.layout(gr);
    const pos = new Map();
    for (const id of kids) {
      const n = gr.node(id);
      const s = sizes.get(id);
      pos.set(id, { x: n.x - s.w / 2 + PAD, y: n.y - s.h / 2 + PAD + (c === ROOT ? 0 : HEADER), w: s.w, h: s.h });
    }
    const routed = [];
    for (const e of edges) {
      if (!sizes.has(e.a) || !sizes.has(e.b)) continue;
      const de = gr.edge(e.a, e.b);
      const pts = (de && de.points) || [];
      routed.push({ a: e.a, b: e.b, type: e.type, var: e.var,
        points: pts.map((p) => [p.x + PAD, p.y + PAD + (c === ROOT ? 0 : HEADER)]) });
    }
    const gw = kids.length ? gr.graph().width : 60;
    const gh = kids.length ? gr.graph().height : 10;
    const lay = { w: Math.max(gw + 2 * PAD, 120), h: gh + 2 * PAD + (c === ROOT ? 0 : HEADER), pos, edges: routed };
    this.layouts.set(c, lay);
    return lay;
  }

  invalidate(c) {
    let p = c;
    while (p) {
      this.layouts.delete(p);
      if (p === ROOT) break;
      p = this.h.parent.get(p);
    }
  }

  toggle(id) {
    if (this.expanded.has(id)) {
      this.expanded.delete(id);
    } else {
      this.expanded.add(id);
    }
    this.invalidate(id);
    this.render();
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
    const edgeLayer = svg("g", { class: "jsg-edges" });
    const frameLayer = svg("g", { class: "jsg-frames" });
    const nodeLayer = svg("g", { class: "jsg-nodes" });
    vp.append(frameLayer, edgeLayer, nodeLayer);
    let visible = 0;
    const draw = (c, ox, oy) => {
      const lay = this.layout(c);
      for (const e of lay.edges) {
        if (e.points.length < 2) continue;
        const d = "M" + e.points.map((p) => `${(p[0] + ox).toFixed(1)},${(p[1] + oy).toFixed(1)}`).join("L");
        const path = svg("path", { d, class: "jsg-edge", "marker-end": `url(#${this.arrowId})` });
        path.dataset.a = e.a; path.dataset.b = e.b;
        const tip = svg("title");
        tip.appendChild(document.createTextNode(`${e.var}: ${e.type}`));
        path.appendChild(tip);
        edgeLayer.appendChild(path);
      }
      for (const [id, p] of lay.pos) {
        const x = p.x + ox, y = p.y + oy;
        if (this.h.isContainer(id)) {
          if (this.expanded.has(id)) {
            this.drawFrame(frameLayer, id, x, y, p.w, p.h);
            draw(id, x, y);
          } else {
            this.drawGroup(nodeLayer, id, x, y, p.w, p.h);
            visible++;
          }
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
    const g = svg("g", { class: `jsg-node jsg-${n.kind}`, transform: `translate(${x},${y})` });
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
      this.select(id);
    });
    layer.appendChild(g);
    this.elements.set(id, g);
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

  // -------------------------------------------------------------- highlighting
  setMarks(entries) {
    this.marks = new Map();
    for (const [leaves, cls] of entries) {
      for (const i of leaves) {
        const r = this.rep(i);
        const prev = this.marks.get(r);
        if (prev === "jsg-selected") continue;
        this.marks.set(r, cls);
      }
    }
    this.applyMarks();
  }

  applyMarks() {
    for (const [id, e] of this.elements) {
      e.classList.remove("jsg-selected", "jsg-up", "jsg-down", "jsg-match", "jsg-line");
      const cls = this.marks.get(id);
      if (cls) e.classList.add(cls);
    }
    for (const p of this.viewport.querySelectorAll(".jsg-edge")) {
      const a = this.marks.get(p.dataset.a), b = this.marks.get(p.dataset.b);
      const on = (a === "jsg-up" || a === "jsg-selected") && (b === "jsg-up" || b === "jsg-selected")
        ? "jsg-edge-up"
        : (a === "jsg-down" || a === "jsg-selected") && (b === "jsg-down" || b === "jsg-selected")
          ? "jsg-edge-down" : null;
      p.classList.remove("jsg-edge-up", "jsg-edge-down");
      if (on && a !== b) p.classList.add(on);
    }
    this.root.dataset.marked = String(this.marks.size);
  }

  select(id) {
    const n = this.h.item.get(id);
    this.selected = id;
    const up = this.h.reach(n.index, this.h.inn);
    const down = this.h.reach(n.index, this.h.out);
    this.setMarks([[up, "jsg-up"], [down, "jsg-down"], [[n.index], "jsg-selected"]]);
    this.showNode(n, up.size, down.size);
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

  showNode(n, nUp, nDown) {
    this.clearPanel();
    this.panel.appendChild(el("div", "jsg-panel-title", n.kind === "eqn" ? n.primitive : `${n.kind} ${n.label}`));
    if (n.scope) this.panel.appendChild(el("div", "jsg-scope", n.scope));
    this.panel.appendChild(el("div", "jsg-reach", `${nUp} upstream \u00b7 ${nDown} downstream`));
    this.panel.appendChild(this.table("inputs", n.inputs, "jsg-inputs"));
    this.panel.appendChild(this.table("outputs", n.outputs, "jsg-outputs"));
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
    if (!query.trim()) {
      this.marks.clear(); this.applyMarks(); this.count.textContent = ""; return found;
    }
    this.setMarks([[found, "jsg-match"]]);
    this.count.textContent = `${found.length} match${found.length === 1 ? "" : "es"}`;
    this.clearPanel();
    this.panel.appendChild(el("div", "jsg-panel-title", `search: ${query}`));
    const list = el("div", "jsg-results");
    for (const i of found.slice(0, MAX_RESULTS)) {
      const n = this.g.nodes[i];
      const a = el("a", "jsg-result", `${n.label}  ${n.outputs.map((o) => o[0] + ":" + o[1]).join(" ")}` +
        (n.source ? `  ${n.source.file}:${n.source.line}` : ""));
      a.href = "#";
      a.addEventListener("click", (ev) => { ev.preventDefault(); this.goTo(n.id); });
      list.appendChild(a);
    }
    if (found.length > MAX_RESULTS) list.appendChild(el("div", "jsg-empty", `\u2026 ${found.length - MAX_RESULTS} more`));
    this.panel.appendChild(list);
    return found;
  }

  goTo(id) {
    if (this.reveal(id)) this.render();
    this.select(id);
    const e = this.elements.get(id);
    if (e) {
      const lay = this.absolute(id);
      if (lay) {
        const w = this.canvas.clientWidth || 800, hgt = this.canvas.clientHeight || 480;
        this.k = Math.max(this.k, 0.8);
        this.tx = w / 2 - (lay.x + lay.w / 2) * this.k;
        this.ty = hgt / 2 - (lay.y + lay.h / 2) * this.k;
        this.applyTransform();
      }
    }
  }

  absolute(id) {
    const chain = [...this.h.containersOf(id)];
    let ox = 0, oy = 0, c = ROOT;
    for (const next of [...chain, id]) {
      const p = this.layout(c).pos.get(next);
      if (!p) return null;
      if (next === id) return { x: ox + p.x, y: oy + p.y, w: p.w, h: p.h };
      ox += p.x; oy += p.y; c = next;
    }
    return null;
  }

  // ------------------------------------------------------------------- test hooks
  api() {
    return {
      expand: (id) => { if (!this.expanded.has(id)) this.toggle(id); return this.lastRenderMs; },
      collapse: (id) => { if (this.expanded.has(id)) this.toggle(id); },
      search: (q) => this.runSearch(q).length,
      select: (i) => this.goTo("n" + i),
      highlightLine: (f, l) => this.highlightLine(f, l),
      groups: () => this.g.groups.map((g) => ({ id: g.id, label: g.label, size: g.size, kind: g.kind })),
      visible: () => Number(this.root.dataset.visible),
    };
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
    viewer = mount(el, model.get("graph") || {}, {
      height: model.get("height") || 520,
      onSelect: (i) => { model.set("selected", i); model.save_changes(); },
    });
  };
  draw();
  model.on("change:graph", draw);
  return () => { model.off && model.off("change:graph", draw); viewer = null; };
}

export default { render };
