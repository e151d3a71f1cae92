"""The jaxpr HTML in a real Chromium: hovering/clicking links source lines and
equations; clicking reveals equations inside collapsed nested jaxprs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax

import jaxscope as js

pytestmark = pytest.mark.browser


def body_fn(c, v):
    return c + jnp.sin(v), c


def program(x):
    y = jnp.cos(x) * 2.0
    c, _ = lax.scan(body_fn, 0.0, y)
    return c


@pytest.fixture(scope="module")
def page(require_chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium)
        pg = browser.new_page(viewport={"width": 1400, "height": 800})
        yield pg
        browser.close()


def load(page, view):
    html = view._repr_mimebundle_()["text/html"]
    page.set_content(f"<html><body>{html}</body></html>")


def classes(locator):
    return locator.evaluate_all("els => els.map(e => e.className)")


def test_hovering_a_source_line_highlights_exactly_its_equations(page):
    view = js.jaxpr(program)(jnp.ones(4))
    load(page, view)
    sources = page.locator(".jxs-s")
    assert sources.count() == len(view.by_line) >= 3
    key = sources.nth(0).get_attribute("data-s")
    first_key = next(iter(view.by_line))
    mine = page.locator(f'.jxs-e[data-s="{key}"]')
    assert mine.count() == len(view.by_line[first_key])
    sources.nth(0).hover()
    assert all("jxs-hl" in c for c in classes(mine))
    others = page.locator(f'.jxs-e:not([data-s="{key}"])')
    assert not any("jxs-hl" in c for c in classes(others))
    page.mouse.move(1390, 790)
    assert not any("jxs-hl" in c for c in classes(mine))


def test_hovering_an_equation_highlights_its_source_line(page):
    view = js.jaxpr(program)(jnp.ones(4))
    load(page, view)
    eqn = page.locator(".jxs-e").first
    key = eqn.get_attribute("data-s")
    eqn.hover()
    assert "jxs-hl" in page.locator(f'.jxs-s[data-s="{key}"]').get_attribute("class")


def test_clicking_a_source_line_pins_it_and_opens_collapsed_regions(page):
    view = js.jaxpr(program)(jnp.ones(4))
    view.depth = 0  # nested jaxprs start collapsed
    load(page, view)
    assert page.locator("details.jxs-r[open]").count() == 0
    sin = next(e for e in view.eqns if e.primitive == "sin")
    assert sin.source is not None
    key = list(view.by_line).index(sin.source.key)
    page.locator(f'.jxs-s[data-s="{key}"]').click()
    assert page.locator("details.jxs-r[open]").count() == 1
    row = page.locator(f'.jxs-e[data-s="{key}"]').first
    assert row.is_visible() and "jxs-pin" in row.get_attribute("class")
    page.locator(f'.jxs-s[data-s="{key}"]').click()  # a second click unpins
    assert "jxs-pin" not in row.get_attribute("class")


def test_two_views_on_one_page_do_not_interfere(page):
    a = js.jaxpr(program)(jnp.ones(4))._repr_mimebundle_()["text/html"]
    b = js.jaxpr(jax.grad(program))(jnp.ones(4))._repr_mimebundle_()["text/html"]
    page.set_content(f"<html><body>{a}{b}</body></html>")
    roots = page.locator(".jxs-jaxpr")
    assert roots.count() == 2
    roots.nth(0).locator(".jxs-s").first.hover()
    assert roots.nth(0).locator(".jxs-hl").count() > 0
    assert roots.nth(1).locator(".jxs-hl").count() == 0


def test_long_binder_lines_wrap_inside_the_code_column(page):
    def mlp(params, x):
        for w, b in params:
            x = jax.nn.relu(x @ w + b)
        return x

    params = [(jnp.ones((8, 8)), jnp.ones(8)) for _ in range(60)]
    load(page, js.jaxpr(mlp)(params, jnp.ones((2, 8))))
    head = page.locator(".jxs-code > .jxs-f").first
    assert head.inner_text().startswith("{ lambda ; ")
    box = head.bounding_box()
    column = page.locator(".jxs-code").first.bounding_box()
    assert box is not None and column is not None
    line_height = page.locator(".jxs-e").first.bounding_box()["height"]
    assert box["height"] > 3 * line_height  # wrapped over several lines
    assert box["width"] <= column["width"] + 1  # within the column, no side scroll


def test_the_inline_script_leaves_no_global_behind(page):
    load(page, js.jaxpr(program)(jnp.ones(4)))
    assert page.locator(".jxs-jaxpr[data-jxs-ready]").count() == 1
    assert page.evaluate("typeof window.jaxscope_jaxpr") == "undefined"
