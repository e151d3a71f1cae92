// Links a jaxpr display's equations and source lines (the HTML of
// jaxscope/_jaxpr/render.py): hovering an equation or a line highlights every element
// with the same source key (data-s); a click pins the highlight and brings the first
// match on the other side into view, opening the folded blocks that hold it.
//
// Built as a classic script (no widget manager, no module loader: the HTML runs in
// nbconvert pages and notebooks alike) and inlined by jaxscope/_bundles.py, which
// calls wire() with the display's element id.

export function wire(id) {
  const root = document.getElementById(id);
  if (!root || root.dataset.jxsReady) return;
  root.dataset.jxsReady = "1";
  let pinned = null;
  const all = (k) => root.querySelectorAll(`[data-s="${k}"]`);
  const mark = (k, cls, on) => all(k).forEach((e) => e.classList.toggle(cls, on));
  const reveal = (e) => {
    for (let p = e.parentElement; p && p !== root; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
  };
  const keyed = (ev) => {
    const t = ev.target.closest("[data-s]");
    return t && root.contains(t) ? t : null;
  };
  root.addEventListener("mouseover", (ev) => {
    const t = keyed(ev);
    if (t) mark(t.dataset.s, "jxs-hl", true);
  });
  root.addEventListener("mouseout", (ev) => {
    const t = keyed(ev);
    if (t) mark(t.dataset.s, "jxs-hl", false);
  });
  root.addEventListener("click", (ev) => {
    const t = keyed(ev);
    if (!t) return;
    const k = t.dataset.s;
    if (pinned !== null) mark(pinned, "jxs-pin", false);
    pinned = pinned === k ? null : k;
    if (pinned === null) return;
    mark(k, "jxs-pin", true);
    const side = t.classList.contains("jxs-s") ? ".jxs-e" : ".jxs-s";
    const first = root.querySelector(`${side}[data-s="${k}"]`);
    if (first) {
      reveal(first);
      first.scrollIntoView({ block: "nearest" });
    }
  });
}
