// Search: which nodes a query matches (pure, checked by node's test runner), the
// next result (wrapping around) and the list of results shown in the panel.

import { el } from "./dom.js";

export const MAX_RESULTS = 100;

/**
 * The indices of the decoded nodes a query matches, in program order.
 * "%e": variable e only; "12": source line 12; otherwise primitive, label, exact
 * variable name, function or file:line (case-insensitive).
 */
export function matches(nodes, query) {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const digits = /^\d+$/.test(q);
  const varOnly = q[0] === "%" ? q.slice(1) : null;
  const out = [];
  for (const n of nodes) {
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

/** The result after `current` (d = +1) or before it (d = -1) among n, wrapping. */
export function stepIndex(current, d, n) {
  return (((current < 0 && d < 0 ? 0 : current + d) % n) + n) % n;
}

/** The clickable list of the first MAX_RESULTS results; `pick(k)` shows result k. */
export function resultList(nodes, found, pick) {
  const list = el("div", "jsg-results");
  found.slice(0, MAX_RESULTS).forEach((i, k) => {
    const n = nodes[i];
    const a = el("a", "jsg-result", `${n.label}  ${n.outputs.map((o) => o[0] + ":" + o[1]).join(" ")}` +
      (n.source ? `  ${n.source.file}:${n.source.line}` : ""));
    a.href = "#";
    a.addEventListener("click", (ev) => { ev.preventDefault(); pick(k); });
    list.appendChild(a);
  });
  if (found.length > MAX_RESULTS) list.appendChild(el("div", "jsg-empty", `\u2026 ${found.length - MAX_RESULTS} more (next/previous reach them)`));
  return list;
}
