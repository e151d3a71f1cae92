import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { SOURCE_EVENT, cellNumber, isPrompt } from "../src/graph/goto.js";

test("a notebook cell's file name gives its execution count, a path none", () => {
  assert.equal(cellNumber("In [7]"), 7);
  assert.equal(cellNumber("In [123]"), 123);
  assert.equal(cellNumber("/home/u/In [7].py"), null);
  assert.equal(cellNumber("/home/u/model.py"), null);
  assert.equal(cellNumber(""), null);
});

test("prompts of Lab, Notebook 6 and nbconvert pages name their cell", () => {
  for (const text of ["[7]:", "In [7]:", "In\u00a0[7]:", " [ 7 ]: ", "[7]"]) assert.ok(isPrompt(text, 7), text);
  for (const text of ["[17]:", "[ ]:", "[*]:", "Out[7]:", "In [7]: x", ""]) assert.ok(!isPrompt(text, 7), text);
});

test("the JupyterLab plugin listens to the event the viewer dispatches", () => {
  const plugin = readFileSync(new URL("../labextension/src/index.js", import.meta.url), "utf8");
  assert.ok(plugin.includes(`export const SOURCE_EVENT = ${JSON.stringify(SOURCE_EVENT)};`));
});
