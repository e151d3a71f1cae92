"""The jaxpr HTML's highlighted and pinned lines stay readable in light and dark
notebook themes: the text keeps its contrast against the highlight."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import jaxscope as js

pytestmark = pytest.mark.browser

THEMES = {
    # JupyterLab's layout colour and main text colour in each theme.
    "light": ("#ffffff", "rgba(0, 0, 0, 0.87)"),
    "dark": ("#111111", "rgba(255, 255, 255, 0.87)"),
}

# Each text element of a row: its colour against the composited background.
CONTRASTS = """row => {
  const rgba = (s) => { const m = s.match(/[\\d.]+/g).map(Number);
    return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const over = (top, under) => { const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]); };
  const background = (e) => { const layers = [];
    for (let n = e; n; n = n.parentElement) layers.push(rgba(getComputedStyle(n).backgroundColor));
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255, 1]); };
  const lum = (c) => { const f = (v) => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05); };
  return [row, ...row.querySelectorAll('span')].filter(e => e.textContent.trim())
    .map(e => { const bg = background(e);
      return [e.className, ratio(over(rgba(getComputedStyle(e).color), bg), bg)]; });
}"""


def program(x):
    y = jnp.cos(x) * 2.0
    return jnp.sum(y)


@pytest.fixture(scope="module")
def browser(require_chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=require_chromium)
        yield b
        b.close()


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_a_pinned_line_is_as_readable_as_the_others(browser, theme):
    background, text = THEMES[theme]
    html = js.jaxpr(program)(jnp.ones(4))._repr_mimebundle_()["text/html"]
    page = browser.new_page(viewport={"width": 1200, "height": 700})
    try:
        page.set_content(
            f"<html><body style='background:{background};color:{text}'>"
            f"{html}</body></html>"
        )
        row = page.locator(".jxs-e").first
        before = row.evaluate(CONTRASTS)
        row.click()
        page.mouse.move(1190, 690)  # off the line: pinned, not hovered
        assert "jxs-pin" in row.get_attribute("class")
        pinned = row.evaluate(CONTRASTS)
        for (cls, ratio), (_, unpinned) in zip(pinned, before, strict=True):
            # Never worse than half the contrast the line had unpinned, and the
            # theme's own text colour (the "=" and names) stays plainly readable.
            assert ratio >= min(unpinned, 7) / 2, (theme, cls, ratio, unpinned)
        assert pinned[0][1] >= 4.5, (theme, pinned)
    finally:
        page.close()
