// JupyterLab renderer for jaxscope's graph output (application/vnd.jaxscope.graph+json).
//
// The graph needs no kernel, so its output carries no widget model that a reopened
// notebook could miss. The data lives once, in the output's text/html (the
// self-contained viewer that nbconvert, VS Code and others show); this renderer reads
// it from there with DOMParser (which runs no script) and mounts the same viewer as
// the HTML does, from this extension's bundle. It is "safe": it draws data, runs no
// code from the output, so it also draws untrusted notebooks. A packed payload is read
// in the viewer's worker (mountPacked), so a large graph blocks no main-thread task.
import { Widget } from "@lumino/widgets";
// The viewer as esbuild bundled it (its layout worker inlined as a string through an
// esbuild-only virtual module that webpack cannot read); graph.js is built from
// ../../src/graph, whose hashes BUILD.json records.
import { mountPacked, mountStatic } from "../../../jaxscope/_static/graph.js";
import "../../../jaxscope/_static/graph.css";

export const GRAPH_MIME = "application/vnd.jaxscope.graph+json";

/**
 * The graph payload embedded in the output's text/html: `{packed}` (gzip-compressed
 * JSON in base64, read by the viewer), `{graph}` (plain JSON, parsed), or null.
 */
export function graphData(data) {
  const html = data["text/html"];
  if (typeof html !== "string") return null;
  const doc = new DOMParser().parseFromString(html, "text/html");
  const block = doc.querySelector("script.jaxscope-graph-data");
  if (!block) return null;
  const text = block.textContent;
  if (block.dataset.encoding === "gzip+base64") return { packed: text };
  if (block.dataset.encoding) return null;
  try {
    return { graph: JSON.parse(text) };
  } catch (err) {
    return null;
  }
}

function plainText(data) {
  const text = data["text/plain"];
  const pre = document.createElement("pre");
  pre.textContent = typeof text === "string" ? text : "jaxscope graph (no data in this output)";
  return pre;
}

class GraphRenderer extends Widget {
  constructor() {
    super();
    this.addClass("jaxscope-lab-graph");
    this._pending = null;
  }

  async renderModel(model) {
    const data = model.data;
    const source = graphData(data);
    this.node.textContent = "";
    if (source === null) {
      this.node.appendChild(plainText(data));
      return;
    }
    const height = Number((data[GRAPH_MIME] || {}).height) || 520;
    this._pending = { source, data, height };
    // The viewer measures its box: mount once the output is in the page.
    if (this.isAttached) this._mount();
  }

  onAfterAttach(msg) {
    super.onAfterAttach(msg);
    this._mount();
  }

  _mount() {
    if (this._pending === null) return;
    const { source, data, height } = this._pending;
    this._pending = null;
    const mount = document.createElement("div");
    mount.className = "jaxscope-graph-mount";
    mount.style.height = `${height}px`;
    this.node.textContent = "";
    this.node.appendChild(mount);
    if (source.graph) {
      mountStatic(mount, source.graph, { height });
      return;
    }
    // the data could not be read (a damaged output): its plain text instead
    mountPacked(mount, source.packed, { height }).catch(() => {
      this.node.textContent = "";
      this.node.appendChild(plainText(data));
    });
  }
}

export default [
  {
    id: "jaxscope:graph",
    rendererFactory: {
      safe: true,
      mimeTypes: [GRAPH_MIME],
      createRenderer: () => new GraphRenderer(),
    },
    rank: 0,
    dataType: "json",
  },
];
