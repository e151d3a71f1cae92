"""Graph viewer at scale: a 20,000-equation program (20 named-scope layers x 1,000).

Prints, in one run:
- Python side: tracing with plain ``jax.make_jaxpr`` vs ``js.jaxpr`` + graph model +
  payload (JSON), and the payload / HTML sizes;
- browser side (headless Chromium, the static HTML export): time to the first rendered
  view, time to expand one 1,000-node layer (shown as artificial layers of 100), time
  to open one such 100-node layer, and for reference the same 1,000-node layer laid
  out in one piece (no artificial layers).

Budgets (issue 8): first view <= 2 s, expand <= 0.5 s, payload <= 5 MB.

    python benchmarks/bench_graph.py [--layers 20] [--per-layer 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import jax.numpy as jnp

import jaxscope as js
from jaxscope._graph.model import build_graph, to_payload
from jaxscope._graph.render import standalone_html
from jaxscope._jaxpr.model import build_model

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def make_program(layers: int, per_layer: int):
    def f(x):
        for i in range(layers):
            with jax.named_scope(f"layer{i}"):
                for _ in range(per_layer // 2):
                    x = jnp.sin(x) * 1.01
        return x

    return f


def best(fn, repeat=3):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times), out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=20)
    ap.add_argument("--per-layer", type=int, default=1000)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    a = ap.parse_args()
    x = jnp.ones(8)

    # fresh functions each time: JAX caches traces of the same function object
    t_jax, _, closed = best(
        lambda: jax.make_jaxpr(make_program(a.layers, a.per_layer))(x), repeat=2
    )
    n_eqns = len(closed.jaxpr.eqns)
    t_view, _, view = best(
        lambda: js.jaxpr(make_program(a.layers, a.per_layer))(x), repeat=2
    )
    t_model, _, model = best(lambda: build_model(view.closed_jaxpr))
    t_graph, _, graph = best(lambda: build_graph(model, title="f"))
    t_payload, _, payload = best(
        lambda: json.dumps(to_payload(graph), separators=(",", ":"))
    )
    gv = js.GraphView(graph)
    html = standalone_html(gv)
    print(
        f"program: {n_eqns} equations, {len(graph.nodes)} nodes, {len(graph.edges)} edges, "
        f"{len(graph.groups)} groups (jax {jax.__version__})"
    )
    print(
        f"python: jax.make_jaxpr {t_jax:.2f} s | js.jaxpr {t_view:.2f} s "
        f"(ratio {t_view / t_jax:.2f}x) | jaxpr model {t_model:.2f} s | graph model "
        f"{t_graph:.2f} s | payload {t_payload:.2f} s"
    )
    extra = t_graph + t_payload
    print(
        f"python: graph model + payload {extra:.2f} s = {extra / t_jax:.2f}x plain make_jaxpr"
    )
    print(
        f"payload: {len(payload) / 1e6:.2f} MB JSON (budget 5 MB), HTML output "
        f"{len(html.encode()) / 1e6:.2f} MB"
    )

    if not Path(a.chromium).exists():
        print("browser: chromium not found; skipped")
        return 0
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=a.chromium, args=ARGS)
        results = {}
        for label, opts in (("chunked", {}), ("unchunked", {"chunkMax": 10**9})):
            path = Path(tmp) / f"{label}.html"
            path.write_text(
                "<!doctype html><html><head><meta charset='utf-8'></head><body>"
                + standalone_html(gv, options=opts)
                + "</body></html>",
                "utf-8",
            )
            firsts, expands, chunk_opens = [], [], []
            for _ in range(3):
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                errors = []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.goto(path.as_uri())
                page.wait_for_selector(
                    ".jaxscope-graph[data-state=ready]", timeout=60000
                )
                # first view: navigation start -> first rendered frame after the layout
                first = page.evaluate(
                    "() => new Promise(r => requestAnimationFrame(() => r(performance.now())))"
                )
                firsts.append(first / 1000)
                ms = page.evaluate("""() => new Promise(r => {
                    const api = document.querySelector('.jaxscope-graph-mount').__jaxscopeGraph;
                    const t0 = performance.now(); api.expand('g1');
                    requestAnimationFrame(() => r(performance.now() - t0)); })""")
                expands.append(ms / 1000)
                if label == "chunked":
                    ms2 = page.evaluate("""() => new Promise(r => {
                        const api = document.querySelector('.jaxscope-graph-mount').__jaxscopeGraph;
                        const t0 = performance.now(); api.expand('ag1:0');
                        requestAnimationFrame(() => r(performance.now() - t0)); })""")
                    chunk_opens.append(ms2 / 1000)
                visible = int(page.get_attribute(".jaxscope-graph", "data-visible"))
                assert not errors, errors
                page.close()
            results[label] = (
                min(firsts),
                min(expands),
                min(chunk_opens) if chunk_opens else None,
                visible,
            )
        browser.close()
    first, expand, chunk, _ = results["chunked"]
    print(
        f"browser: first view {first:.2f} s (budget 2 s) | expand a {a.per_layer}-node layer "
        f"{expand:.3f} s (budget 0.5 s; shown as {-(-a.per_layer // 100)} artificial layers) | "
        f"open one 100-node artificial layer {chunk:.3f} s"
    )
    _, raw, _, _ = results["unchunked"]
    print(
        f"browser (reference): the same {a.per_layer}-node layer laid out in one piece "
        f"{raw:.2f} s"
    )
    ok = first <= 2 and expand <= 0.5 and len(payload) <= 5e6
    print("budgets:", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
