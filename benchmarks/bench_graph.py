"""Graph viewer at scale: three program shapes at 1k, 20k and 100k equations.

Shapes: ``flat`` (``for _ in range(n): x = x + 1.0``, no structure at all),
``scoped`` (200 ``jax.named_scope`` blocks sharing 4 weight matrices, the
high-fan-out case) and ``transformer`` (a training step: attention and MLP blocks
under named scopes, ``value_and_grad``, an SGD update); plus ``groups`` (20 named
scopes of 1,000 equations: the 1,000-node group).

Python side: ``js.graph(f)(x)`` + its HTML, timed once (no budget; the model's own
benchmarks compare it with JAX), and the HTML output's size, raw and gzip-compressed, at 20k (<= 5 MB).

Browser side (headless Chromium, the static HTML export, a new page per round, the
median of the rounds), each time taken to a painted frame (two
``requestAnimationFrame`` after the update):
- frame: navigation start to the viewer's frame (toolbar, empty canvas) in the page;
- first view: navigation start to the first painted view (<= 2 s at 20k);
- open: expand the largest collapsed top-level box (<= 0.5 s), then the first
  artificial layer inside it (<= 0.5 s);
- search: a primitive, with its results list;
- goto: jump to the middle search result, opening its groups;
- long task: the longest main-thread task (PerformanceObserver 'longtask') during
  open, search and goto (<= 200 ms), and during the first view (from navigation to
  the first painted view, the payload's decoding included).

    python benchmarks/bench_graph.py [--smoke] [--rounds N] [--json PATH]

``GRAPH_BASELINE=<git ref>`` also measures that commit's bundle
(``jaxscope/_static/graph.js``/``.css``) on the same payloads, interleaved round by
round with the working tree's, as "before". ``GRAPH_SIZES=1000,20000`` picks sizes,
``GRAPH_SHAPES=scoped,flat`` shapes.
``CHROMIUM`` is the browser's path (default: ``chromium`` on PATH); without one, or
without Playwright, the browser side is skipped.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import base64
import gzip
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import harness
import jax
import jax.numpy as jnp

import jaxscope as js
from jaxscope._graph import render

ROOT = Path(__file__).resolve().parent.parent
SIZES = (1_000, 20_000, 100_000)
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def flat(n: int) -> tuple[Callable[..., Any], tuple]:
    def program(x):
        for _ in range(n):
            x = x + 1.0
        return x

    return program, (jnp.ones(8),)


def scoped(n: int, blocks: int = 200) -> tuple[Callable[..., Any], tuple]:
    pairs = max(1, n // blocks // 2)

    def program(x, w0, w1, w2, w3):
        with jax.named_scope("model"):
            ws = (w0.T, w1.T, w2.T, w3.T)  # made inside: their edges stay in "model"
            for b in range(blocks):
                with jax.named_scope(f"block{b}"):
                    for j in range(pairs):
                        x = jnp.tanh(x @ ws[(b + j) % 4])
        return x

    return program, (jnp.ones(8), *[jnp.eye(8)] * 4)


def transformer(n: int) -> tuple[Callable[..., Any], tuple]:
    """A pre-norm transformer's training step, about 210 equations per layer."""
    layers = max(1, n // 210)
    d, heads = 16, 2

    def norm(x):
        mu = x.mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)

    def block(p, x):
        with jax.named_scope("attention"):
            h = norm(x)
            q, k, v = (
                (h @ p[w]).reshape(x.shape[0], heads, -1).transpose(1, 0, 2)
                for w in ("q", "k", "v")
            )
            a = jax.nn.softmax(q @ k.transpose(0, 2, 1) / jnp.sqrt(d / heads), -1)
            x = x + (a @ v).transpose(1, 0, 2).reshape(x.shape) @ p["o"]
        with jax.named_scope("mlp"):
            x = x + jax.nn.gelu(norm(x) @ p["up"]) @ p["down"]
        return x

    def loss(params, x, y):
        for i, p in enumerate(params):
            with jax.named_scope(f"layer{i}"):
                x = block(p, x)
        return ((x - y) ** 2).mean()

    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        with jax.named_scope("sgd"):
            params = jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)
        return params, value

    shapes = {"q": (d, d), "k": (d, d), "v": (d, d), "o": (d, d)}
    shapes |= {"up": (d, 4 * d), "down": (4 * d, d)}
    params = [{k: jnp.ones(s) * 0.01 for k, s in shapes.items()}] * layers
    return step, (params, jnp.ones((4, d)), jnp.ones((4, d)))


def groups(n: int) -> tuple[Callable[..., Any], tuple]:
    per = n // 20

    def program(x):
        for k in range(20):
            with jax.named_scope(f"layer{k}"):
                for _ in range(per):
                    x = jnp.sin(x)
        return x

    return program, (jnp.ones(8),)


SHAPES = {"flat": flat, "scoped": scoped, "transformer": transformer}


def cases(cfg: harness.Config) -> list[tuple[str, Callable[..., Any], int]]:
    sizes = [int(s) for s in os.environ.get("GRAPH_SIZES", "").split(",") if s]
    sizes = cfg.sizes(sizes or SIZES)
    shapes = os.environ.get("GRAPH_SHAPES", ",".join(SHAPES)).split(",")
    out = [(f"{name} {n // 1000}k", SHAPES[name], n) for n in sizes for name in shapes]
    if 20_000 in sizes:
        out.append(("groups 20x1k", groups, 20_000))
    return out


def page_html(body: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        + body
        + "</body></html>"
    )


def with_bundle(html: str, ref: str) -> str:
    """``html`` with the viewer bundle (JS and CSS) of commit ``ref``."""
    from jaxscope._graph import render

    js_b64, css = render._bundle()

    def show(path: str) -> bytes:
        return subprocess.run(
            ["git", "show", f"{ref}:{path}"], cwd=ROOT, check=True, capture_output=True
        ).stdout

    # gzip, as render._bundle stores it (the page inflates it)
    old_js = base64.b64encode(
        gzip.compress(show("jaxscope/_static/graph.js"), 9, mtime=0)
    ).decode("ascii")
    old_css = show("jaxscope/_static/graph.css").decode("utf-8")
    assert html.count(js_b64) == 1 and html.count(css) == 1
    return html.replace(js_b64, old_js).replace(css, old_css)


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    pages: dict[str, dict[str, Any]] = {}
    for label, make, n in cases(cfg):
        f, args = make(n)
        t0 = time.perf_counter()
        view = js.graph(f)(*args)
        html = view._repr_mimebundle_()["text/html"]
        yield harness.value(
            f"graph {label}: js.graph + HTML", [time.perf_counter() - t0], note="once"
        )
        size = len(html.encode())
        packed = len(gzip.compress(html.encode()))
        # what the HTML held before the payload was compressed: its JSON as is
        as_json = len(render.json_for_script(view.payload()).encode())
        yield harness.value(
            f"graph {label}: HTML output size",
            [size],
            budget=harness.Budget(5e6, on="value"),
            unit="B",
            note=f"{len(view.nodes):,} nodes; gzip {packed / 1e6:.2f} MB; "
            f"payload as JSON {as_json / 1e6:.2f} MB",
        )
        probe = search_probe(view)
        pages[label] = {"html": html, "probe": probe, "n": n}
    yield from browser(cfg, pages)


def search_probe(view: Any) -> tuple[str, int]:
    """A primitive to search for and the index of its middle match."""
    counts: dict[str, list[int]] = {}
    for i, node in enumerate(view.nodes):
        if node.kind == "eqn":
            counts.setdefault(node.label, []).append(i)
    label = max(counts, key=lambda k: len(counts[k]))
    hits = counts[label]
    return label, hits[len(hits) // 2]


# The largest collapsed top-level box: read from the DOM, the same in every version.
# With ``first``: the first collapsed artificial layer instead (after ``open``, the
# layer holding what the level's first items feed: the shared weights in ``scoped``).
OPEN = """async (first) => {
    const api = document.querySelector('.jaxscope-graph-mount').__jaxscopeGraph;
    const boxes = [...document.querySelectorAll(first ? '.jsg-group.jsg-collapsed.jsg-k-chunk' : '.jsg-group.jsg-collapsed')];
    const size = (b) => Number((b.querySelector('.jsg-sub').textContent.match(/(\\d+) nodes/) || [0, 0])[1]);
    if (!boxes.length) return [0, 0, api.visible()];
    const box = first ? boxes[0] : boxes.reduce((a, b) => (size(b) > size(a) ? b : a));
    await new Promise(r => setTimeout(r));  // in a task of the page, as a click is
    const t0 = performance.now();
    await Promise.resolve(api.expand(box.dataset.id));
    await window.__painted();
    return [performance.now() - t0, size(box), api.visible()];
}"""
TIMED = """async ([what, arg]) => {
    const api = document.querySelector('.jaxscope-graph-mount').__jaxscopeGraph;
    await new Promise(r => setTimeout(r));
    const t0 = performance.now();
    const got = await Promise.resolve(what === 'search' ? api.search(arg) : api.select(arg));
    await window.__painted();
    return [performance.now() - t0, typeof got === 'number' ? got : 0];
}"""
# Before the page's own scripts: the long tasks until the first view is drawn.
OBSERVE_FIRST = """window.__firstLong = [];
new PerformanceObserver((l) => window.__firstLong.push(
    ...l.getEntries().map((e) => [e.startTime, e.duration]))).observe({type: 'longtask'});
new MutationObserver((_, obs) => {
    if (!document.querySelector('.jaxscope-graph')) return;
    window.__frameAt = performance.now();
    obs.disconnect();
}).observe(document, {childList: true, subtree: true});"""
FIRST_LONG = """() => {
    const ready = Number(document.querySelector('.jaxscope-graph').dataset.readyAt);
    return window.__firstLong.filter((e) => e[0] < ready).map((e) => e[1]);
}"""
SETUP = """() => {
    window.__painted = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
    window.__long = [];
    new PerformanceObserver(l => window.__long.push(...l.getEntries().map(e => e.duration)))
        .observe({type: 'longtask'});
    return window.__painted().then(() => performance.now());
}"""


def browser(
    cfg: harness.Config, pages: dict[str, dict[str, Any]]
) -> Iterator[harness.Result]:
    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = chromium = None
    if not chromium or sync_playwright is None:
        skipped = "skipped: no Chromium (set CHROMIUM) or no Playwright"
        yield harness.Result("graph browser", None, None, verdict=skipped)
        return
    baseline = os.environ.get("GRAPH_BASELINE", "")
    versions = ["after", "before"] if baseline else ["after"]
    keys = (
        "frame",
        "first",
        "firstlong",
        "open",
        "layer",
        "search",
        "goto",
        "longtask",
    )
    times = {(c, v): {k: [] for k in keys} for c in pages for v in versions}
    info: dict[tuple[str, str], str] = {}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        paths = {}
        for label, page in pages.items():
            for v in versions:
                body = (
                    page["html"]
                    if v == "after"
                    else with_bundle(page["html"], baseline)
                )
                paths[label, v] = Path(tmp) / f"{label.replace(' ', '_')}_{v}.html"
                paths[label, v].write_text(page_html(body), "utf-8")
        for i in range(cfg.warm(1) + cfg.n(3)):
            for label, page in pages.items():
                for v in versions if i % 2 == 0 else versions[::-1]:
                    if info.get((label, v), "").startswith("error"):
                        continue
                    got, note = load_and_use(browser, paths[label, v], page["probe"])
                    info[label, v] = note
                    if i < cfg.warm(1) or got is None:
                        continue
                    for key, seconds in got.items():
                        times[label, v][key].append(seconds)
        browser.close()
    for label in pages:
        for v in versions:
            t = times[label, v]
            tag = f"graph browser {label} [{v}]"
            if not t["first"]:
                yield harness.Result(tag, None, None, verdict=info[label, v][:200])
                continue
            checked = v == "after"
            first_budget = (
                harness.Budget(2.0, "value")
                if checked and pages[label]["n"] <= 20_000
                else None
            )
            yield harness.value(f"{tag}: frame shown", t["frame"])
            yield harness.value(f"{tag}: first view", t["first"], budget=first_budget)
            yield harness.value(
                f"{tag}: longest task in the first view",
                t["firstlong"],
                budget=harness.Budget(0.2, "value") if checked else None,
            )
            yield harness.value(
                f"{tag}: open largest box",
                t["open"],
                budget=harness.Budget(0.5, "value") if checked else None,
                note=info[label, v],
            )
            yield harness.value(
                f"{tag}: then open its first artificial layer",
                t["layer"],
                budget=harness.Budget(0.5, "value") if checked else None,
            )
            yield harness.value(f"{tag}: search", t["search"])
            yield harness.value(f"{tag}: goto a result", t["goto"])
            yield harness.value(
                f"{tag}: longest task in open/search/goto",
                t["longtask"],
                budget=harness.Budget(0.2, "value") if checked else None,
            )


def load_and_use(
    browser, path: Path, probe: tuple[str, int]
) -> tuple[dict | None, str]:
    """Seconds to the first view, to open, search and goto, on a new page."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.add_init_script(OBSERVE_FIRST)
    page.goto(path.as_uri())
    try:
        page.wait_for_selector(".jaxscope-graph[data-state=ready]", timeout=120_000)
    except Exception as exc:
        page.close()
        return None, f"error: never ready: {'; '.join(errors) or exc}"
    out = {"first": page.evaluate(SETUP) / 1e3}
    out["frame"] = page.evaluate("window.__frameAt") / 1e3
    out["firstlong"] = max(page.evaluate(FIRST_LONG), default=0.0) / 1e3
    page.evaluate("window.__long = []")
    ms, size, visible = page.evaluate(OPEN, False)
    out["open"] = ms / 1e3
    ms, inner, _ = page.evaluate(OPEN, True)
    out["layer"] = ms / 1e3
    ms, found = page.evaluate(TIMED, ["search", probe[0]])
    out["search"] = ms / 1e3
    ms, _ = page.evaluate(TIMED, ["select", probe[1]])
    out["goto"] = ms / 1e3
    page.wait_for_timeout(50)  # the observer reports after the task
    out["longtask"] = max(page.evaluate("window.__long"), default=0.0) / 1e3
    page.close()
    if errors:
        return None, "error: " + "; ".join(errors)
    return (
        out,
        f"opened {size} nodes -> {visible} visible, then {inner}; {found} matches",
    )


if __name__ == "__main__":
    harness.main(bench, __doc__)
