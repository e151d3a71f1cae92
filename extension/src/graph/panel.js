// The side panel: what a selected node or group holds (inputs, outputs, params,
// producers and consumers, source lines with a snippet of the code).

import { el } from "./dom.js";
import { cellNumber } from "./goto.js";

// The most neighbours and source lines listed in one section.
const LIST_MAX = 30;

export class DetailPanel {
  /**
   * @param node the panel's element
   * @param g the decoded payload
   * @param actions {highlightLine(file, line), goToSource(file, line), goTo(id)}:
   *   what its links do
   */
  constructor(node, g, actions) {
    this.node = node;
    this.g = g;
    this.actions = actions;
  }

  clear() {
    while (this.node.firstChild) this.node.removeChild(this.node.firstChild);
  }

  add(child) {
    this.node.appendChild(child);
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
    link.addEventListener("click", (ev) => { ev.preventDefault(); this.actions.highlightLine(source.file, source.line); });
    box.appendChild(link);
    box.appendChild(this.goToLink(source.file, source.line, true));
    const lines = this.g.sources[source.file];
    if (lines) {
      const pre = el("pre", "jsg-snippet");
      for (let l = source.line - 3; l <= source.line + 3; l++) {
        const text = lines[String(l)];
        if (text === undefined) continue;
        const row = el("div", l === source.line ? "jsg-src-row jsg-src-current" : "jsg-src-row");
        row.append(el("span", "jsg-lineno", String(l).padStart(4, " ") + "  "), document.createTextNode(text));
        row.addEventListener("click", () => this.actions.highlightLine(source.file, l));
        pre.appendChild(row);
      }
      box.appendChild(pre);
    }
    return box;
  }

  // The link that jumps to the cell (In [N]) or the file of a source line.
  goToLink(file, line, long) {
    const cell = cellNumber(file) !== null;
    const text = long ? (cell ? "\u2197 go to the cell" : "\u2197 open the file") : "\u2197";
    const a = el("a", "jsg-goto", text);
    a.href = "#";
    a.title = cell ? `scroll to ${file} and select it` : `open ${file} at line ${line}`;
    a.addEventListener("click", (ev) => { ev.preventDefault(); this.actions.goToSource(file, line); });
    return a;
  }

  // "file:line" to copy, where the page cannot open the file (selected, read-only).
  showCopy(text) {
    const old = this.node.querySelector(".jsg-copy");
    if (old) old.remove();
    const box = el("input", "jsg-copy");
    box.readOnly = true;
    box.value = text;
    box.title = "copy this path";
    this.node.insertBefore(box, this.node.firstChild);
    box.focus();
    box.select();
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
    const list = [...counts].sort((a, b) => b[1] - a[1]).slice(0, LIST_MAX);
    for (const [key, n] of list) {
      const [file, line] = key.split("\u0000");
      const row = el("div", "jsg-line-row");
      const a = el("a", "jsg-line-link", `${file}:${line}  (${n})`);
      a.href = "#";
      a.title = "highlight every node from this line";
      a.addEventListener("click", (ev) => { ev.preventDefault(); this.actions.highlightLine(file, Number(line)); });
      row.append(a, this.goToLink(file, Number(line), false));
      box.appendChild(row);
    }
    if (!list.length) box.appendChild(el("div", "jsg-empty", "unknown"));
    return box;
  }

  neighbours(title, list, cls) {
    const box = el("div", "jsg-section " + cls);
    box.appendChild(el("div", "jsg-section-title", `${title} (${list.length})`));
    for (const i of list.slice(0, LIST_MAX)) {
      const m = this.g.nodes[i];
      const a = el("a", "jsg-result", `${m.label}  ${m.outputs.map((o) => o[0]).join(" ")}` + (m.source ? `  line ${m.source.line}` : ""));
      a.href = "#";
      a.addEventListener("click", (ev) => { ev.preventDefault(); this.actions.goTo(m.id); });
      box.appendChild(a);
    }
    if (list.length > LIST_MAX) box.appendChild(el("div", "jsg-empty", `\u2026 ${list.length - LIST_MAX} more`));
    return box;
  }

  showNode(n, nUp, nDown, producers, consumers) {
    this.clear();
    this.add(el("div", "jsg-panel-title", n.kind === "eqn" ? n.primitive : `${n.kind} ${n.label}`));
    if (n.scope) this.add(el("div", "jsg-scope", n.scope));
    this.add(el("div", "jsg-reach", `${nUp} upstream \u00b7 ${nDown} downstream`));
    this.add(this.table("inputs", n.inputs, "jsg-inputs"));
    this.add(this.table("outputs", n.outputs, "jsg-outputs"));
    if (producers && producers.length) this.add(this.neighbours("producers", producers, "jsg-producers"));
    if (consumers && consumers.length) this.add(this.neighbours("consumers", consumers, "jsg-consumers"));
    if (n.kind === "eqn") this.add(this.table("params", n.params, "jsg-params"));
    this.add(this.sourceSection(n.source));
    const stack = n.stack >= 0 && this.g.stacks ? this.g.stacks[n.stack] : null;
    if (stack && stack.length) {
      const box = el("div", "jsg-section jsg-stack");
      box.appendChild(el("div", "jsg-section-title", "call stack (innermost first)"));
      for (const f of stack.slice(0, LIST_MAX)) box.appendChild(el("div", "jsg-frame-fn", f));
      if (stack.length > LIST_MAX) box.appendChild(el("div", "jsg-empty", `\u2026 ${stack.length - LIST_MAX} more`));
      this.add(box);
    }
  }

  // A group or an artificial layer: what crosses its boundary (the values it reads
  // and those read outside it, with their types), what it holds (equations, an
  // estimate of floating-point operations), its source and the source lines inside.
  showGroup(it, leaves) {
    this.clear();
    this.add(el("div", "jsg-panel-title", it.label));
    const facts = groupFacts(this.g, leaves, it);
    const flops = facts.flops ? ` \u00b7 \u2248${formatCount(facts.flops)} flops` : "";
    this.add(el("div", "jsg-reach", `${it.kind} \u00b7 ${it.size} nodes \u00b7 ${facts.eqns} equations${flops}`));
    if (it.scope) this.add(el("div", "jsg-scope", it.scope));
    this.add(this.table(`inputs (${facts.inputs.length})`, facts.inputs.slice(0, LIST_MAX), "jsg-inputs"));
    this.add(this.table(`outputs (${facts.outputs.length})`, facts.outputs.slice(0, LIST_MAX), "jsg-outputs"));
    if (it.params && it.params.length) this.add(this.table("params", it.params, "jsg-params"));
    if (it.source !== undefined && it.source !== null) this.add(this.sourceSection(it.source));
    this.add(this.linesSection(leaves));
  }
}

/** 1234567 -> "1.2M". */
export function formatCount(n) {
  for (const [v, s] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]]) if (n >= v) return (n / v).toFixed(1).replace(/\.0$/, "") + s;
  return String(n);
}

const dims = (type) => {
  const m = /\[([\d,\s]*)\]/.exec(type || "");
  return m ? m[1].split(",").filter((x) => x.trim()).map(Number) : [];
};
const count = (type) => dims(type).reduce((a, b) => a * b, 1);

/** An equation's floating-point operations: dot_general's 2·out·contracted, else
 *  one per output element of a float result (an estimate), 0 for non-floats. */
export function flopsOf(n) {
  if (n.kind !== "eqn" || !n.outputs.length) return 0;
  const out = n.outputs[0][1];
  if (!/^(f|bf|c)\d/.test(out)) return 0;
  if (n.primitive === "dot_general" && n.inputs.length) {
    const p = n.params.find((x) => x[0] === "dimension_numbers");
    const m = p && /^\(\(\(([\d,\s]*)\)/.exec(p[1]);
    const lhs = dims(n.inputs[0][1]);
    const k = m ? m[1].split(",").filter((x) => x.trim()).reduce((a, i) => a * (lhs[Number(i)] || 1), 1) : 1;
    return 2 * count(out) * k;
  }
  return n.outputs.reduce((a, o) => a + count(o[1]), 0);
}

/**
 * What crosses a group's boundary, from the leaf edges: `inputs` the values made
 * outside and read inside, `outputs` those made inside and read outside (each
 * [variable, type], once); `eqns` the equations inside; `flops` their estimate.
 */
export function groupFacts(g, leaves, it) {
  const inside = new Set(leaves);
  const self = it && it.id && it.id[0] === "g" ? -1 - it.index : null;
  const ins = new Map(), outs = new Map();
  for (const e of g.edges) {
    const a = inside.has(e.src), b = e.dst >= 0 ? inside.has(e.dst) : e.dst === self;
    if (!a && b) ins.set(e.var, e.type);
    else if (a && !b) outs.set(e.var, e.type);
  }
  let eqns = 0, flops = 0;
  for (const i of leaves) {
    const n = g.nodes[i];
    if (n.kind === "eqn") { eqns++; flops += flopsOf(n); }
  }
  return { inputs: [...ins], outputs: [...outs], eqns, flops };
}
