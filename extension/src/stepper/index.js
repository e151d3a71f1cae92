// jaxscope stepper widget: buttons, the source with the current line highlighted
// (click a line with equations to toggle a breakpoint), and a values table.
// Plain ES module, no dependencies; build.mjs bundles it into jaxscope/_static/stepper.js.

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const CSS = `
.jxs-step{font-family:var(--jp-code-font-family,monospace);font-size:12px;color:var(--jp-content-font-color1,#222)}
.jxs-step .bar button{margin-right:4px;padding:2px 10px;cursor:pointer}
.jxs-step .status{margin:4px 0;white-space:pre-wrap}
.jxs-step .error{color:#b00020}
.jxs-step .panes{display:flex;gap:12px;align-items:flex-start}
.jxs-step .src{flex:1;min-width:320px;border:1px solid #ccc;max-height:360px;overflow:auto}
.jxs-step .line{white-space:pre;padding:0 4px}
.jxs-step .line.eqn{cursor:pointer}
.jxs-step .line.cur{background:#fff3b0}
.jxs-step .line .bp{display:inline-block;width:1.2em;color:#c00}
.jxs-step .line .no{display:inline-block;width:3.5em;color:#888;text-align:right;margin-right:6px}
.jxs-step table{border-collapse:collapse}
.jxs-step td,.jxs-step th{padding:1px 6px;border-bottom:1px solid #ddd;text-align:left}
.jxs-step tr.nan td{color:#b00020}
.jxs-step tr.var{cursor:pointer}
.jxs-step tr.full pre{margin:0;max-height:240px;overflow:auto}
`;

function draw(root, model) {
  const s = model.get("state") || {};
  root.replaceChildren();
  const send = (cmd, extra) => model.send(Object.assign({ cmd }, extra || {}));
  const done = !!s.done;
  const button = (label, cmd, title) =>
    h("button", { class: `cmd-${cmd}`, title, onclick: () => send(cmd), ...(done ? { disabled: "" } : {}) }, label);
  root.append(
    h("div", { class: "bar" },
      button("step", "step", "run the equation, or enter its nested jaxpr"),
      button("next", "next", "run the equation, nested jaxprs included"),
      button("finish", "finish", "run to the end of the current nested jaxpr"),
      button("continue", "continue", "run to the next breakpoint or the end")),
  );
  root.append(h("div", { class: "status" }, s.location || ""));
  if (s.stack) root.append(h("div", { class: "stack" }, "frames: " + s.stack));
  if (s.error) root.append(h("div", { class: "error" }, s.error));
  const src = h("div", { class: "src" });
  const source = s.source || { lines: [], eqn_lines: [] };
  const eqnLines = new Set(source.eqn_lines || []);
  const bps = new Set(s.breakpoints || []);
  const cur = s.current ? s.current.line : null;
  src.append(h("div", { class: "file" }, source.file || ""));
  for (const [no, text] of source.lines || []) {
    const cls = ["line"];
    if (eqnLines.has(no)) cls.push("eqn");
    if (no === cur) cls.push("cur");
    const attrs = { class: cls.join(" "), "data-line": String(no) };
    if (eqnLines.has(no)) attrs.onclick = () => send("toggle_break", { line: no });
    src.append(h("div", attrs, h("span", { class: "bp" }, bps.has(no) ? "\u25cf" : ""), h("span", { class: "no" }, no), text));
  }
  const table = h("table", { class: "vars" },
    h("tr", {}, ...["name", "aval", "min", "max", "mean", "nan", "inf", "value"].map((c) => h("th", {}, c))));
  for (const v of s.values || []) {
    const cls = (v.nan || v.inf ? "nan " : "") + "var";
    table.append(h("tr", { class: cls, "data-name": v.name, title: "click to show the whole value",
      onclick: () => send("expand", { name: v.name }) },
      h("td", {}, v.label || v.name), h("td", {}, v.aval), h("td", {}, v.min), h("td", {}, v.max),
      h("td", {}, v.mean), h("td", {}, v.nan), h("td", {}, v.inf), h("td", {}, v.preview)));
    if (v.full !== undefined) {
      table.append(h("tr", { class: "full" }, h("td", { colspan: "8" }, h("pre", {}, v.full))));
    }
  }
  root.append(h("div", { class: "panes" }, src, h("div", { class: "values" }, table)));
  if (done && s.result) root.append(h("div", { class: "result" }, "result: " + s.result));
}

function render({ model, el }) {
  const root = h("div", { class: "jxs-step" });
  el.append(h("style", {}, CSS), root);
  const redraw = () => draw(root, model);
  model.on("change:state", redraw);
  redraw();
  return () => model.off("change:state", redraw);
}

export default { render };
