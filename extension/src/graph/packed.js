// The payload as an HTML output carries it (pack_payload in jaxscope/_graph/render.py:
// JSON, gzip, base64), read without a long main-thread task: the layout worker
// decodes, inflates and parses it, then sends its large arrays back as JSON text in
// parts (`split`), which the page parses a few at a time between paints (`join`, in
// slices: see slice.js). Pure: no DOM, so node's test runner checks it.

import { due } from "./slice.js";

// About this many characters of JSON per part: a few milliseconds to parse.
export const PART_CHARS = 1 << 18;

/** The bytes of base64 text (the engine's own decoder where it has one). */
export function fromBase64(b64) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(b64);
  const s = atob(b64);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}

/** The text of gzip-compressed bytes in base64. */
export function inflate(b64) {
  const stream = new Blob([fromBase64(b64)]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).text();
}

/** The payload of a packed block, read in one go (where no worker can read it). */
export async function unpack(b64) {
  return JSON.parse(await inflate(b64));
}

/**
 * A payload as its top-level fields' JSON (`head`) and each large array's elements in
 * JSON parts of about `chars` characters (`parts[key]`), in order.
 */
export function split(data, chars = PART_CHARS) {
  const head = { ...data };
  const parts = {};
  for (const [key, value] of Object.entries(data)) {
    if (!Array.isArray(value) || value.length < 2) continue;
    const sample = Math.min(value.length, 64);
    const each = JSON.stringify(value.slice(0, sample)).length / sample;
    const per = Math.max(1, Math.floor(chars / Math.max(each, 1)));
    if (per >= value.length) continue;
    parts[key] = [];
    for (let i = 0; i < value.length; i += per) parts[key].push(JSON.stringify(value.slice(i, i + per)));
    delete head[key];
  }
  return { head: JSON.stringify(head), parts };
}

/** `split` undone, in steps that pause where a slice is spent (see slice.js). */
export function* join(msg) {
  const data = JSON.parse(msg.head);
  for (const [key, texts] of Object.entries(msg.parts)) {
    const arrays = [];
    for (const text of texts) {
      arrays.push(JSON.parse(text));
      if (due()) yield;
    }
    data[key] = [].concat(...arrays);
    if (due()) yield;
  }
  return data;
}

/** What the worker answers to a packed payload: `split` of its JSON. */
export async function readInWorker(b64, chars) {
  return split(await unpack(b64), chars);
}
