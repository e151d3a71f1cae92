// Search: what a query matches among the groups and nodes (pure, checked by node's
// test runner), ranked, the next result (wrapping around) and the list of results
// shown in the panel, each with the path of groups leading to it.

import { el } from "./dom.js";

export const MAX_RESULTS = 100;

const lower = (t) => (t || "").toLowerCase();

/** The source line's text, or "". */
function lineText(g, loc) {
  if (!loc || !g.sources) return "";
  const lines = g.sources[loc.file];
  return (lines && lines[String(loc.line)]) || "";
}

/** Per call stack of `g` (payload `stacks`), whether query `q` is in one of its
 *  frames' function or library module ("scale_by_adam", "optax"). */
function stackHits(g, q) {
  return (g.stacks || []).map((frames) => frames.some((f) => f.toLowerCase().includes(q)));
}

/**
 * How well node `n` matches query `q` (lower case): 0 no match; higher is better.
 * "%e": variable e only; "12": source line 12; otherwise label or primitive (exact 4,
 * substring 3), exact variable name (3), function, file:line, a function or library
 * module on its call stack (`hits`, from stackHits) or source text (1).
 */
function nodeRank(n, q, g, hits) {
  const s = n.source;
  if (q[0] === "%") {
    const v = q.slice(1);
    return n.inputs.some((p) => lower(p[0]) === v) || n.outputs.some((p) => lower(p[0]) === v) ? 3 : 0;
  }
  if (/^\d+$/.test(q)) return s && String(s.line) === q ? 2 : 0;
  const label = lower(n.label), prim = lower(n.primitive);
  if (label === q || prim === q) return 4;
  if (label.includes(q) || prim.includes(q)) return 3;
  if (n.inputs.some((p) => lower(p[0]) === q) || n.outputs.some((p) => lower(p[0]) === q)) return 3;
  if (s && (lower(`${s.file}:${s.line}`).includes(q) || lower(s.fn).includes(q))) return 1;
  if (hits && n.stack >= 0 && hits[n.stack]) return 1;
  if (lower(lineText(g, s)).includes(q)) return 1;
  return 0;
}

/** As nodeRank for group `grp`: its label, then kind, function, scope, source. */
function groupRank(grp, q, g) {
  if (q[0] === "%") return 0;
  const s = grp.source;
  if (/^\d+$/.test(q)) return s && String(s.line) === q ? 2 : 0;
  const label = lower(grp.label);
  if (label === q) return 4;
  if (label.includes(q)) return 3;
  if (lower(grp.function).includes(q) || lower(grp.scope).includes(q) || lower(grp.primitive) === q) return 2;
  if (s && (lower(`${s.file}:${s.line}`).includes(q) || lower(s.fn).includes(q))) return 1;
  if (grp.lines && lower(grp.lines.file).includes(q) && q.length > 3) return 1;
  if (lower(lineText(g, s)).includes(q)) return 1;
  return 0;
}

/**
 * What a query matches in decoded payload `g`: ids of groups ("g3") and nodes ("n5"),
 * better matches first (a label before a source line's text), groups before nodes
 * among equals, then program order.
 */
export function search(g, query) {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const hits = [];
  for (const grp of g.groups) {
    const r = groupRank(grp, q, g);
    if (r) hits.push([2 * r + 1, grp.index, grp.id]);
  }
  const onStack = /^(%|\d+$)/.test(q) ? null : stackHits(g, q);
  for (const n of g.nodes) {
    const r = nodeRank(n, q, g, onStack);
    if (r) hits.push([2 * r, n.index, n.id]);
  }
  hits.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  return hits.map((h) => h[2]);
}

/** The indices of the decoded nodes a query matches, in program order. */
export function matches(nodes, query, g) {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const onStack = g ? stackHits(g, q) : null;
  return nodes.filter((n) => nodeRank(n, q, g || {}, onStack)).map((n) => n.index);
}

// What a search looks at, said when it finds nothing.
export const SEARCHED =
  "group and node labels, primitives, variables (%name), source lines (a number), file:line, " +
  "the source text, and the functions and library modules on each equation's call stack";

/**
 * Terms that find something, for a query that found nothing: the longest start of
 * the query that does ("adam" for "adamw", whose optax.adamw only builds the
 * transformations the step runs), then the libraries on the call stacks ("optax").
 * Each is `{term, count}`; at most `max`.
 */
export function suggest(g, query, max = 4) {
  const q = query.trim().toLowerCase();
  const out = [];
  if (!q || q[0] === "%" || /^\d+$/.test(q)) return out;
  for (let k = q.length - 1; k >= 3; k--) {
    const n = search(g, q.slice(0, k)).length;
    if (n) { out.push({ term: q.slice(0, k), count: n }); break; }
  }
  const libraries = new Set();
  for (const frames of g.stacks || []) {
    for (const f of frames) {
      const colon = f.indexOf(":");
      if (colon > 0 && f.indexOf("/") > 0 && f.indexOf("/") < colon) libraries.add(f.slice(0, f.indexOf("/")));
    }
  }
  for (const lib of [...libraries].sort()) {
    if (out.length >= max) break;
    if (out.some((t) => t.term === lib)) continue;
    const n = search(g, lib).length;
    if (n) out.push({ term: lib, count: n });
  }
  return out;
}

/** The result after `current` (d = +1) or before it (d = -1) among n, wrapping. */
export function stepIndex(current, d, n) {
  return (((current < 0 && d < 0 ? 0 : current + d) % n) + n) % n;
}

/**
 * The clickable list of the first MAX_RESULTS results (ids); `item(id)` gives the
 * group or node, `path(id)` the labels of the groups holding it; `pick(k)` shows
 * result k.
 */
export function resultList(found, item, path, pick) {
  const list = el("div", "jsg-results");
  found.slice(0, MAX_RESULTS).forEach((id, k) => {
    const n = item(id);
    const group = id[0] === "g";
    const text = group
      ? `\u25b8 ${n.label}  (${n.size} nodes)`
      : `${n.label}  ${n.outputs.map((o) => o[0] + ":" + o[1]).join(" ")}` + (n.source ? `  ${n.source.file}:${n.source.line}` : "");
    const a = el("a", group ? "jsg-result jsg-result-group" : "jsg-result", text);
    const where = path(id);
    if (where.length) a.appendChild(el("span", "jsg-result-path", where.join(" \u203a ")));
    a.href = "#";
    a.addEventListener("click", (ev) => { ev.preventDefault(); pick(k); });
    list.appendChild(a);
  });
  if (found.length > MAX_RESULTS) list.appendChild(el("div", "jsg-empty", `\u2026 ${found.length - MAX_RESULTS} more (next/previous reach them)`));
  return list;
}
