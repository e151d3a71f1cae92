// The viewer's toolbar: title, search box, result and zoom buttons, status, counts.
// Returns its elements; the viewer wires them.

import { el } from "./dom.js";

function button(cls, text, title) {
  const b = el("button", "jsg-btn " + cls, text);
  if (title) b.title = title;
  return b;
}

/** @param g the decoded payload (for the title and the counts) */
export function toolbar(g) {
  const bar = el("div", "jsg-toolbar");
  const title = el("span", "jsg-title", g.title ? `graph of ${g.title}` : "graph");
  const search = el("input", "jsg-search");
  search.type = "search";
  search.placeholder = "search: group, primitive, %var, source, file:line, line";
  search.setAttribute("aria-label", "search the graph");
  const t = {
    bar,
    search,
    prev: button("jsg-prev", "\u2039", "previous result (Shift+Enter)"),
    next: button("jsg-next", "\u203a", "next result (Enter)"),
    count: el("span", "jsg-count", ""),
    zoomIn: button("jsg-zoom-in", "+", "zoom in"),
    zoomOut: button("jsg-zoom-out", "\u2212", "zoom out"),
    fit: button("jsg-fit", "fit", "fit the whole graph"),
    collapse: button("jsg-collapse", "collapse all"),
    clear: button("jsg-clear", "clear"),
    full: button("jsg-full-btn", "full", "full window (f; Esc leaves)"),
    busy: el("span", "jsg-busy", ""),
  };
  const stats = el("span", "jsg-stats",
    `${g.nodes.length} nodes \u00b7 ${g.edges.length} edges \u00b7 ${g.groups.length} groups`);
  bar.append(title, search, t.prev, t.next, t.count, t.zoomIn, t.zoomOut, t.fit, t.collapse, t.clear,
    t.full, t.busy, stats);
  return t;
}
