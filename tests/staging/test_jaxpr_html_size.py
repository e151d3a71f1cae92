"""The jaxpr HTML of a long program stays under its size budget (issue #16)."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._display import to_html
from jaxscope._jaxpr import render as render_jaxpr


def _long_function(tmp_path, n_lines: int):
    # A real file of distinct lines, one equation each, as in a user's module.
    body = "".join(
        f"    x = x * {1 + i * 1e-6:.6f}  # line {i}\n" for i in range(n_lines)
    )
    source = f"def long_fn(x):\n{body}    return x\n"
    path = tmp_path / "long_program.py"
    path.write_text(source, "utf-8")
    namespace: dict[str, Any] = {"__name__": "long_program"}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["long_fn"]


@pytest.mark.slow
def test_html_of_50k_equations_from_50k_lines_is_under_1_mb(tmp_path):
    view = js.jaxpr(_long_function(tmp_path, 50_000))(jnp.ones(3))
    assert len(view.eqns) == 50_000 and len(view.by_line) == 50_000
    html = view._repr_mimebundle_()["text/html"]
    assert len(html.encode()) <= 1_000_000
    assert "49300 more source lines not shown" in html


def test_source_panel_shows_a_capped_list_and_the_rest_behind_a_click(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(render_jaxpr, "HTML_SOURCE_ROWS", 5)
    monkeypatch.setattr(render_jaxpr, "HTML_SOURCE_MORE_ROWS", 10)
    view = js.jaxpr(_long_function(tmp_path, 40))(jnp.ones(3))
    html = to_html(view)  # the renderer's markup (readers get a styled copy)
    panel = html[html.index('<div class="jxs-src">') :]
    assert panel.count('class="jxs-s"') == 15
    shown, hidden = panel.split('<details class="jxs-more">', 1)
    assert shown.count('class="jxs-s"') == 5
    assert "<summary" in hidden and "10 more source lines</summary>" in hidden
    assert "25 more source lines not shown" in html
    # the equation column still links every equation it shows to its line number
    assert "# line 39" not in panel  # line 40 of the file is past the cap
    assert "x = x * 1.000039  # line 39" in view.text_by_line()
