"""``jupyter nbconvert --to html`` of a notebook with a graph and a stepper, read
offline in Chromium: every request to the network is aborted."""

from __future__ import annotations

import nbformat
import pytest

import jaxscope as js

from .exporting import (
    graph_is_interactive,
    kernel_env,
    nbconvert,
    offline,
    page_errors,
    program,
    write_notebook,
)

pytestmark = [pytest.mark.browser, pytest.mark.notebook, pytest.mark.slow]

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def test_exported_html_shows_the_graph_and_stepper_transcript_offline(
    tmp_path, chromium
):
    expected_nodes = len(js.graph(program()["f"])(program()["x"]).nodes)
    write_notebook(tmp_path / "nb.ipynb")
    nbconvert(
        "--execute", "--to", "notebook", "--output", "run.ipynb", "nb.ipynb",
        cwd=tmp_path,
    )  # fmt: skip
    nbconvert("--to", "html", "run.ipynb", cwd=tmp_path)
    # As JupyterLab saves it by default: the outputs without the widget state.
    saved = nbformat.read(tmp_path / "run.ipynb", as_version=4)
    saved.metadata.pop("widgets", None)
    nbformat.write(saved, tmp_path / "saved.ipynb")
    nbconvert("--to", "html", "saved.ipynb", cwd=tmp_path, env=kernel_env())
    # Executed and exported in one go with the default options (which keep the
    # state of the notebook's widgets): what users and CI run.
    nbconvert(
        "--execute", "--to", "html", "--output", "direct.html", "nb.ipynb",
        cwd=tmp_path, env=kernel_env(),
    )  # fmt: skip
    # The stepper's widget stays in the executed notebook, for a live front-end.
    ran = nbformat.read(tmp_path / "run.ipynb", as_version=4)
    assert any(
        "application/vnd.jupyter.widget-view+json" in o.get("data", {})
        for o in ran.cells[-1].outputs
    )

    page = chromium.new_page()
    try:
        errors = page_errors(page)
        aborted = offline(page)
        for name in ("run.html", "saved.html", "direct.html"):
            page.goto((tmp_path / name).as_uri())
            assert graph_is_interactive(page) == expected_nodes, name
            transcript = page.locator(".jaxscope-step")
            assert "Stepper of f" in transcript.inner_text(), name
            text = transcript.inner_text()
            assert "paused" in text or "->" in text, name
            assert page.locator(".jaxscope-step table").count() >= 1, name
        assert aborted, "the page asked for nothing online: the test proves nothing"
        assert not errors, errors
    finally:
        page.close()
