"""In a real JupyterLab, the graph viewer's source links select the notebook cell
that defined the code (by its execution count) and open a file under the server's
root at the line, through jaxscope's Lab plugin."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from playwright.sync_api import expect

from .exporting import kernel_env
from .test_jupyterlab import Lab, _open

pytestmark = [pytest.mark.browser, pytest.mark.notebook, pytest.mark.slow]

MODULE = """\
import jax.numpy as jnp


def loss(w, x):
    h = jnp.tanh(x @ w)
    return jnp.sum(h * h)
"""

CELLS = [
    "import jax.numpy as jnp\nimport jaxscope as js\nimport mod\n\n%load_ext jaxscope",
    "def loss(w, x):\n    h = jnp.tanh(x @ w)\n    return jnp.sum(h * h)",
    *[f"# filler {i}\nx = jnp.ones((2, 4))\nw = jnp.ones((4, 4))" for i in range(12)],
    "%jaxgraph loss(w, x)",
    "%jaxgraph mod.loss(w, x)",
]


def _notebook(root):
    (root / "mod.py").write_text(MODULE, "utf-8")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    env = kernel_env()
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": root}}
    ).execute(env=env)
    nbformat.write(nb, root / "links.ipynb")
    return nb


def _graph(page, k: int):
    graph = page.locator(".jaxscope-lab-graph").nth(k)
    graph.scroll_into_view_if_needed(timeout=60_000)
    graph.locator(".jaxscope-graph[data-state=ready]").wait_for(timeout=60_000)
    return graph


def test_source_links_select_the_cell_and_open_the_file(tmp_path, chromium):
    root = tmp_path / "notebooks"
    root.mkdir()
    nb = _notebook(root)
    assert nb.cells[1].execution_count == 2
    lab = Lab(tmp_path / "home", root)
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        lab.start(tmp_path / "lab.log")
        _open(page, lab, "links.ipynb")
        page.keyboard.press("Escape")  # a kernel dialog, if any
        graph = _graph(page, 0)
        graph.locator(".jsg-node[data-primitive=tanh]").first.click()
        go = graph.locator(".jsg-panel .jsg-source .jsg-goto")
        assert go.inner_text() == "\u2197 go to the cell"
        go.click()
        expect(graph.locator(".jsg-count")).to_have_text("selected In [2] (line 2)")
        page.wait_for_function(
            "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex === 1"
        )
        # scrolled to it: the cell is inside the notebook's visible area
        page.wait_for_function(
            """() => { const nb = window.jupyterapp.shell.currentWidget.content;
            const cell = nb.widgets[1].node.getBoundingClientRect();
            const box = nb.node.getBoundingClientRect();
            return cell.top >= box.top - 1 && cell.top < box.bottom; }""",
            timeout=10_000,
        )

        graph = _graph(page, 1)
        graph.locator(".jsg-node[data-primitive=tanh]").first.click()
        go = graph.locator(".jsg-panel .jsg-source .jsg-goto")
        assert go.inner_text() == "\u2197 open the file"
        go.click()
        page.wait_for_function(
            "() => { const w = window.jupyterapp.shell.currentWidget;"
            " return w && w.context && w.context.path === 'mod.py'"
            " && w.content.editor.getCursorPosition().line === 4; }",
            timeout=30_000,
        )
        assert not errors, errors
    finally:
        page.close()
        lab.stop()
