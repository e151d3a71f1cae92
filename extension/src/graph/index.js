// jaxscope graph viewer: an anywidget front-end (and a static mount for HTML exports).
//
// Modules: decode.js (the payload of jaxscope._graph.to_payload), hierarchy.js (the
// grouping model), viewer.js (the view) with toolbar.js, panzoom.js, search.js and
// panel.js; engine.js + layout.js + worker.js (dagre layouts, off the main thread
// when large, and the reading of packed payloads: packed.js); slice.js (long work in
// short tasks); dom.js (helpers). Every user string is written with textContent /
// createTextNode; nothing user-controlled reaches innerHTML.

import { LayoutEngine } from "./engine.js";
import { GraphViewer } from "./viewer.js";

export { decode } from "./decode.js";

function mount(el, data, opts) {
  // the viewer's height follows its graph: the placeholder's fixed height goes
  el.style.height = "";
  const viewer = new GraphViewer(el, data, opts);
  el.__jaxscopeGraph = viewer.api();
  return viewer;
}

/** Mount the viewer without a widget manager (the static HTML output). */
export function mountStatic(el, data, opts) {
  try {
    return mount(el, data, opts || {});
  } catch (err) {
    el.appendChild(document.createTextNode("jaxscope graph viewer failed: " + err));
    throw err;
  }
}

/**
 * Mount the viewer on a packed payload (the static HTML output's gzip+base64 block),
 * read in the layout worker so that no main-thread task runs long; what `el` shows
 * stays until then. Resolves to the viewer.
 */
export async function mountPacked(el, b64, opts) {
  const engine = new LayoutEngine();
  let data;
  try {
    data = await engine.read(b64);
  } catch (err) {
    engine.close();
    el.appendChild(document.createTextNode("jaxscope graph viewer could not read its data: " + err));
    throw err;
  }
  el.textContent = "";
  return mountStatic(el, data, { ...(opts || {}), engine });
}

function render({ model, el }) {
  let viewer = null;
  const draw = () => {
    while (el.firstChild) el.removeChild(el.firstChild);
    if (viewer) viewer.close();
    viewer = mount(el, model.get("graph") || {}, {
      height: model.get("height") || 520,
      onSelect: (i) => { model.set("selected", i); model.save_changes(); },
    });
  };
  draw();
  model.on("change:graph", draw);
  return () => {
    model.off && model.off("change:graph", draw);
    if (viewer) viewer.close();
    viewer = null;
  };
}

export default { render };
