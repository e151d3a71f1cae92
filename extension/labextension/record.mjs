// Records what the committed JupyterLab extension (../../jaxscope/labextension/) was
// built from, so tests/export/test_labextension.py can tell, without Node, that a
// source changed without a rebuild. Run by `npm run build` after the build itself.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const extension = join(here, "..");
const out = join(extension, "..", "jaxscope", "labextension");

function files(dir) {
  const found = [];
  for (const entry of readdirSync(dir).sort()) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) found.push(...files(p));
    else found.push(p);
  }
  return found;
}

const sha256 = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");
// Its own sources and build config, the graph viewer it bundles, and both lockfiles.
const inputs = [
  ...files(join(here, "src")),
  join(here, "package.json"),
  join(here, "package-lock.json"),
  join(here, "webpack.config.js"),
  ...files(join(extension, "src", "graph")),
  join(extension, "package-lock.json"),
];
const sources = {};
for (const p of inputs) sources[relative(extension, p).split("\\").join("/")] = sha256(p);
const built = {};
for (const p of files(out)) {
  const name = relative(out, p).split("\\").join("/");
  if (name !== "BUILD.json") built[name] = sha256(p);
}
writeFileSync(join(out, "BUILD.json"), JSON.stringify({ sources, built }, null, 2) + "\n");
console.log(`recorded ${Object.keys(sources).length} sources of jaxscope/labextension`);
