// jaxscope stepper widget: buttons, the source of any file the program's equations
// come from (the current line highlighted; click a line with equations to toggle a
// breakpoint), and a values table. Colours come from JupyterLab's theme variables
// (with light fallbacks, and dark ones under prefers-color-scheme: dark), so the
// widget reads in light and dark themes alike; the buttons look like the graph
// viewer's. The values table scrolls in a pane as tall as the source's.
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
.jxs-step{
  --jxs-fg:var(--jp-content-font-color1,#1f1f1f);
  --jxs-muted:var(--jp-content-font-color2,#555);
  --jxs-bg:var(--jp-layout-color0,#fff);
  --jxs-head-bg:var(--jp-layout-color2,#eee);
  --jxs-head-fg:var(--jp-ui-font-color1,#1f1f1f);
  --jxs-border:var(--jp-border-color1,#bbb);
  --jxs-accent:#f0b400;
  --jxs-bad:#b00020;
  --jxs-bp:#b71c1c;
  font-family:var(--jp-code-font-family,monospace);font-size:12px;color:var(--jxs-fg);
  background:var(--jxs-bg)}
body[data-jp-theme-light="false"] .jxs-step{--jxs-bad:#ff8a80;--jxs-bp:#ff6e6e}
@media (prefers-color-scheme: dark){
  body:not([data-jp-theme-light]) .jxs-step{--jxs-fg:#e8e8e8;--jxs-muted:#b0b0b0;--jxs-bg:#1e1e1e;
    --jxs-head-bg:#333;--jxs-head-fg:#e8e8e8;--jxs-border:#555;--jxs-bad:#ff8a80;--jxs-bp:#ff6e6e}}
.jxs-step .bar{display:flex;flex-wrap:wrap;gap:4px}
.jxs-step .bar button{font:inherit;padding:1px 10px;border:1px solid var(--jxs-border);border-radius:4px;
  background:var(--jxs-bg);color:var(--jxs-fg);cursor:pointer}
.jxs-step .bar button:hover:not(:disabled){background:var(--jxs-head-bg)}
.jxs-step .bar button:focus-visible{outline:2px solid var(--jxs-accent);outline-offset:1px}
.jxs-step .bar button:disabled{color:var(--jxs-muted);cursor:default;opacity:.6}
.jxs-step .status{margin:4px 0;white-space:pre-wrap;overflow-wrap:anywhere}
.jxs-step .error{color:var(--jxs-bad)}
.jxs-step .panes{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
.jxs-step .src{flex:1 1 420px;min-width:0;max-width:100%;border:1px solid var(--jxs-border);
  max-height:360px;overflow:auto}
.jxs-step .file{display:flex;gap:6px;align-items:center;padding:2px 4px;
  background:var(--jxs-head-bg);color:var(--jxs-head-fg)}
.jxs-step .file select{font:inherit;max-width:100%;color:inherit;background:var(--jxs-bg);
  border:1px solid var(--jxs-border)}
.jxs-step .line{display:flex;padding:0 4px}
.jxs-step .line .text{flex:1;min-width:0;white-space:pre-wrap;overflow-wrap:anywhere}
.jxs-step .line.eqn{cursor:pointer}
.jxs-step .line.cur{background:color-mix(in srgb,var(--jxs-accent) 30%,var(--jxs-bg));
  box-shadow:inset 3px 0 var(--jxs-accent)}
.jxs-step .line.pinned{background:color-mix(in srgb,var(--jxs-bp) 14%,var(--jxs-bg))}
.jxs-step .line .bp{flex:none;width:1.2em;color:var(--jxs-bp)}
.jxs-step .line .no{flex:none;width:3.5em;color:var(--jxs-muted);text-align:right;margin-right:6px}
.jxs-step .values{flex:1 1 360px;min-width:0;max-width:100%;max-height:360px;overflow:auto;
  border:1px solid var(--jxs-border)}
.jxs-step table{border-collapse:collapse}
.jxs-step th{background:var(--jxs-head-bg);color:var(--jxs-head-fg);position:sticky;top:0;white-space:nowrap}
.jxs-step td,.jxs-step th{padding:1px 6px;border-bottom:1px solid var(--jxs-border);text-align:left}
.jxs-step td.label{white-space:nowrap}
.jxs-step td.preview{max-width:40em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.jxs-step tr.nan td{color:var(--jxs-bad)}
.jxs-step tr.var{cursor:pointer}
.jxs-step tr.full pre{margin:0;max-height:240px;overflow:auto}
`;

function fileBar(source, files, send) {
  const bar = h("div", { class: "file" });
  if (files.length > 1) {
    const select = h("select", { class: "files", title: "show another file or cell of the program",
      onchange: (e) => send("show_file", { file: e.target.value }) });
    for (const f of files) {
      const opt = h("option", { value: f.file }, `${f.file} (${f.lines.length} lines with equations)`);
      if (f.file === source.file) opt.selected = true;
      select.append(opt);
    }
    bar.append(select);
  } else {
    bar.append(h("span", {}, source.file || ""));
  }
  return bar;
}

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
  const source = s.source || { file: "", lines: [], eqn_lines: [] };
  const eqnLines = new Set(source.eqn_lines || []);
  const bps = new Set(s.breakpoints || []);
  const cur = s.current && s.current.file === source.file ? s.current.line : null;
  src.append(fileBar(source, s.files || [], send));
  for (const [no, text] of source.lines || []) {
    const cls = ["line"];
    if (eqnLines.has(no)) cls.push("eqn");
    if (no === cur) cls.push("cur");
    if (bps.has(no)) cls.push("pinned");
    const attrs = { class: cls.join(" "), "data-line": String(no) };
    if (eqnLines.has(no)) {
      attrs.onclick = () => send("toggle_break", { line: no, file: source.file });
      attrs.title = "click to set or clear a breakpoint";
    }
    src.append(h("div", attrs, h("span", { class: "bp" }, bps.has(no) ? "\u25cf" : ""),
      h("span", { class: "no" }, no), h("span", { class: "text" }, text)));
  }
  const table = h("table", { class: "vars" },
    h("tr", {}, ...["name", "aval", "min", "max", "mean", "nan", "inf", "value"].map((c) => h("th", {}, c))));
  for (const v of s.values || []) {
    const cls = (v.nan || v.inf ? "nan " : "") + "var";
    table.append(h("tr", { class: cls, "data-name": v.name, title: "click to show the whole value",
      onclick: () => send("expand", { name: v.name }) },
      h("td", { class: "label" }, v.label || v.name), h("td", {}, v.aval), h("td", {}, v.min), h("td", {}, v.max),
      h("td", {}, v.mean), h("td", {}, v.nan), h("td", {}, v.inf), h("td", { class: "preview" }, v.preview)));
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
