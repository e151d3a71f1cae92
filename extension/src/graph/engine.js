// Runs layouts (layout.js) in a Web Worker started from the bundled source (a blob:
// URL: no second file, works offline). Small graphs are laid out inline, where
// posting costs more than the layout; every layout is inline where the page forbids
// blob: workers. The worker also reads packed payloads (packed.js), so a large graph's
// JSON is parsed off the main thread and reaches the page in parts.

import WORKER_SOURCE from "virtual:worker";
import { layoutGraph } from "./layout.js";
import { join, unpack } from "./packed.js";
import { runSliced } from "./slice.js";

// Packed blocks of at most this many base64 characters are read inline: about 1 MB
// of JSON, parsed in a few milliseconds.
const READ_INLINE_MAX = 1 << 17;

export class LayoutEngine {
  constructor(inlineMax) {
    this.inlineMax = inlineMax;
    this.pending = new Map();
    this.seq = 0;
    this.worker = null;
    if (typeof Worker === "undefined" || !WORKER_SOURCE) return;
    try {
      const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
      this.worker = new Worker(url);
      URL.revokeObjectURL(url);
      this.worker.onmessage = (ev) => {
        const job = this.pending.get(ev.data.id);
        if (!job) return;
        this.pending.delete(ev.data.id);
        if (ev.data.error) job.reject(new Error(ev.data.error));
        else job.resolve(ev.data.out);
      };
      this.worker.onerror = (ev) => {
        ev.preventDefault && ev.preventDefault();
        this.fallBack();
      };
    } catch (err) {
      this.worker = null;
    }
  }

  inline(input) {
    return !this.worker || input.nodes.length + input.edges.length <= this.inlineMax;
  }

  /** The payload of a packed block (gzip+base64 JSON), read in the worker if any
   * and the block is large (a small one parses in less time than a message takes). */
  read(b64) {
    if (!this.worker || b64.length <= READ_INLINE_MAX) return unpack(b64);
    const id = this.seq++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { packed: b64, resolve, reject });
      this.worker.postMessage({ id, packed: b64 });
    }).then((parts) => (parts.head === undefined ? parts : runSliced(join(parts))));
  }

  run(input) {
    if (this.inline(input)) return Promise.resolve(layoutGraph(input));
    const id = this.seq++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { input, resolve, reject });
      this.worker.postMessage({ id, input });
    });
  }

  // The worker could not start (a page policy): lay out what it held inline.
  fallBack() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
    const jobs = [...this.pending.values()];
    this.pending.clear();
    for (const job of jobs) {
      if (job.packed !== undefined) { unpack(job.packed).then(job.resolve, job.reject); continue; }
      try { job.resolve(layoutGraph(job.input)); } catch (err) { job.reject(err); }
    }
  }

  close() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
  }
}
