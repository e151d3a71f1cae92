"""The HLO HTML in a real Chromium: hover and click link source lines and ops."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import jaxscope as js

pytestmark = pytest.mark.browser


def model(x):
    a = jnp.sin(x)
    b = jnp.cos(a) * 2.0
    return jnp.sum(b)


@pytest.fixture(scope="module")
def hlo_page(require_chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium)
        page = browser.new_page(viewport={"width": 1400, "height": 800})
        yield page
        browser.close()


def _load(page, view) -> None:
    html = view._repr_mimebundle_()["text/html"]
    page.set_content(f"<html><body>{html}</body></html>")
    page.mouse.move(0, 0)  # off any line: the last test's pointer must not hover


def _background(locator) -> str:
    return locator.evaluate("e => getComputedStyle(e).backgroundColor")


def test_hovering_a_source_line_highlights_its_ops_only(hlo_page):
    view = js.hlo(model, stage="optimized")(jnp.ones((4, 4)))
    page = hlo_page
    _load(page, view)
    sources = page.locator(".jxh-s")
    assert sources.count() == len(view.by_line) >= 2
    key = sources.nth(0).get_attribute("data-k")
    mine = page.locator(f'.jxh-op[data-k="{key}"]')
    others = page.locator(f'.jxh-op:not([data-k="{key}"])')
    before_mine, before_other = _background(mine.first), _background(others.first)
    sources.nth(0).hover()
    assert _background(mine.first) != before_mine
    assert _background(others.first) == before_other


def test_hovering_an_op_highlights_its_source_line(hlo_page):
    view = js.hlo(model, stage="hlo")(jnp.ones((4, 4)))
    page = hlo_page
    _load(page, view)
    op = page.locator(".jxh-op").first
    key = op.get_attribute("data-k")
    source = page.locator(f'.jxh-s[data-k="{key}"]')
    before = _background(source)
    op.hover()
    assert _background(source) != before


def test_clicking_pins_the_highlight_and_opens_folded_fusions(hlo_page, monkeypatch):
    from jaxscope._hlo import render as render_hlo

    monkeypatch.setattr(render_hlo, "FOLD_FUSED_OVER_LINES", 0)
    view = js.hlo(model, stage="optimized")(jnp.ones((4, 4)))
    page = hlo_page
    _load(page, view)
    folded = page.locator("details.jxh-comp:not([open]) .jxh-op").first.element_handle()
    assert not folded.is_visible()
    key = folded.get_attribute("data-k")
    page.locator(f'.jxh-s[data-k="{key}"]').click()
    assert page.locator(f'.jxh-hit[data-k="{key}"]').count() >= 2
    assert folded.is_visible()
    # a second click unpins
    page.locator(f'.jxh-s[data-k="{key}"]').click()
    assert page.locator(".jxh-hit").count() == 0
