"""One Chromium for the export tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def chromium(require_chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=require_chromium,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run"],
        )
        yield browser
        browser.close()
