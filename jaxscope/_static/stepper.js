function e(n,l,...t){let a=document.createElement(n);for(let[r,o]of Object.entries(l||{}))r==="class"?a.className=o:r.startsWith("on")?a.addEventListener(r.slice(2),o):a.setAttribute(r,o);for(let r of t)r!=null&&a.append(r instanceof Node?r:document.createTextNode(String(r)));return a}var h=`
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
`;function v(n,l,t){let a=e("div",{class:"file"});if(l.length>1){let r=e("select",{class:"files",title:"show another file or cell of the program",onchange:o=>t("show_file",{file:o.target.value})});for(let o of l){let p=e("option",{value:o.file},`${o.file} (${o.lines.length} lines with equations)`);o.file===n.file&&(p.selected=!0),r.append(p)}a.append(r)}else a.append(e("span",{},n.file||""));return a}function g(n,l){let t=l.get("state")||{};n.replaceChildren();let a=(s,i)=>l.send(Object.assign({cmd:s},i||{})),r=!!t.done,o=(s,i,c)=>e("button",{class:`cmd-${i}`,title:c,onclick:()=>a(i),...r?{disabled:""}:{}},s);n.append(e("div",{class:"bar"},o("step","step","run the equation, or enter its nested jaxpr"),o("next","next","run the equation, nested jaxprs included"),o("finish","finish","run to the end of the current nested jaxpr"),o("continue","continue","run to the next breakpoint or the end"))),n.append(e("div",{class:"status"},t.location||"")),t.stack&&n.append(e("div",{class:"stack"},"frames: "+t.stack)),t.error&&n.append(e("div",{class:"error"},t.error));let p=e("div",{class:"src"}),d=t.source||{file:"",lines:[],eqn_lines:[]},b=new Set(d.eqn_lines||[]),j=new Set(t.breakpoints||[]),u=t.current&&t.current.file===d.file?t.current.line:null;p.append(v(d,t.files||[],a));for(let[s,i]of d.lines||[]){let c=["line"];b.has(s)&&c.push("eqn"),s===u&&c.push("cur"),j.has(s)&&c.push("pinned");let f={class:c.join(" "),"data-line":String(s)};b.has(s)&&(f.onclick=()=>a("toggle_break",{line:s,file:d.file}),f.title="click to set or clear a breakpoint"),p.append(e("div",f,e("span",{class:"bp"},j.has(s)?"\u25CF":""),e("span",{class:"no"},s),e("span",{class:"text"},i)))}let x=e("table",{class:"vars"},e("tr",{},...["name","aval","min","max","mean","nan","inf","value"].map(s=>e("th",{},s))));for(let s of t.values||[]){let i=(s.nan||s.inf?"nan ":"")+"var";x.append(e("tr",{class:i,"data-name":s.name,title:"click to show the whole value",onclick:()=>a("expand",{name:s.name})},e("td",{class:"label"},s.label||s.name),e("td",{},s.aval),e("td",{},s.min),e("td",{},s.max),e("td",{},s.mean),e("td",{},s.nan),e("td",{},s.inf),e("td",{class:"preview"},s.preview))),s.full!==void 0&&x.append(e("tr",{class:"full"},e("td",{colspan:"8"},e("pre",{},s.full))))}n.append(e("div",{class:"panes"},p,e("div",{class:"values"},x))),r&&t.result&&n.append(e("div",{class:"result"},"result: "+t.result))}function m({model:n,el:l}){let t=e("div",{class:"jxs-step"});l.append(e("style",{},h),t);let a=()=>g(t,n);return n.on("change:state",a),a(),()=>n.off("change:state",a)}var w={render:m};export{w as default};
