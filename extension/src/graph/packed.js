// The payload as an HTML output carries it (pack_payload in jaxscope/_graph/render.py:
// JSON, gzip, base64), read without a long main-thread task: the layout worker
// decodes and inflates it and cuts its large arrays into JSON parts (`split`), which
// the page parses a few at a time between paints (`join`, in slices: see slice.js).
// Pure: no DOM, so node's test runner checks it.

import { due } from "./slice.js";

// About this many characters of JSON per part: a few milliseconds to parse.
export const PART_CHARS = 1 << 17;

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
 * A payload's JSON text as its top-level fields (`head`, each large array left
 * empty) and each large array's elements in JSON parts of about `chars` characters
 * (`parts[key]`, in order). A scan of the text: nothing is parsed here.
 */
export function split(text, chars = PART_CHARS) {
  const parts = {};
  let head = "";
  let copied = 0; // text before this is in `head`
  let depth = 0;
  let inString = false;
  let stringAt = -1;
  let key = ""; // the last string closed at depth 1 (a key, before its value)
  let arrayAt = -1;
  let from = -1;
  let pieces = null;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // a backslash escapes the next character
      else if (c === 34) {
        inString = false;
        if (depth === 1) key = text.slice(stringAt, i + 1);
      }
    } else if (c === 34) {
      inString = true;
      stringAt = i;
    } else if (c === 91 || c === 123) {
      depth++;
      if (depth === 2 && c === 91) { arrayAt = i; from = i + 1; pieces = []; }
    } else if (c === 93 || c === 125) {
      if (depth === 2 && pieces) {
        if (pieces.length) {
          pieces.push(text.slice(from, i));
          parts[JSON.parse(key)] = pieces.map((p) => "[" + p + "]");
          head += text.slice(copied, arrayAt) + "[]";
          copied = i + 1;
        }
        pieces = null;
      }
      depth--;
    } else if (c === 44 && depth === 2 && pieces && i - from >= chars) {
      pieces.push(text.slice(from, i));
      from = i + 1;
    }
  }
  return { head: head + text.slice(copied), parts };
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

/** What the worker answers to a packed payload: `split` of its JSON text. */
export async function readInWorker(b64, chars) {
  return split(await inflate(b64), chars);
}
