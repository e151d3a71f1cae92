"""The stepper widget's ES module in a real Chromium, with a fake anywidget model."""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._stepper.widget import payload

pytestmark = pytest.mark.browser

_ESM = Path(js.__file__).parent / "_static" / "stepper.js"

_HARNESS = """
async ([code, state]) => {
  const url = URL.createObjectURL(new Blob([code], {type: "text/javascript"}));
  const mod = await import(url);
  const handlers = {};
  window.sent = [];
  window.model = {
    get: (k) => (k === "state" ? window.state : undefined),
    on: (ev, fn) => { handlers[ev] = fn; },
    off: () => {},
    send: (msg) => window.sent.push(msg),
    save_changes: () => {},
  };
  window.state = state;
  window.fire = (s) => { window.state = s; handlers["change:state"](); };
  const el = document.createElement("div");
  el.id = "root";
  document.body.append(el);
  mod.default.render({model: window.model, el});
}
"""


def test_buttons_source_highlight_breakpoint_click_and_values(require_chromium):
    from playwright.sync_api import sync_playwright

    def f(x):
        a = x * 2.0
        return jnp.log(a - 1.0)

    s = js.step(f)(jnp.array([1.0, 0.25]))
    state = json.loads(json.dumps(payload(s)))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium)
        try:
            page = browser.new_page()
            page.set_content("<html><body></body></html>")
            page.evaluate(_HARNESS, [_ESM.read_text(), state])
            assert page.locator("button").all_inner_texts() == [
                "step",
                "next",
                "finish",
                "continue",
            ]
            cur = page.locator(".line.cur")
            assert cur.count() == 1 and "a = x * 2.0" in cur.inner_text()
            assert page.locator("table.vars tr").count() == 1 + len(state["values"])
            page.locator("button.cmd-next").click()
            line = state["current"]["line"] + 1
            page.locator(f'.line[data-line="{line}"]').click()
            page.locator('tr.var[data-name="a"]').click()
            assert page.evaluate("window.sent") == [
                {"cmd": "next"},
                {"cmd": "toggle_break", "line": line},
                {"cmd": "expand", "name": "a"},
            ]
            expanded = json.loads(json.dumps(payload(s, expanded={"a"})))
            page.evaluate("(s) => window.fire(s)", expanded)
            assert "array([1.  , 0.25]" in page.locator("tr.full pre").inner_text()
            s.run()
            page.evaluate("(s) => window.fire(s)", json.loads(json.dumps(payload(s))))
            assert page.locator("button[disabled]").count() == 4
            assert "result: Array(" in page.locator(".result").inner_text()
        finally:
            browser.close()
