function e(s,c,...t){let a=document.createElement(s);for(let[i,r]of Object.entries(c||{}))i==="class"?a.className=r:i.startsWith("on")?a.addEventListener(i.slice(2),r):a.setAttribute(i,r);for(let i of t)i!=null&&a.append(i instanceof Node?i:document.createTextNode(String(i)));return a}var m=`
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
`;function v(s,c){let t=c.get("state")||{};s.replaceChildren();let a=(n,l)=>c.send(Object.assign({cmd:n},l||{})),i=!!t.done,r=(n,l,o)=>e("button",{class:`cmd-${l}`,title:o,onclick:()=>a(l),...i?{disabled:""}:{}},n);s.append(e("div",{class:"bar"},r("step","step","run the equation, or enter its nested jaxpr"),r("next","next","run the equation, nested jaxprs included"),r("finish","finish","run to the end of the current nested jaxpr"),r("continue","continue","run to the next breakpoint or the end"))),s.append(e("div",{class:"status"},t.location||"")),t.stack&&s.append(e("div",{class:"stack"},"frames: "+t.stack)),t.error&&s.append(e("div",{class:"error"},t.error));let p=e("div",{class:"src"}),d=t.source||{lines:[],eqn_lines:[]},f=new Set(d.eqn_lines||[]),h=new Set(t.breakpoints||[]),b=t.current?t.current.line:null;p.append(e("div",{class:"file"},d.file||""));for(let[n,l]of d.lines||[]){let o=["line"];f.has(n)&&o.push("eqn"),n===b&&o.push("cur");let x={class:o.join(" "),"data-line":String(n)};f.has(n)&&(x.onclick=()=>a("toggle_break",{line:n})),p.append(e("div",x,e("span",{class:"bp"},h.has(n)?"\u25CF":""),e("span",{class:"no"},n),l))}let u=e("table",{class:"vars"},e("tr",{},...["name","aval","min","max","mean","nan","inf","value"].map(n=>e("th",{},n))));for(let n of t.values||[]){let l=(n.nan||n.inf?"nan ":"")+"var";u.append(e("tr",{class:l,"data-name":n.name,title:"click to show the whole value",onclick:()=>a("expand",{name:n.name})},e("td",{},n.label||n.name),e("td",{},n.aval),e("td",{},n.min),e("td",{},n.max),e("td",{},n.mean),e("td",{},n.nan),e("td",{},n.inf),e("td",{},n.preview))),n.full!==void 0&&u.append(e("tr",{class:"full"},e("td",{colspan:"8"},e("pre",{},n.full))))}s.append(e("div",{class:"panes"},p,e("div",{class:"values"},u))),i&&t.result&&s.append(e("div",{class:"result"},"result: "+t.result))}function j({model:s,el:c}){let t=e("div",{class:"jxs-step"});c.append(e("style",{},m),t);let a=()=>v(t,s);return s.on("change:state",a),a(),()=>s.off("change:state",a)}var g={render:j};export{g as default};
