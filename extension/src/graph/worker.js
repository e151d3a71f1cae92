// The layout worker: bundled to a string by build.mjs and started from a blob: URL,
// so the viewer stays one self-contained file that works offline. It lays out
// containers ({input}) and reads packed payloads ({packed}: see packed.js).
import { layoutGraph } from "./layout.js";
import { readInWorker } from "./packed.js";

self.onmessage = async (ev) => {
  const { id, input, packed } = ev.data;
  try {
    const out = packed !== undefined ? await readInWorker(packed) : layoutGraph(input);
    self.postMessage({ id, out });
  } catch (err) {
    self.postMessage({ id, error: String(err) });
  }
};
