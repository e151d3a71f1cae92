"""The stepper widget's ES module in a real Chromium, with a fake anywidget model."""

from __future__ import annotations

import json
from pathlib import Path

import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._stepper.widget import StepperWidget, payload

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
                {"cmd": "toggle_break", "line": line, "file": state["source"]["file"]},
                {"cmd": "expand", "name": "a"},
            ]
            s.next()  # a = x * 2.0 ran: the user's names come first
            page.evaluate("(s) => window.fire(s)", json.loads(json.dumps(payload(s))))
            labels = page.locator("td.label").all_inner_texts()
            assert labels == ["x (a)", "a (b)"]
            expanded = json.loads(json.dumps(payload(s, expanded={"a"})))
            page.evaluate("(s) => window.fire(s)", expanded)
            assert "array([1.  , 0.25]" in page.locator("tr.full pre").inner_text()
            s.run()
            page.evaluate("(s) => window.fire(s)", json.loads(json.dumps(payload(s))))
            assert page.locator("button[disabled]").count() == 4
            assert "result: Array(" in page.locator(".result").inner_text()
        finally:
            browser.close()


# Two files: the program's and a helper module's, each with equations.
HELPER = (
    """\
import jax.numpy as jnp


def helper(v):
    w = jnp.cos(v) + 1.0  # a long line: """
    + "x" * 300
    + """
    return w * 3.0
"""
)
MAIN = """\
import jax.numpy as jnp
from widget_helper import helper


def program(x):
    y = jnp.sin(x)
    z = helper(y)
    return z - y
"""


@pytest.fixture(scope="module")
def two_files(tmp_path_factory):
    import sys

    folder = tmp_path_factory.mktemp("widget_prog")
    (folder / "widget_helper.py").write_text(HELPER)
    (folder / "widget_main.py").write_text(MAIN)
    sys.path.insert(0, str(folder))
    try:
        import widget_main

        yield widget_main.program, folder
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("widget_main", None)
        sys.modules.pop("widget_helper", None)


def _page(browser, state, width=1000, dark=False):
    page = browser.new_page(viewport={"width": width, "height": 800})
    body = '<body data-jp-theme-light="false">' if dark else "<body>"
    page.set_content(
        f"<html><head><style>{_DARK if dark else ''}</style></head>{body}</body></html>"
    )
    page.evaluate(_HARNESS, [_ESM.read_text(), state])
    return page


def _fresh(widget):
    return json.loads(json.dumps(widget.state))


def test_breakpoints_in_any_file_of_the_program(require_chromium, two_files):
    from playwright.sync_api import sync_playwright

    program, _ = two_files
    widget = StepperWidget(js.step(program)(jnp.arange(3.0)))
    files = [f["file"] for f in widget.state["files"]]
    assert [Path(f).name for f in files] == ["widget_main.py", "widget_helper.py"]
    helper_file = files[1]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium)
        try:
            page = _page(browser, _fresh(widget))
            options = page.locator("select.files option")
            assert options.count() == 2
            page.locator("select.files").select_option(helper_file)
            assert page.evaluate("window.sent") == [
                {"cmd": "show_file", "file": helper_file}
            ]
            widget.command("show_file", file=helper_file)
            page.evaluate("(s) => window.fire(s)", _fresh(widget))
            assert (
                page.locator(".line.cur").count() == 0
            )  # the current line is elsewhere
            line = 5  # w = jnp.cos(v) + 1.0
            page.locator(f'.line[data-line="{line}"]').click()
            sent = page.evaluate("window.sent")[-1]
            assert sent == {"cmd": "toggle_break", "line": line, "file": helper_file}
            widget.command(sent["cmd"], line=sent["line"], file=sent["file"])
            page.evaluate("(s) => window.fire(s)", _fresh(widget))
            assert page.locator(".line.pinned").get_attribute("data-line") == str(line)
            widget.command("continue")
            assert widget.stepper.reason == "breakpoint"
            assert widget.stepper.current.source.line == line
            assert Path(widget.stepper.current.source.file).name == "widget_helper.py"
            page.evaluate("(s) => window.fire(s)", _fresh(widget))
            cur = page.locator(".line.cur")
            assert (
                cur.get_attribute("data-line") == str(line)
                and "w = jnp.cos" in cur.inner_text()
            )
        finally:
            browser.close()


def test_long_source_lines_wrap_inside_the_pane(require_chromium, two_files):
    from playwright.sync_api import sync_playwright

    program, _ = two_files
    s = js.step(program)(jnp.arange(3.0))
    s.run(until="cos")
    state = json.loads(json.dumps(payload(s)))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium)
        try:
            page = _page(browser, state, width=700)
            box = page.evaluate(
                """() => {
                  const src = document.querySelector('.src');
                  const text = document.querySelector('.line.cur .text');
                  const r = text.getBoundingClientRect(), p = src.getBoundingClientRect();
                  return {scroll: src.scrollWidth, client: src.clientWidth, right: r.right,
                          paneRight: p.right, height: r.height,
                          lineHeight: parseFloat(getComputedStyle(text).lineHeight) || 15,
                          text: text.textContent};
                }"""
            )
            assert box["text"].endswith("x" * 300)  # the whole line is there
            assert box["scroll"] <= box["client"] + 1  # nothing hidden to the right
            assert box["right"] <= box["paneRight"] + 1
            assert box["height"] >= 3 * box["lineHeight"]  # wrapped onto several rows
        finally:
            browser.close()


# JupyterLab 4's dark theme (theme-dark-extension/variables.css), the variables the
# widget reads; the page background is the notebook's.
_DARK = """
:root{--jp-layout-color0:#111111;--jp-layout-color1:#212121;--jp-layout-color2:#424242;
--jp-ui-font-color0:rgba(255,255,255,1);--jp-ui-font-color1:rgba(255,255,255,0.87);
--jp-content-font-color0:rgba(255,255,255,1);--jp-content-font-color1:rgba(255,255,255,1);
--jp-content-font-color2:rgba(255,255,255,0.7);--jp-border-color1:#616161}
body{background:var(--jp-layout-color1);color:var(--jp-ui-font-color1)}
"""

# WCAG contrast of an element's text on what is behind it: colours are read as the
# browser computes them (rgb(), rgba() and color(srgb ...) from color-mix), the
# backgrounds of the element and its ancestors composited over white.
_CONTRAST = """
(selector) => {
  const parse = (c) => {
    let m = c.match(/^rgba?\\(([^)]+)\\)$/);
    if (m) {
      const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
      return [p[0] / 255, p[1] / 255, p[2] / 255, p.length > 3 ? p[3] : 1];
    }
    m = c.match(/^color\\(srgb ([^)]+)\\)$/);
    if (m) {
      const p = m[1].split(/[ \\/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    throw new Error('unparsed colour ' + c);
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lum = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const el = document.querySelector(selector);
  if (!el) throw new Error('no ' + selector);
  const layers = [];
  for (let n = el; n; n = n.parentElement) layers.push(parse(getComputedStyle(n).backgroundColor));
  let bg = [1, 1, 1, 1];
  for (const layer of layers.reverse()) bg = over(layer, bg);
  const fg = over(parse(getComputedStyle(el).color), bg);
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  return {ratio: (hi + 0.05) / (lo + 0.05), bgLum: lum(bg)};
}
"""

_TEXTS = (
    ".status",
    ".file select",
    ".line.cur .text",
    ".line.cur .no",
    ".line.pinned .text",
    ".line.pinned .bp",
    ".line:not(.cur):not(.pinned) .text",
    "th",
    "td.label",
    "tr.nan td",
    ".error",
)


@pytest.mark.parametrize("dark", [True, False], ids=["dark", "light"])
def test_text_contrast_in_jupyterlab_themes(require_chromium, two_files, dark):
    from playwright.sync_api import sync_playwright

    program, _ = two_files
    s = js.step(program)(jnp.array([0.0, float("nan"), 2.0]))  # a NaN row
    main = s.current.source.file
    s.toggle_breakpoint(f"{main}:8")  # a pinned line below the current one (6)
    state = json.loads(json.dumps(payload(s, error="an error message")))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium)
        try:
            page = _page(browser, state, dark=dark)
            assert page.locator(".line.cur").get_attribute("data-line") == "6"
            assert page.locator(".line.pinned").get_attribute("data-line") == "8"
            assert page.locator("tr.nan").count() >= 1
            assert page.locator(".file select").count() == 1
            for selector in _TEXTS:
                found = page.evaluate(_CONTRAST, selector)
                assert found["ratio"] >= 4.5, (selector, found)
                if dark and selector.startswith(".line"):
                    assert found["bgLum"] < 0.2  # dark highlights, not light ones
            # The buttons are the graph viewer's: the theme's background and text, a
            # rounded border of the theme's colour; not the browser's native grey.
            button = page.evaluate(_CONTRAST, "button.cmd-step")
            assert button["ratio"] >= 4.5, button
            assert (button["bgLum"] < 0.2) if dark else (button["bgLum"] > 0.9), button
            look = page.evaluate(
                "() => { const b = getComputedStyle(document.querySelector('button.cmd-step'));"
                " const w = getComputedStyle(document.querySelector('.jxs-step'));"
                " return [b.borderTopLeftRadius, b.borderTopColor, w.getPropertyValue('--jxs-border').trim(),"
                " b.backgroundColor, w.backgroundColor]; }"
            )
            assert look[0] == "4px", look
            assert look[3] == look[4], look  # the widget's own background
        finally:
            browser.close()


# A widget output in JupyterLab: ipywidgets lays the view out in a flex box whose
# ancestors hide what overflows (.jp-OutputArea-output, .lm-Widget).
_LAB_OUTPUT = """
() => {
  const root = document.getElementById('root');
  const area = document.createElement('div');
  area.style.cssText = 'width:600px;overflow:hidden';
  const box = document.createElement('div');
  box.style.cssText = 'display:flex;flex-direction:column;overflow:hidden';
  root.replaceWith(area);
  area.append(box);
  box.append(root);
}
"""


def test_wide_values_table_scrolls_inside_a_lab_output(require_chromium):
    # Many wide values: the table scrolls inside its own pane, whose scrollbars are on
    # screen beside the source (not under forty rows, where the table looks clipped).
    from playwright.sync_api import sync_playwright

    def many(x):
        for _ in range(30):
            x = jnp.tanh(x) * 1.01
        return x

    s = js.step(many)(jnp.arange(64.0).reshape(8, 8) / 7.0)
    for _ in range(50):
        s.next()
    state = json.loads(json.dumps(payload(s)))
    assert len(state["values"]) > 30
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium)
        try:
            page = _page(browser, state, width=900)
            page.evaluate(_LAB_OUTPUT)
            box = page.evaluate(
                """() => {
                  const area = document.getElementById('root').parentElement.parentElement;
                  const values = document.querySelector('.values');
                  const src = document.querySelector('.src');
                  const last = [...document.querySelectorAll('th')].pop();
                  const a = area.getBoundingClientRect(), v = values.getBoundingClientRect();
                  values.scrollLeft = values.scrollWidth;
                  const l = last.getBoundingClientRect();
                  return {areaRight: a.right, valuesRight: v.right, lastRight: l.right,
                          valuesHeight: v.height, srcHeight: src.getBoundingClientRect().height,
                          scroll: values.scrollWidth, client: values.clientWidth};
                }"""
            )
            assert box["scroll"] > box["client"]  # the table is wider than its pane
            assert (
                box["valuesRight"] <= box["areaRight"] + 1
            )  # the pane fits the output
            # Scrolled to its end, the last column is inside the output, not clipped.
            assert box["lastRight"] <= box["areaRight"] + 1
            # The pane is no taller than the source pane: its scrollbar is on screen.
            assert box["valuesHeight"] <= max(box["srcHeight"], 400) + 2, box
        finally:
            browser.close()
