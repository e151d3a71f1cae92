// Links an HLO display's source lines and ops (the HTML of jaxscope/_hlo/render.py):
// hover highlighting is CSS (a :has() rule per source key); a click on a line or an op
// pins the highlight of every element with its key (data-k), opens the folded
// computations holding the matches on the other side and scrolls to the first.
//
// Built as a classic script (no widget manager, no module loader: the HTML runs in
// nbconvert pages and notebooks alike) and inlined by jaxscope/_bundles.py, which
// calls wire() with the display's element id.

export function wire(id) {
  const root = document.getElementById(id);
  if (!root) return;
  const all = (k, sel) => root.querySelectorAll(`${sel}[data-k="${k}"]`);
  const mark = (k, on) => all(k, "").forEach((e) => e.classList.toggle("jxh-hit", on));
  let pinned = null;
  root.addEventListener("click", (ev) => {
    const el = ev.target.closest("[data-k]");
    if (!el || !root.contains(el)) return;
    const k = el.getAttribute("data-k");
    if (pinned !== null) mark(pinned, false);
    if (pinned === k) {
      pinned = null;
      return;
    }
    pinned = k;
    mark(k, true);
    const other = el.classList.contains("jxh-s") ? all(k, ".jxh-op") : all(k, ".jxh-s");
    other.forEach((e) => {
      const d = e.closest("details");
      if (d) d.open = true;
    });
    if (other.length) {
      const t = other[0];
      const box = t.closest(".jxh-code,.jxh-src");
      if (box) box.scrollTop = t.offsetTop - box.offsetTop - box.clientHeight / 3;
    }
  });
}
