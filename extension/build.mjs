// Builds every widget front-end and inline script into ../jaxscope/_static/ and
// records BUILD.json.
//
// Each entry point is src/<name>/index.(ts|js) -> _static/<name>.js, with an optional
// src/<name>/<name>.css copied to _static/<name>.css. Add a widget (an ES module that
// anywidget or a static mount imports) by listing it in ENTRIES, a static display's
// inline script in SCRIPTS: a classic script (IIFE) whose exports land in the variable
// `jaxscope_<name>`, which jaxscope/_bundles.py inlines and calls.
// Everything is bundled (no CDN imports: notebooks and CI may be offline).
// A widget's src/<name>/worker.js, if present, is bundled first and its code becomes
// the default export of the module "virtual:worker" (a string the widget starts from a
// blob: URL), so a worker needs no second file.
import { build, version } from "esbuild";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "jaxscope", "_static");
const ENTRIES = ["graph", "stepper"];
const SCRIPTS = ["jaxpr", "hlo"];

function entryFile(name) {
  for (const ext of ["ts", "js"]) {
    const p = join(here, "src", name, `index.${ext}`);
    if (existsSync(p)) return p;
  }
  throw new Error(`no src/${name}/index.(ts|js)`);
}

function files(dir) {
  const found = [];
  for (const entry of readdirSync(dir).sort()) {
    const p = join(dir, entry);
    if (statSync(p).isDirectory()) found.push(...files(p));
    else found.push(p);
  }
  return found;
}

function sha256(path) {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

const OPTIONS = { bundle: true, minify: true, target: "es2020", legalComments: "eof", logLevel: "warning" };

async function workerSource(name) {
  const p = join(here, "src", name, "worker.js");
  if (!existsSync(p)) return "";
  const res = await build({ ...OPTIONS, entryPoints: [p], format: "iife", write: false });
  return res.outputFiles[0].text;
}

for (const name of ENTRIES) {
  const worker = await workerSource(name);
  const virtualWorker = {
    name: "virtual-worker",
    setup(b) {
      b.onResolve({ filter: /^virtual:worker$/ }, () => ({ path: "worker", namespace: "virtual" }));
      b.onLoad({ filter: /.*/, namespace: "virtual" }, () => ({
        contents: `export default ${JSON.stringify(worker)};`,
        loader: "js",
      }));
    },
  };
  await build({
    ...OPTIONS,
    plugins: [virtualWorker],
    entryPoints: [entryFile(name)],
    outfile: join(out, `${name}.js`),
    format: "esm",
  });
  const css = join(here, "src", name, `${name}.css`);
  if (existsSync(css)) copyFileSync(css, join(out, `${name}.css`));
}

for (const name of SCRIPTS) {
  await build({
    ...OPTIONS,
    entryPoints: [entryFile(name)],
    outfile: join(out, `${name}.js`),
    format: "iife",
    globalName: `jaxscope_${name}`,
  });
}

// What tests/graph/test_static_bundle.py recomputes without node: the inputs of each
// bundle (its own src/<name>/** plus src/shared/** if present, the lockfile) and the
// esbuild version. One record per entry, so widgets built here stay independent.
const record = { esbuild: version, entries: {} };
for (const name of [...ENTRIES, ...SCRIPTS]) {
  const inputs = files(join(here, "src", name));
  const shared = join(here, "src", "shared");
  if (existsSync(shared)) inputs.push(...files(shared));
  inputs.push(join(here, "package-lock.json"));
  const sources = {};
  for (const p of inputs) sources[relative(here, p).split("\\").join("/")] = sha256(p);
  record.entries[name] = { bundle: `${name}.js`, bundle_sha256: sha256(join(out, `${name}.js`)), sources };
}
writeFileSync(join(out, "BUILD.json"), JSON.stringify(record, null, 2) + "\n");
console.log(`built ${[...ENTRIES, ...SCRIPTS].join(", ")} with esbuild ${version}`);
