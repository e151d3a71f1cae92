"""The shaded source view in a real Chromium: the hottest line is the darkest, and
clicking a line opens the list of its ops and fusions (clicking again closes it)."""

from __future__ import annotations

import re

import pytest

from jaxscope._display import to_html
from jaxscope._profile.profile import ProfileView

from . import programs
from .programs import line_of

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(require_chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium)
        yield browser.new_page(viewport={"width": 1400, "height": 900})
        browser.close()


def alpha(style: str) -> float:
    match = re.search(r"rgba\(\d+, \d+, \d+, ([\d.]+)\)", style)
    return float(match.group(1)) if match else 0.0


def test_clicking_a_line_shows_its_ops_and_fusions(page, mlp_profile: ProfileView):
    page.set_content(f"<html><body>{to_html(mlp_profile)}</body></html>")
    hidden = line_of(programs.mlp_loss, "hidden")
    row = page.locator(f'details.jxp-row[data-line="{hidden}"]')
    ops = row.locator("tr.jxp-op")
    assert not ops.first.is_visible()
    row.locator("summary").click()
    assert row.evaluate("d => d.open")
    assert ops.first.is_visible()
    line = mlp_profile.by_line[(programs.__file__, hidden)]
    shown = set(ops.all_inner_texts())
    assert len(shown) == len(mlp_profile.ops_at(programs.__file__, hidden))
    assert any(fusion in "".join(shown) for fusion in line.fusions)
    row.locator("summary").click()
    assert not row.evaluate("d => d.open")


def test_the_hottest_line_is_shaded_darkest(page, mlp_profile: ProfileView):
    page.set_content(f"<html><body>{to_html(mlp_profile)}</body></html>")
    summaries = page.locator("details.jxp-row > summary")
    shading = {
        int(s.evaluate("e => e.parentElement.dataset.line")): alpha(
            s.evaluate("e => getComputedStyle(e).backgroundColor")
        )
        for s in summaries.all()
    }
    hottest = mlp_profile.lines[0].line
    assert shading[hottest] == max(shading.values()) > 0
    cold = page.locator(".jxp-cold").first
    assert alpha(cold.evaluate("e => getComputedStyle(e).backgroundColor")) == 0.0
