"""Graph viewer at scale: a 20,000-equation program (20 named-scope layers x 1,000).

Python side: ``js.graph(f)(x)`` and its HTML (the viewer with its JSON payload, what a
notebook displays) against ``jax.make_jaxpr(f)(x)`` on fresh functions (no budget),
and the payload's size (budget <= 5 MB).

Browser side (headless Chromium, the static HTML export), each timed to the frame
*after* the paint (``requestAnimationFrame`` then a task), median of several page loads:
- first view: navigation start to the first painted frame after layout (<= 2 s);
- expand one 1,000-node layer, which shows it as 10 artificial layers of 100 (<= 0.5 s);
- open one of those 100-node artificial layers, drawing its nodes (<= 0.5 s);
- for reference, the same 1,000-node layer laid out in one piece (no budget).

    python benchmarks/bench_graph.py [--smoke] [--rounds N] [--json PATH]

Set ``CHROMIUM`` to the browser's path (default: ``chromium`` on PATH); without one,
or without Playwright, the browser side is skipped.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import harness
import jax
import jax.numpy as jnp
import programs

import jaxscope as js

LAYERS, PER_LAYER = 20, 1_000
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
MOUNT = 'mod.mountStatic(mount,graph,{"height":520})'
UNCHUNKED = 'mod.mountStatic(mount,graph,{"height":520,"chunkMax":1000000000})'

# In the page: run ``action`` (it receives the viewer's api), resolve with the ms from
# before it to the first task after the next paint, and the nodes drawn after it.
TIMED = """([action, label]) => new Promise(resolve => {
    const api = document.querySelector('.jaxscope-graph-mount').__jaxscopeGraph;
    const group = api.groups().find(g => g.label === label);
    const t0 = performance.now();
    api.expand(action === 'layer' ? group.id : 'a' + group.id + ':0');
    requestAnimationFrame(() => setTimeout(
        () => resolve([performance.now() - t0, api.visible()])));
})"""
FIRST_PAINT = """() => new Promise(resolve => requestAnimationFrame(
    () => setTimeout(() => resolve(performance.now()))))"""


def html_of(view) -> str:
    return view._repr_mimebundle_()["text/html"]


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    x = jnp.ones(8)
    js.graph(programs.layered(2, 10))(x)  # imports, renderer registration
    views = []

    def scoped(f) -> None:
        view = js.graph(f)(x)
        html_of(view)
        views.append(view)

    yield harness.compare(
        f"graph {LAYERS * PER_LAYER:,} eqns, js.graph + HTML / make_jaxpr",
        scoped,
        lambda f: jax.make_jaxpr(f)(x),
        make=lambda: programs.layered(LAYERS, PER_LAYER),
        rounds=cfg.n(3),
        warmup=0,
    )
    view = views[-1]
    payload = json.dumps(view.payload(), separators=(",", ":")).encode()
    html = html_of(view)
    yield harness.value(
        f"graph {LAYERS * PER_LAYER:,} eqns, payload size",
        [len(payload)],
        budget=harness.Budget(5e6, on="value"),
        unit="B",
        note=f"{view!r}; HTML {len(html.encode()) / 1e6:.2f} MB",
    )
    yield from browser(cfg, html)


def browser(cfg: harness.Config, html: str) -> Iterator[harness.Result]:
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = chromium = None
    if not chromium or sync_playwright is None:
        skipped = "skipped: no Chromium (set CHROMIUM) or no Playwright"
        yield harness.Result("graph browser", None, None, verdict=skipped)
        return
    assert MOUNT in html, "the viewer's mount call changed; update bench_graph"
    pages = {"chunked": html, "unchunked": html.replace(MOUNT, UNCHUNKED)}
    times: dict[str, list[float]] = {
        k: [] for k in ("first", "layer", "chunk", "unchunked")
    }
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        paths = {}
        for label, body in pages.items():
            paths[label] = Path(tmp) / f"{label}.html"
            paths[label].write_text(
                "<!doctype html><html><head><meta charset='utf-8'></head><body>"
                + body
                + "</body></html>",
                "utf-8",
            )
        for i in range(cfg.warm(1) + cfg.n(5)):
            order = list(paths) if i % 2 == 0 else list(paths)[::-1]
            for label in order:
                got = load_and_expand(browser, paths[label], chunked=label == "chunked")
                if i < cfg.warm(1):
                    continue
                if label == "chunked":
                    for key, seconds in got.items():
                        times[key].append(seconds)
                else:
                    times["unchunked"].append(got["layer"])
        browser.close()
    half = harness.Budget(0.5, on="value")
    yield harness.value(
        "graph browser: first view", times["first"], budget=harness.Budget(2.0, "value")
    )
    yield harness.value(
        f"graph browser: expand a {PER_LAYER:,}-node layer (10 boxes)",
        times["layer"],
        budget=half,
    )
    yield harness.value(
        "graph browser: open a 100-node artificial layer", times["chunk"], budget=half
    )
    yield harness.value(
        f"graph browser: a {PER_LAYER:,}-node layer in one piece",
        times["unchunked"],
        note="reference: no artificial layers",
    )


def load_and_expand(browser, path: Path, *, chunked: bool) -> dict[str, float]:
    """Seconds to the first view and to each expansion, on a new page."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".jaxscope-graph[data-state=ready]", timeout=120_000)
    out = {"first": page.evaluate(FIRST_PAINT) / 1e3}
    before = int(page.get_attribute(".jaxscope-graph", "data-visible") or 0)
    ms, visible = page.evaluate(TIMED, ["layer", "layer1"])
    grown = {"layer": visible > before}
    out["layer"] = ms / 1e3
    if chunked:
        ms, after = page.evaluate(TIMED, ["chunk", "layer1"])
        grown["chunk"] = after >= visible + 99
        out["chunk"] = ms / 1e3
    page.close()
    assert not errors, errors
    assert all(grown.values()), f"an expansion drew nothing: {grown}"
    return out


if __name__ == "__main__":
    harness.main(bench, __doc__)
