// The layout worker: bundled to a string by build.mjs and started from a blob: URL,
// so the viewer stays one self-contained file that works offline.
import { layoutGraph } from "./layout.js";

self.onmessage = (ev) => {
  const { id, input } = ev.data;
  try {
    self.postMessage({ id, out: layoutGraph(input) });
  } catch (err) {
    self.postMessage({ id, error: String(err) });
  }
};
