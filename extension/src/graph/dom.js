// DOM and SVG helpers. Every user string goes through textContent or a text node;
// nothing user-controlled reaches innerHTML.

const SVGNS = "http://www.w3.org/2000/svg";

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}

export function svgText(x, y, text, cls) {
  const t = svg("text", { x, y, class: cls || "" });
  t.appendChild(document.createTextNode(text));
  return t;
}

export function clip(text, n) {
  return text.length > n ? text.slice(0, n - 1) + "\u2026" : text;
}

// A group kind as a CSS class suffix (kinds come from the payload).
export function cssKind(kind) {
  return /^[a-z_0-9]+$/i.test(kind) ? kind : "other";
}
