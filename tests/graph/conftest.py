"""Programs whose graphs the tests check, and one shared Chromium for the browser tests."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax


@jax.jit
def _inner(x):
    return jnp.sin(x) * 2.0


@jax.custom_jvp
def _cj(x):
    return jnp.exp(x)


_cj.defjvp(lambda p, t: (_cj(p[0]), t[0] * _cj(p[0])))


def nested_program(x, y):
    """jit-in-named-scope, scan, while, cond, remat, custom_jvp: every region kind."""
    with jax.named_scope("pre"):
        x = _inner(x)
    c, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, x)
    n = lax.while_loop(lambda o: o < 10.0, lambda o: o + 1.0, c)
    u = lax.cond(n > 0, lambda v: v - 1.0, lambda v: v * 2.0, n)
    u = jax.checkpoint(lambda a: jnp.sin(a) * a)(u)
    return _cj(u) + y, ys


@pytest.fixture
def nested():
    return nested_program


BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def graph_browser(require_chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=require_chromium, args=BROWSER_ARGS)
        yield b
        b.close()


def _open_static(page, tmp_path, view):
    """Open ``view``'s HTML as a static page and wait until the graph is drawn."""
    path = tmp_path / "graph.html"
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        + view._repr_mimebundle_()["text/html"]
        + "</body></html>",
        "utf-8",
    )
    page.goto(path.as_uri())
    page.wait_for_selector(".jaxscope-graph[data-state=ready]", timeout=15000)


@pytest.fixture
def open_static():
    """``open_static(page, tmp_path, view)``: a view's HTML as a drawn static page."""
    return _open_static
