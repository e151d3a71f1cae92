"""The viewer in a real Chromium: static HTML export and the anywidget contract.

Any page error, console error or dialog fails the test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax import lax

import jaxscope as js

pytestmark = pytest.mark.browser

STATIC_JS = js.__path__[0] + "/_static/graph.js"


@pytest.fixture
def gpage(graph_browser):
    context = graph_browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    problems: list[str] = []
    pg.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    pg.on(
        "console",
        lambda m: (
            problems.append(f"console.{m.type}: {m.text}")
            if m.type == "error"
            else None
        ),
    )

    def on_dialog(dialog):
        problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    pg.on("dialog", on_dialog)
    pg.problems = problems
    yield pg
    context.close()
    assert not problems, problems


def _open_static(page, tmp_path, view):
    path = tmp_path / "graph.html"
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        + view._repr_mimebundle_()["text/html"]
        + "</body></html>",
        "utf-8",
    )
    page.goto(path.as_uri())
    page.wait_for_selector(".jaxscope-graph[data-state=ready]", timeout=15000)


def _visible(page):
    return int(page.get_attribute(".jaxscope-graph", "data-visible"))


def _settled(page):
    """Wait for layouts running in the worker (large groups) to be drawn."""
    page.wait_for_selector(".jaxscope-graph:not([data-busy])", timeout=30000)


def test_static_html_lays_out_every_node_and_shows_a_node_on_click(
    gpage, tmp_path, nested
):
    page = gpage
    view = js.graph(nested)(jnp.ones(4), 1.0)
    _open_static(page, tmp_path, view)
    # every group here is small, so everything starts expanded
    assert _visible(gpage) == len(view.nodes) == 21
    assert page.locator(".jsg-node").count() == 21
    assert page.locator(".jsg-frame").count() == len(view.groups)
    assert page.locator(".jsg-edge").count() > 10
    page.locator(".jsg-node[data-primitive=sin]").first.click()
    panel = page.locator(".jsg-panel")
    assert panel.locator(".jsg-panel-title").inner_text() == "sin"
    assert "f32[4]" in panel.locator(".jsg-outputs").inner_text()
    assert "accuracy" in panel.locator(".jsg-params").inner_text()
    link = panel.locator(".jsg-source .jsg-line-link").inner_text()
    assert "conftest.py:" in link and "(_inner)" in link
    assert "jnp.sin(x) * 2.0" in panel.locator(".jsg-src-current").inner_text()
    # upstream (x) and downstream (everything after) are highlighted
    assert page.locator(".jsg-node.jsg-selected").count() == 1
    assert page.locator(".jsg-input.jsg-up").count() == 1
    assert page.locator(".jsg-output.jsg-down").count() == 2
    assert "1 upstream" in panel.locator(".jsg-reach").inner_text()


def test_groups_collapse_and_expand_on_click(gpage, tmp_path, nested):
    page = gpage
    view = js.graph(nested)(jnp.ones(4), 1.0)
    _open_static(page, tmp_path, view)
    before = _visible(gpage)
    scan = page.locator(".jsg-frame", has_text="scan").locator(".jsg-frame-head").first
    scan.click()
    assert _visible(gpage) == before - 4 + 1
    collapsed = page.locator(".jsg-group.jsg-collapsed", has_text="scan")
    assert "4 nodes" in collapsed.text_content()
    assert page.locator(".jsg-panel .jsg-panel-title").inner_text() == "scan"
    assert "num_carry" in page.locator(".jsg-panel .jsg-params").inner_text()
    collapsed.click()
    assert _visible(gpage) == before
    page.locator(".jsg-collapse").click()
    assert _visible(gpage) == 2 + 2 + 4 + 6  # inputs, outputs, loose eqns, top groups


def test_search_by_primitive_variable_and_line(gpage, tmp_path, nested):
    page = gpage
    view = js.graph(nested)(jnp.ones(4), 1.0)
    _open_static(page, tmp_path, view)
    box = page.locator(".jsg-search")
    box.fill("sin")
    box.press("Enter")  # searches and goes to the first result
    assert page.locator(".jsg-count").inner_text() == "1 of 2 matches"
    assert page.locator(".jsg-node.jsg-match").count() == 2
    assert page.locator(".jsg-results .jsg-result").count() == 2
    # a variable name: the output of the jit's sin
    sin = next(n for n in view.nodes if n.label == "sin")
    box.fill("%" + sin.outputs[0][0])
    box.press("Enter")
    assert (
        page.locator(".jsg-node.jsg-match").count() == 2
    )  # produced by sin, used by mul
    # a line number: every node from that source line
    assert sin.source is not None
    box.fill(str(sin.source.line))
    box.press("Enter")
    on_line = [n for n in view.nodes if n.source and n.source.line == sin.source.line]
    assert page.locator(".jsg-count").inner_text() == f"1 of {len(on_line)} matches"
    # clicking a result selects it
    page.locator(".jsg-results .jsg-result").first.click()
    assert page.locator(".jsg-node.jsg-selected").count() == 1


def test_a_source_line_highlights_its_nodes(gpage, tmp_path, nested):
    page = gpage
    view = js.graph(nested)(jnp.ones(4), 1.0)
    _open_static(page, tmp_path, view)
    page.locator(
        ".jsg-node[data-primitive=cos], .jsg-node[data-primitive=mul]"
    ).first.click()
    page.locator(".jsg-panel .jsg-source .jsg-line-link").click()
    line_nodes = page.locator(".jsg-node.jsg-line").count()
    assert line_nodes >= 1
    assert "from " in page.locator(".jsg-count").inner_text()


def _big_program(n):
    def f(x):
        with jax.named_scope("big"):
            for _ in range(n):
                x = jnp.sin(x)
        return x

    return js.graph(f)(jnp.ones(2))


def test_large_groups_start_collapsed_and_open_in_chunks(gpage, tmp_path):
    page = gpage
    view = _big_program(400)
    _open_static(page, tmp_path, view)
    assert _visible(gpage) == 3  # input, the collapsed scope, output
    group = page.locator(".jsg-group.jsg-collapsed", has_text="big")
    assert "400 nodes" in group.text_content()
    group.click()
    chunks = page.locator(".jsg-group.jsg-k-chunk")
    assert chunks.count() == 4
    chunks.first.click()
    _settled(page)
    assert page.locator(".jsg-node[data-primitive=sin]").count() == 100
    # search reveals a match inside a collapsed chunk
    page.locator(".jsg-search").fill("sin")
    page.locator(".jsg-search").press("Enter")
    _settled(page)
    assert page.locator(".jsg-count").inner_text() == "1 of 400 matches"
    page.locator(".jsg-results .jsg-result").nth(99).click()
    _settled(page)
    assert page.locator(".jsg-count").inner_text() == "100 of 400 matches"
    assert page.locator(".jsg-node.jsg-selected").count() == 1


def test_user_strings_never_execute(gpage, tmp_path):
    page = gpage
    evil = "<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>"

    def f(x):
        with jax.named_scope(evil):
            y = jnp.sin(x)
        return lax.cond(x.sum() > 0, lambda v: v * 2, lambda v: v, y)

    f.__name__ = f.__qualname__ = evil
    view = js.graph(f)(jnp.ones(2))
    assert any(g.label.startswith("<script>") for g in view.groups)
    _open_static(page, tmp_path, view)
    page.locator(".jsg-node[data-primitive=sin]").click()
    page.locator(".jsg-frame-head").first.click()  # group panel shows the scope label
    page.locator(".jsg-search").fill("<script>")
    page.locator(".jsg-search").press("Enter")
    page.wait_for_timeout(200)
    assert page.evaluate("window.__pwned") is None
    title = page.locator(".jsg-title").inner_text()
    assert title.startswith("graph of <script>")  # shown as text
    assert page.locator("img").count() == 0


WIDGET_HARNESS = """
async ([src, graph]) => {
  const url = URL.createObjectURL(new Blob([src], {type: 'text/javascript'}));
  const mod = await import(url);
  const state = {graph, selected: -1, height: 400};
  const handlers = {};
  const log = [];
  const model = {
    get: (k) => state[k],
    set: (k, v) => { state[k] = v; log.push(['set', k, v]); },
    on: (ev, cb) => { (handlers[ev] = handlers[ev] || []).push(cb); },
    off: (ev, cb) => { handlers[ev] = (handlers[ev] || []).filter((h) => h !== cb); },
    send: (msg) => log.push(['send', msg]),
    save_changes: () => log.push(['save']),
  };
  const el = document.createElement('div');
  document.body.appendChild(el);
  const cleanup = mod.default.render({model, el});
  window.__w = {model, state, handlers, log, el, cleanup,
    fire: (ev) => (handlers[ev] || []).forEach((h) => h())};
  return typeof cleanup;
}
"""


def test_widget_render_contract_with_a_fake_model(gpage, nested):
    page = gpage
    view = js.graph(nested)(jnp.ones(4), 1.0)
    page.set_content("<!doctype html><html><body></body></html>")
    # anywidget injects the widget's _css next to the view; do the same
    page.add_style_tag(content=Path(STATIC_JS[:-3] + ".css").read_text("utf-8"))
    src = Path(STATIC_JS).read_text("utf-8")
    assert (
        page.evaluate(WIDGET_HARNESS, [src, json.loads(json.dumps(view.payload()))])
        == "function"
    )
    page.wait_for_selector(".jaxscope-graph[data-state=ready]")
    assert _visible(gpage) == 21
    page.locator(".jsg-node[data-primitive=exp]").dispatch_event("click")
    log = page.evaluate("window.__w.log")
    exp_index = next(i for i, n in enumerate(view.nodes) if n.label == "exp")
    assert ["set", "selected", exp_index] in log and ["save"] in log
    # a new graph trait re-renders
    small = js.graph(lambda x: jnp.cos(x))(jnp.ones(2)).payload()
    page.evaluate(
        "(g) => { window.__w.state.graph = g; window.__w.fire('change:graph'); }", small
    )
    assert page.locator(".jaxscope-graph").count() == 1
    assert _visible(gpage) == 3
    page.evaluate("window.__w.cleanup()")
    assert page.evaluate("(window.__w.handlers['change:graph'] || []).length") == 0


def _transform(page):
    t = page.get_attribute(".jsg-viewport", "transform")
    found = re.match(r"translate\(([-\d.e]+),([-\d.e]+)\) scale\(([-\d.e]+)\)", t)
    assert found, t
    tx, ty, k = (float(v) for v in found.groups())
    return tx, ty, k


def test_wheel_zooms_drag_pans_and_buttons_zoom(gpage, tmp_path, nested):
    page = gpage
    _open_static(page, tmp_path, js.graph(nested)(jnp.ones(4), 1.0))
    box = page.locator(".jsg-canvas").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    tx0, ty0, k0 = _transform(page)
    page.mouse.move(cx, cy)
    page.mouse.wheel(0, -300)
    page.wait_for_function(
        f"document.querySelector('.jsg-viewport').getAttribute('transform') !== 'translate({tx0},{ty0}) scale({k0})'"
    )
    _, _, k1 = _transform(page)
    assert k1 > k0
    tx1, ty1, _ = _transform(page)
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + 80, cy + 40, steps=4)
    page.mouse.up()
    tx2, ty2, k2 = _transform(page)
    assert (round(tx2 - tx1), round(ty2 - ty1), k2) == (80, 40, k1)
    page.locator(".jsg-zoom-out").click()
    assert _transform(page)[2] < k2
    page.locator(".jsg-fit").click()
    assert _transform(page)[2] == pytest.approx(k0)


def test_a_flat_program_is_split_into_artificial_layers_at_top_level(gpage, tmp_path):
    page = gpage

    def f(x):
        for _ in range(300):
            x = jnp.sin(x)
        return x

    view = js.graph(f)(jnp.ones(2))
    assert len(view.groups) == 0 and len(view.nodes) == 302
    _open_static(page, tmp_path, view)
    # 302 top-level items: 4 artificial layers of at most 100, all closed
    assert _visible(page) == 4
    assert page.locator(".jsg-group.jsg-k-chunk").count() == 4
    last = page.locator(".jsg-group.jsg-k-chunk").nth(3)
    assert "2 nodes" in last.text_content()
    # every equation comes from one line: the layers are told apart by position
    source = view.nodes[1].source
    assert source is not None
    assert f"line {source.line} \u00b7 part 4/4" in last.text_content()
    last.click()
    assert page.locator(".jsg-node").count() == 2


def test_artificial_layers_are_labelled_by_their_source_lines(gpage, tmp_path):
    path = tmp_path / "long_program.py"
    body = "".join(f"    x = x * {1 + k / 1000}\n" for k in range(250))
    path.write_text(f"def f(x):\n{body}    return x\n", "utf-8")
    namespace: dict = {}
    exec(compile(path.read_text("utf-8"), str(path), "exec"), namespace)
    view = js.graph(namespace["f"])(jnp.ones(2))
    _open_static(gpage, tmp_path, view)
    labels = [
        t.split(" ", 1)[1]
        for t in gpage.locator(".jsg-group.jsg-k-chunk .jsg-label").all_text_contents()
    ]
    # 252 items in layers of 100: the input and lines 2-100, lines 101-200, 201-251
    assert labels == ["lines 2\u2013100", "lines 101\u2013200", "lines 201\u2013251"]


@pytest.mark.slow
def test_a_flat_program_of_15000_equations_shows_and_opens(gpage, tmp_path):
    # 15,002 items make 151 layers, themselves split in 2: their ids once collided,
    # a layer became its own child and the viewer died with "Invalid array length"
    def f(x):
        for _ in range(15000):
            x = x + 1.0
        return x

    view = js.graph(f)(jnp.ones(2))
    _open_static(gpage, tmp_path, view)
    outer = gpage.locator(".jsg-group.jsg-k-chunk")
    assert outer.count() == 2
    assert "10000 nodes" in outer.first.text_content()
    outer.first.click()
    _settled(gpage)
    assert gpage.locator(".jsg-group.jsg-k-chunk").count() == 100 + 1
    gpage.locator(".jsg-group.jsg-k-chunk", has_text="part 2/151").click()
    _settled(gpage)
    assert gpage.locator(".jsg-node[data-primitive=add]").count() == 100
