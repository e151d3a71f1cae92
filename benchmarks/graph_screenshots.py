"""Screenshots of the graph viewer on a transformer training step, light and dark.

    python benchmarks/graph_screenshots.py [OUT_DIR]

Writes ``graph-transformer-light.png`` and ``graph-transformer-dark.png`` (JupyterLab's
dark theme variables set on ``body``, as JupyterLab does) to OUT_DIR (default
``benchmarks/screenshots``): the static HTML output in headless Chromium (``CHROMIUM``,
default ``chromium`` on PATH), one layer's attention block opened and a node selected.
And the first views, untouched, as a notebook shows them: ``graph-first-6-layers-*``
(a 6-layer named-scope training step, about 1,300 equations) and
``graph-first-95-layers-*`` (95 layers, 20k equations), light and dark.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import shutil
import sys
import tempfile
from pathlib import Path

from bench_graph import ARGS, page_html, transformer

import jaxscope as js

DARK = {
    "--jp-layout-color0": "#111111",
    "--jp-layout-color1": "#212121",
    "--jp-layout-color2": "#424242",
    "--jp-ui-font-color0": "rgba(255, 255, 255, 1)",
    "--jp-ui-font-color1": "rgba(255, 255, 255, 0.87)",
    "--jp-ui-font-color2": "rgba(255, 255, 255, 0.54)",
    "--jp-border-color1": "#616161",
    "--jp-brand-color1": "#1976d2",
}
API = "document.querySelector('.jaxscope-graph-mount').__jaxscopeGraph"


def first_views(browser, out: Path, tmp: Path) -> None:
    """The first view of a training step at two sizes, light and dark."""
    for name, n in (("6-layers", 6 * 210), ("95-layers", 20_000)):
        f, args = transformer(n)
        view = js.graph(f)(*args)
        path = tmp / f"{name}.html"
        path.write_text(page_html(view._repr_mimebundle_()["text/html"]), "utf-8")
        for theme in ("light", "dark"):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            if theme == "dark":  # before the viewer reads its colours
                page.add_init_script(
                    "document.addEventListener('DOMContentLoaded', () => {"
                    f"const vars = {DARK!r};"
                    "document.body.dataset.jpThemeLight = 'false';"
                    "document.body.style.background = vars['--jp-layout-color0'];"
                    "for (const k in vars) document.body.style.setProperty(k, vars[k]);"
                    "});"
                )
            page.goto(path.as_uri())
            page.wait_for_selector(".jaxscope-graph[data-state=ready]", timeout=120_000)
            page.wait_for_selector(".jaxscope-graph:not([data-busy])", timeout=120_000)
            page.locator(".jaxscope-graph").screenshot(
                path=str(out / f"graph-first-{name}-{theme}.png")
            )
            page.close()


def main(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    f, args = transformer(420)  # two layers
    view = js.graph(f)(*args)
    html = page_html(view._repr_mimebundle_()["text/html"])
    out.mkdir(parents=True, exist_ok=True)
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        path = Path(tmp) / "graph.html"
        path.write_text(html, "utf-8")
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        first_views(browser, out, Path(tmp))
        for theme in ("light", "dark"):
            page = browser.new_page(viewport={"width": 1400, "height": 820})
            page.goto(path.as_uri())
            page.wait_for_selector(".jaxscope-graph[data-state=ready]")
            if theme == "dark":
                page.evaluate(
                    """(vars) => { document.body.dataset.jpThemeLight = 'false';
                    document.body.style.background = vars['--jp-layout-color0'];
                    for (const k in vars) document.body.style.setProperty(k, vars[k]); }""",
                    DARK,
                )
            # open layer0's attention block and select its softmax's exp
            groups = page.evaluate(f"{API}.groups()")
            layer = next(g for g in groups if g["label"] == "layer0")
            page.evaluate(f"(id) => {API}.expand(id)", layer["id"])
            attention = next(  # the first, layer0's
                g for g in groups if g["label"] == "attention"
            )
            page.evaluate(f"(id) => {API}.expand(id)", attention["id"])
            page.wait_for_selector(".jaxscope-graph:not([data-busy])")
            exp = next(
                i
                for i, n in enumerate(view.nodes)
                if n.label == "exp" and "layer0" in n.scope and "attention" in n.scope
            )
            page.evaluate(f"(i) => {API}.select(i)", exp)
            page.wait_for_selector(".jaxscope-graph:not([data-busy])")
            page.locator(".jaxscope-graph").screenshot(
                path=str(out / f"graph-transformer-{theme}.png")
            )
            page.close()
        browser.close()


if __name__ == "__main__":
    here = Path(__file__).resolve().parent
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else here / "screenshots")
