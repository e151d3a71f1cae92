// The graph view: toolbar, breadcrumbs, the SVG drawing of what is expanded, keyboard
// moves, highlighting of what a node reads and feeds, and the hooks the browser tests
// drive. The model is hierarchy.js; pan and zoom, search and the side panel have their
// own modules. Layout: dagre (layout.js) run lazily per expanded container, in a Web
// Worker when large (engine.js), cached until a descendant is expanded or collapsed.

import { ROOT, checkFormat, decode, decodeSteps } from "./decode.js";
import { clip, cssKind, el, svg, svgText } from "./dom.js";
import { LayoutEngine } from "./engine.js";
import { Hierarchy, defaultExpansion } from "./hierarchy.js";
import { layoutGraph } from "./layout.js";
import { DetailPanel } from "./panel.js";
import { goToSource } from "./goto.js";
import { PanZoom, installResize } from "./panzoom.js";
import { SEARCHED, resultList, search, stepIndex, suggest } from "./search.js";
import { nextTask, runSliced, SLICE_MS } from "./slice.js";
import { toolbar } from "./toolbar.js";

// Layouts of at most this many nodes + edges run inline (a few ms: less than a post).
const INLINE_MAX = 120;
const MIN_HEIGHT = 200;
// Groups (never artificial boxes: inputs, outputs, runs, series, layers) start
// expanded, those adding fewest items first, while the first view shows at most
// VISIBLE_BUDGET items and stays readable: at FIRST_ZOOM_MIN (text of 9 px and more)
// it fits in PAN_SCREENS canvases of the largest height (panning shows the rest).
const VISIBLE_BUDGET = 60;
export const FIRST_ZOOM_MIN = 0.9;
const PAN_SCREENS = [1.5, 2.5];
// The first view's height follows the graph, between MIN_HEIGHT and this.
const MAX_HEIGHT = 760;
const PAD = 10;
const HEADER = 22;
// Graphs of more nodes are decoded and grouped after the frame shows, in slices of
// SLICE_MS (slice.js): no main-thread task of the first view runs long, at any size.
const STAGED_MIN = 2000;

// What the frame shows of a payload before it is decoded: its title and counts.
function summary(data) {
  const n = (list) => ({ length: (list || []).length });
  return { title: data.title || "", nodes: n(data.nodes), groups: n(data.groups),
    edges: { length: Math.floor((data.edges || []).length / 4) }, sources: {} };
}

// Tells apart the arrow markers of several viewers on one page.
let uid = 0;

export class GraphViewer {
  constructor(host, data, opts) {
    this.opts = opts || {};
    this.onSelect = this.opts.onSelect || (() => {});
    this.host = host;
    checkFormat(data);
    // The frame needs only the title and the counts; a large graph is decoded and
    // grouped after it shows (start).
    const staged = (data.nodes || []).length > STAGED_MIN;
    this.g = staged ? summary(data) : decode(data);
    this.h = null; // the grouping model, made once the frame shows (start)
    this.engine = this.opts.engine || new LayoutEngine();
    this.engine.inlineMax = this.opts.inlineMax ?? INLINE_MAX;
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
    this.build();
    this.ready = this.start(data, staged);
  }

  // The frame (toolbar, an empty canvas) shows first; a large graph is decoded and
  // grouped in slices (tasks of at most SLICE_MS), its first layouts run in the worker,
  // so the page stays live however large the graph.
  async start(data, staged) {
    if (staged) {
      this.setBusy(true, "reading the graph\u2026");
      const ms = this.opts.sliceMs ?? SLICE_MS;
      this.g = await runSliced(decodeSteps(data), ms);
      this.panel.g = this.g;
      const h = new Hierarchy(this.g, { ...this.opts, deferred: true });
      await runSliced(h.build(), ms);
      this.h = h;
      await nextTask(); // the first view's layouts in a task of their own
    } else {
      this.h = new Hierarchy(this.g, this.opts);
    }
    this.opened = this.defaultExpansion();
    return this.firstView();
  }

  // Open groups (see `defaultExpansion` in hierarchy.js) while the view stays under
  // VISIBLE_BUDGET items. Returns what opened together, in that order.
  defaultExpansion() {
    const opened = defaultExpansion(this.h, VISIBLE_BUDGET);
    for (const ids of opened) for (const id of ids) this.expanded.add(id);
    return opened;
  }

  // The first view: laid out, then groups closed again (last opened first) while it
  // would be unreadable; drawn at the zoom that fits, never below FIRST_ZOOM_MIN, its
  // height following the graph.
  async firstView() {
    const gen = ++this.gen;
    try {
      for (;;) {
        const pending = this.prepare(gen, true);
        if (pending) this.setBusy(true);
        if (pending && !(await pending)) return;
        if (this.missing().length) continue;
        const lay = this.layouts.get(ROOT);
        if (!this.opened.length || this.readable(lay.w, lay.h)) break;
        for (const id of this.opened.pop()) {
          this.expanded.delete(id);
          this.invalidate(id);
        }
        await nextTask();
        if (gen !== this.gen) return;
      }
    } catch (err) {
      this.fail(err);
      return;
    }
    if (gen !== this.gen) return;
    this.setBusy(false);
    this.render();
    this.firstFit();
  }

  // Canvas width, and its height at the largest height the view takes by itself.
  canvasLimits() {
    const [w] = this.pz.size();
    const chrome = this.root.clientHeight - this.canvas.clientHeight;
    const limit = Math.max(this.opts.height || 520, MAX_HEIGHT);
    return [w, limit - (chrome > 0 && chrome < limit ? chrome : 70)];
  }

  readable(lw, lh) {
    const [w, hgt] = this.canvasLimits();
    return lw * FIRST_ZOOM_MIN <= (w - 20) * PAN_SCREENS[0] && lh * FIRST_ZOOM_MIN <= (hgt - 20) * PAN_SCREENS[1];
  }

  // The view's height follows the drawing (up to its limit); the zoom fits it, but no
  // further out than FIRST_ZOOM_MIN: the top of a larger graph shows, pan for the rest.
  firstFit() {
    const lay = this.layouts.get(ROOT);
    if (!lay) return;
    const [w, maxCanvas] = this.canvasLimits();
    const k = Math.max(FIRST_ZOOM_MIN, Math.min(1.2, (w - 20) / lay.w));
    const chrome = this.root.clientHeight - this.canvas.clientHeight;
    if (chrome > 0 && !this.opts.fixedHeight) {
      const canvas = Math.max(MIN_HEIGHT - chrome, Math.min(maxCanvas, Math.ceil(lay.h * k + 24)));
      this.root.style.height = canvas + chrome + "px";
    }
    this.pz.fitAtLeast(lay.w, lay.h, FIRST_ZOOM_MIN);
    this.root.dataset.firstZoom = String(this.pz.k);
  }

  // -------------------------------------------------------------------- DOM skeleton
  build() {
    const root = el("div", "jaxscope-graph");
    root.style.height = (this.opts.height || 520) + "px";
    root.tabIndex = 0;
    root.setAttribute("role", "application");
    root.setAttribute("aria-label", "dataflow graph: arrows move between nodes, Enter expands, Escape collapses, f full window");
    const bar = toolbar(this.g);
    this.search = bar.search;
    this.count = bar.count;
    this.busy = bar.busy;
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
    const panel = el("div", "jsg-panel");
    panel.appendChild(el("div", "jsg-hint",
      "Click a node for its primitive, shapes, params and source line; click a group to expand or collapse it. " +
      "Drag to pan, wheel to zoom. Keys: arrows move, Enter expands, Esc collapses, f full window."));
    main.append(this.canvas, panel);
    const grip = el("div", "jsg-resize");
    grip.title = "drag to resize";
    root.append(bar.bar, this.crumbs, main, grip);
    this.host.appendChild(root);
    this.root = root;
    this.pz = new PanZoom(this.svg, this.viewport, this.canvas);
    this.panel = new DetailPanel(panel, this.g, {
      highlightLine: (file, line) => this.highlightLine(file, line),
      goToSource: (file, line) => this.goToSource(file, line),
      goTo: (id) => this.goTo(id),
    });
    this.renderCrumbs();

    bar.fit.addEventListener("click", () => this.fit());
    bar.zoomIn.addEventListener("click", () => this.pz.zoomBy(1.25));
    bar.zoomOut.addEventListener("click", () => this.pz.zoomBy(0.8));
    bar.full.addEventListener("click", () => this.setFull(!root.classList.contains("jsg-full")));
    bar.collapse.addEventListener("click", () => {
      this.expanded = new Set([ROOT]);
      this.layouts.clear();
      this.update(() => this.fit());
    });
    bar.clear.addEventListener("click", () => {
      this.search.value = "";
      this.selected = null;
      this.marks.clear();
      this.io.clear();
      this.results = [];
      this.lastQuery = null;
      this.count.textContent = "";
      this.render();
    });
    bar.prev.addEventListener("click", () => this.step(-1));
    bar.next.addEventListener("click", () => this.step(1));
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
    this.pz.install();
    installResize(root, grip, MIN_HEIGHT);
  }

  setFull(on) {
    this.root.classList.toggle("jsg-full", on);
    this.root.focus();
    requestAnimationFrame(() => this.fit());
  }

  // The whole graph, however small that makes it (zoom in from there).
  fit() {
    const lay = this.layouts.get(ROOT);
    if (lay) this.pz.fit(lay.w, lay.h);
  }

  centreOn(id, zoomToFit) {
    const box = this.absolute(id);
    if (box) this.pz.centreOn(box, zoomToFit);
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

  // A level of a few boxes, several of them open (a forward pass, its backward pass, an
  // update) may read better side by side: of top-down and left-right, the layout that
  // fits the canvas at the larger zoom.
  mayTurn(c) {
    const kids = this.h.members(c);
    return kids.length <= 12 && kids.filter((id) => this.expanded.has(id) && this.h.isContainer(id)).length >= 2;
  }

  better(down, across) {
    const [w, hgt] = this.canvasLimits();
    const zoom = (o) => Math.min(w / (o.w + 40), hgt / (o.h + 40));
    return zoom(across) > zoom(down) * 1.2 ? across : down;
  }

  oriented(c, input) {
    const down = layoutGraph(input);
    return this.mayTurn(c) ? this.better(down, layoutGraph({ ...input, rankdir: "LR" })) : down;
  }

  async orientedAsync(c, input) {
    const down = await this.engine.run(input);
    if (!this.mayTurn(c)) return down;
    return this.better(down, await this.engine.run({ ...input, rankdir: "LR" }));
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
  // promise of whether it finished (false: a newer update took over). `sliced` (the
  // first view): inline layouts yield to the page every SLICE_MS.
  prepare(gen, sliced) {
    const todo = this.missing();
    let start = performance.now();
    const spent = () => sliced && performance.now() - start > SLICE_MS;
    let i = 0;
    for (; i < todo.length; i++) {
      const input = this.layoutInput(todo[i]);
      if (!this.engine.inline(input) || spent()) break;
      this.store(todo[i], input, this.oriented(todo[i], input));
    }
    if (i === todo.length) return null;
    return (async () => {
      for (; i < todo.length; i++) {
        const c = todo[i];
        if (this.layouts.has(c)) continue;
        if (spent()) {
          await nextTask();
          start = performance.now();
        }
        const epoch = this.epochs.get(c) || 0;
        const input = this.layoutInput(c);
        const out = await this.orientedAsync(c, input);
        if (gen !== this.gen) return false;
        if ((this.epochs.get(c) || 0) === epoch) this.store(c, input, out);
      }
      return gen === this.gen;
    })();
  }

  // Lay out (off the main thread when large), draw, then `after`. Resolves once drawn.
  update(after) {
    if (!this.h) return this.ready.then(() => this.update(after));
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

  setBusy(on, what) {
    if (on) this.root.dataset.busy = "1"; else delete this.root.dataset.busy;
    this.busy.textContent = on ? what || "laying out\u2026" : "";
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
    this.pz.apply();
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
      if (this.pz.suppressClick) return;
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
    tip.appendChild(document.createTextNode(`${it.label} (shared: used in ${this.h.fanout(it.of)} groups); click to select it`));
    g.appendChild(tip);
    g.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (this.pz.suppressClick) return;
      this.goTo("n" + it.of);
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
      if (this.pz.suppressClick) return;
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
      if (this.pz.suppressClick) return;
      this.showGroup(id);
      this.toggle(id);
    });
    g.appendChild(head);
    layer.appendChild(g);
    this.elements.set(id, g);
  }

  // ------------------------------------------------------------------- keyboard
  onKey(ev) {
    if (ev.target === this.search || !this.h || !this.boxes) return;
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
    const box = this.boxes.get(id);
    if (box) this.pz.keepInView(box);
    this.renderCrumbs();
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
  // The visible item standing for a leaf index or an item id.
  repOf(x) {
    if (typeof x === "number") return this.rep(x);
    if (x[0] === "n") return this.rep(this.h.item.get(x).index);
    for (const c of this.h.containersOf(x)) if (!this.expanded.has(c)) return c;
    return x;
  }

  // `entries`: [leaf indices or item ids, class]; later entries win, the selection
  // always does.
  setMarks(entries, io) {
    this.marks = new Map();
    for (const [leaves, cls] of entries) {
      for (const i of leaves) {
        const r = this.repOf(i);
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
      const e = this.elements.get(this.repOf(cur));
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
    this.panel.showNode(n, up.size, down.size, producers, consumers);
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

  // Jump to the cell or file of a source line (goto.js), its nodes highlighted.
  goToSource(file, line) {
    this.highlightLine(file, line);
    const done = goToSource(this.root, file, line);
    this.count.textContent = done.text;
    if (done.copy) this.panel.showCopy(done.copy);
    return done.text;
  }

  // ---------------------------------------------------------------------- panel
  showGroup(id) {
    this.panel.showGroup(this.h.item.get(id), this.h.leavesOf(id));
  }

  // --------------------------------------------------------------------- search
  runSearch(query) {
    if (!this.h) return [];
    const found = search(this.g, query);
    this.results = found;
    this.current = -1;
    this.lastQuery = query;
    if (!query.trim()) {
      this.marks.clear(); this.applyMarks(); this.count.textContent = ""; return found;
    }
    this.setMarks([[found, "jsg-match"]]);
    const groups = found.filter((id) => id[0] === "g").length;
    this.count.textContent = `${found.length} match${found.length === 1 ? "" : "es"}` +
      (groups ? ` (${groups} group${groups === 1 ? "" : "s"})` : "");
    this.panel.clear();
    this.panel.add(el("div", "jsg-panel-title", `search: ${query}`));
    this.resultList = resultList(found, (id) => this.h.item.get(id), (id) => this.pathOf(id), (k) => this.showResult(k));
    this.panel.add(this.resultList);
    if (!found.length) this.noMatch(query);
    return found;
  }

  // What was searched, and terms of this graph that find something.
  noMatch(query) {
    this.panel.add(el("div", "jsg-empty jsg-no-match", `Nothing matches \u201c${query.trim()}\u201d in ${SEARCHED}.`));
    const terms = suggest(this.g, query);
    if (!terms.length) return;
    const box = el("div", "jsg-section jsg-suggest");
    box.appendChild(el("div", "jsg-section-title", "try"));
    for (const { term, count } of terms) {
      const a = el("a", "jsg-result", `${term}  (${count} match${count === 1 ? "" : "es"})`);
      a.href = "#";
      a.addEventListener("click", (ev) => {
        ev.preventDefault();
        this.search.value = term;
        this.runSearch(term);
      });
      box.appendChild(a);
    }
    this.panel.add(box);
  }

  // The labels of the groups holding an item, outermost first (artificial boxes left out).
  pathOf(id) {
    return this.h.containersOf(id).filter((c) => c[0] === "g").map((c) => this.h.item.get(c).label);
  }

  // Next (+1) or previous (-1) search result, wrapping around.
  step(d) {
    if (!this.results.length) return Promise.resolve();
    const n = this.results.length;
    return this.showResult(stepIndex(this.current, d, n));
  }

  showResult(k) {
    this.current = k;
    const n = this.results.length;
    this.count.textContent = `${k + 1} of ${n} match${n === 1 ? "" : "es"}`;
    const id = this.results[k];
    const done = id[0] === "g" ? this.goToGroup(id) : this.goTo(id, { keepPanel: true });
    if (this.resultList && this.resultList.isConnected) {
      [...this.resultList.children].forEach((a, j) => a.classList.toggle("jsg-result-current", j === k));
    }
    return done;
  }

  // Open the groups holding a group (not the group itself), mark and centre on it.
  goToGroup(id) {
    const show = () => {
      this.focused = id;
      this.selected = null;
      this.setMarks([[this.results, "jsg-match"]]);
      this.centreOn(id, false);
      if (this.pz.k < 0.6) this.pz.zoomBy(0.8 / this.pz.k, ...this.pz.screenCentre());
      this.renderCrumbs();
    };
    let changed = false;
    for (const c of this.h.containersOf(id)) {
      if (!this.expanded.has(c)) { this.expanded.add(c); this.invalidate(c); changed = true; }
    }
    if (changed) return this.update(show);
    show();
    return Promise.resolve();
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
      if (this.pz.k < 0.6) this.pz.zoomBy(0.8 / this.pz.k, ...this.pz.screenCentre());
      this.renderCrumbs();
    };
    if (this.reveal(id)) return this.update(show);
    show();
    return Promise.resolve();
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
      // the boxes holding it open too (a series, its page)
      expand: (id) => {
        const revealed = this.reveal(id);
        if (!this.expanded.has(id)) return this.toggle(id);
        return revealed ? this.update() : Promise.resolve();
      },
      collapse: (id) => (this.expanded.has(id) ? this.toggle(id) : Promise.resolve()),
      search: (q) => this.runSearch(q).length,
      results: () => this.results.map((id) => ({ id, label: this.h.item.get(id).label, path: this.pathOf(id) })),
      step: (d) => this.step(d),
      select: (i) => this.goTo("n" + i),
      highlightLine: (f, l) => this.highlightLine(f, l),
      goToSource: (f, l) => this.goToSource(f, l),
      groups: () => this.g.groups.map((g) => ({ id: g.id, label: g.label, size: g.size, kind: g.kind })),
      // the labels of the groups drawn open
      opened: () => [...this.expanded].filter((id) => id[0] === "g").map((id) => this.h.item.get(id).label),
      visible: () => Number(this.root.dataset.visible),
      focus: (id) => this.focusItem(id),
      view: () => this.pz.state(),
      box: (id) => this.absolute(id),
      ready: () => this.ready,
      layoutInWorker: () => !!this.engine.worker,
    };
  }

  close() {
    this.engine.close();
  }
}
