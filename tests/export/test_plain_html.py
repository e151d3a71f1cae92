"""The outputs' text/html in a plain page with no kernel and no Jupyter, as VS Code
and GitHub-style viewers show it; GitHub also strips scripts."""

from __future__ import annotations

import pytest

import jaxscope as js

from .exporting import graph_is_interactive, offline, page_errors, program

pytestmark = pytest.mark.browser


def _page_with(tmp_path, html: str):
    path = tmp_path / "output.html"
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'></head><body>"
        + html
        + "</body></html>",
        "utf-8",
    )
    return path.as_uri()


def _graph_html() -> tuple[str, int]:
    ns = program()
    view = js.graph(ns["f"])(ns["x"])
    return view._repr_mimebundle_()["text/html"], len(view.nodes)


def test_graph_html_alone_is_the_interactive_viewer(tmp_path, chromium):
    html, nodes = _graph_html()
    page = chromium.new_page()
    try:
        errors = page_errors(page)
        offline(page)
        page.goto(_page_with(tmp_path, html))
        assert graph_is_interactive(page) == nodes
        assert not errors, errors
    finally:
        page.close()


def test_graph_html_without_scripts_shows_a_readable_summary(tmp_path, chromium):
    html, nodes = _graph_html()
    context = chromium.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        offline(page)
        page.goto(_page_with(tmp_path, html))
        text = page.locator(".jaxscope-graph-static").inner_text()
        assert f"{nodes} nodes" in text and "GraphView of f" in text
        assert "needs JavaScript" in text
        assert "scan" in text and "head" in text  # the groups, as the text tree
        assert page.locator(".jaxscope-graph-static").is_visible()
    finally:
        context.close()


def test_stepper_transcript_html_reads_without_scripts(tmp_path, chromium):
    from jaxscope._display import STEPPER_MIME
    from jaxscope._stepper.widget import StepperWidget

    ns = program()
    widget = StepperWidget(js.step(ns["f"])(ns["x"]))
    try:
        bundle = widget._repr_mimebundle_()
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        assert data[STEPPER_MIME] == {"version": 1}
        context = chromium.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(_page_with(tmp_path, data["text/html"]))
        text = page.locator(".jaxscope-step").inner_text()
        assert "Stepper of f" in text and "tanh" in text
        context.close()
    finally:
        widget.close()
