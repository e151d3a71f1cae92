"""The graph viewer's source links go to the cell or the file, as far as the page
allows: in a page without a front-end (nbconvert's HTML, a notebook without the
JupyterLab extension) they scroll to the cell's prompt, and a file line is offered
to copy; a front-end that handles the viewer's event (the JupyterLab plugin, tested
in tests/export/test_jupyterlab_links.py) takes over."""

from __future__ import annotations

import html

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js

pytestmark = pytest.mark.browser

# A notebook cell, compiled as IPython names cell 3 (``In [3]``).
CELL = """\
def loss(w, x):
    h = jnp.tanh(x @ w)
    with jax.named_scope("head"):
        return jnp.sum(h * h)
"""


def _cell_loss():
    namespace = {"jax": jax, "jnp": jnp}
    exec(compile(CELL, "<ipython-input-3-0123456789ab>", "exec"), namespace)
    return namespace["loss"]


def _page(view, before: str = "", first: int = 3) -> str:
    """nbconvert's JupyterLab template, cut down: cell 3's input, a tall cell, and
    the graph's output in a later cell."""

    def cell(n: int, source: str, output: str = "") -> str:
        return (
            '<div class="jp-Cell jp-CodeCell"><div class="jp-Cell-inputWrapper">'
            f'<div class="jp-InputArea"><div class="jp-InputPrompt">In\u00a0[{n}]:</div>'
            f"<pre>{html.escape(source)}</pre></div></div>{output}</div>"
        )

    graph = view._repr_mimebundle_()["text/html"]
    return (
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        + before
        + cell(first, CELL)
        + cell(4, "x = 1", '<div style="height:2500px"></div>')
        + cell(5, "%jaxgraph loss(w, x)", f'<div class="jp-OutputArea">{graph}</div>')
        + "</body></html>"
    )


@pytest.fixture
def page(graph_browser):
    context = graph_browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, errors


def _open(page, tmp_path, text: str) -> None:
    path = tmp_path / "nb.html"
    path.write_text(text, "utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector(".jaxscope-graph[data-state=ready]", timeout=15000)
    page.locator(".jaxscope-graph").scroll_into_view_if_needed()


def _in_viewport(page, selector: str) -> bool:
    return page.locator(selector).first.evaluate(
        "e => { const r = e.getBoundingClientRect();"
        " return r.bottom > 0 && r.top < window.innerHeight; }"
    )


def test_a_cells_link_scrolls_to_its_prompt_in_a_page_without_a_front_end(
    page, tmp_path
):
    view = js.graph(_cell_loss())(jnp.ones((4, 4)), jnp.ones((2, 4)))
    assert any(n.source and n.source.file == "In [3]" for n in view.nodes)
    _open(page, tmp_path, _page(view))
    assert not _in_viewport(page, ".jp-InputArea")
    page.locator(".jsg-node[data-primitive=tanh]").first.click()
    go = page.locator(".jsg-panel .jsg-source .jsg-goto")
    assert go.inner_text() == "\u2197 go to the cell"
    go.click()
    first = page.locator(".jp-InputArea").first
    assert _in_viewport(page, ".jp-InputArea")
    assert "solid" in first.evaluate("e => e.style.outline")
    assert page.locator(".jsg-count").inner_text() == "scrolled to In [3] (line 2)"
    # the line's nodes are highlighted as by the link itself
    assert page.locator(".jsg-node.jsg-line").count() >= 1


def test_a_cell_not_on_the_page_is_said_so(page, tmp_path):
    view = js.graph(_cell_loss())(jnp.ones((4, 4)), jnp.ones((2, 4)))
    _open(page, tmp_path, _page(view, first=13))  # cell 13's prompt, not cell 3's
    page.locator(".jsg-node[data-primitive=tanh]").first.click()
    page.locator(".jsg-panel .jsg-source .jsg-goto").click()
    assert page.locator(".jsg-count").inner_text() == "In [3] is not on this page"
    assert not _in_viewport(page, ".jp-InputArea")


def test_a_front_end_that_handles_the_event_takes_over(page, tmp_path):
    view = js.graph(_cell_loss())(jnp.ones((4, 4)), jnp.ones((2, 4)))
    listener = (
        "<script>window.asked = [];"
        "document.addEventListener('jaxscope:source', (ev) => {"
        " window.asked.push([ev.detail.file, ev.detail.line, ev.detail.cell]);"
        " ev.detail.result = 'handled'; ev.preventDefault(); });</script>"
    )
    _open(page, tmp_path, _page(view, before=listener))
    page.locator(".jsg-node[data-primitive=tanh]").first.click()
    page.locator(".jsg-panel .jsg-source .jsg-goto").click()
    assert page.evaluate("window.asked") == [["In [3]", 2, 3]]
    assert page.locator(".jsg-count").inner_text() == "handled"
    assert not _in_viewport(page, ".jp-InputArea")  # the page did not scroll


def test_a_file_line_is_offered_to_copy_where_the_page_cannot_open_it(page, tmp_path):
    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w))

    view = js.graph(loss)(jnp.ones((4, 4)), jnp.ones((2, 4)))
    _open(page, tmp_path, _page(view))
    page.locator(".jsg-node[data-primitive=tanh]").first.click()
    go = page.locator(".jsg-panel .jsg-source .jsg-goto")
    assert go.inner_text() == "\u2197 open the file"
    go.click()
    tanh = next(n for n in view.nodes if n.primitive == "tanh")
    copy = page.locator(".jsg-panel .jsg-copy")
    assert copy.input_value() == f"{__file__}:{tanh.source.line}"
    assert copy.evaluate(
        "e => document.activeElement === e"
        " && e.selectionEnd - e.selectionStart === e.value.length"
    )
    assert "open it in your editor" in page.locator(".jsg-count").inner_text()


def test_a_groups_source_lines_each_have_a_link_to_go_to(page, tmp_path):
    view = js.graph(_cell_loss())(jnp.ones((4, 4)), jnp.ones((2, 4)))
    _open(page, tmp_path, _page(view))
    page.locator(".jsg-frame", has_text="head").locator(".jsg-frame-head").click()
    assert page.locator(".jsg-panel .jsg-panel-title").inner_text() == "head"
    row = page.locator(".jsg-panel .jsg-lines .jsg-line-row")
    assert row.count() == 1
    assert row.locator(".jsg-line-link").inner_text().startswith("In [3]:4")
    row.locator(".jsg-goto").click()
    assert _in_viewport(page, ".jp-InputArea")
    assert page.locator(".jsg-count").inner_text() == "scrolled to In [3] (line 4)"
