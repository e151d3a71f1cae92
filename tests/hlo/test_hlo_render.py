"""HloView displays: coloured text with source lines, cost table, escaped HTML."""

from __future__ import annotations

import os
import re

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._display import to_html, to_text
from jaxscope._hlo import render as render_hlo
from jaxscope._source import short_path

HERE = os.path.abspath(__file__)
X = jnp.ones((8, 4), jnp.float32)


def model(x):
    y = jnp.sin(x) * 2.0  # MARK sin
    return jnp.sum(y)  # MARK sum


def scoped(x):
    with jax.named_scope("<script>alert(1)</script>"):
        return jnp.sin(x)


@pytest.mark.parametrize("stage", ["stablehlo", "hlo", "optimized"])
def test_text_shows_every_line_with_source_comments(stage, line_of):
    view = js.hlo(model, stage=stage)(X)
    view.expand_fused = True  # the sine is fused in the optimized module
    text = to_text(view, width=400)
    first, *rest = text.splitlines()
    assert first.startswith(
        {"stablehlo": "StableHLO", "hlo": "HLO", "optimized": "optimized HLO"}[stage]
    )
    assert "of model" in first
    sin_line = line_of(model, "MARK sin")
    # the path as views show it: relative to the working directory under it
    assert f"# {short_path(HERE)}:{sin_line}" in text
    assert os.path.relpath(HERE) == short_path(HERE) or not HERE.startswith(
        os.getcwd() + os.sep
    )
    if stage == "stablehlo":
        # every line of the text is shown, in order (the annotations are appended)
        shown = [line.split("  # ")[0].rstrip() for line in rest]
        assert shown == [line.rstrip() for line in view.text.splitlines()]


def test_str_is_the_colourless_rich_rendering():
    view = js.hlo(model)(X)
    text = str(view)
    assert "\x1b[" not in text
    assert "HLO of model" in text
    assert "cost and memory" not in text


def test_show_cost_adds_the_cost_and_memory_table():
    view = js.hlo(model, stage="optimized")(X)
    view.show_cost = True
    text = to_text(view, width=120)
    assert "cost and memory" in text
    for key in ("flops", "bytes_accessed", "argument_bytes", "temp_bytes"):
        assert key in text
    assert re.search(r"argument_bytes\s+│\s+128", text)
    html = view._repr_mimebundle_()["text/html"]
    assert 'class="jxh-cost"' in html and "argument_bytes" in html


def test_cost_rows_say_when_the_backend_gives_nothing():
    class NoAnalysis:
        cost = None
        memory = None

    rows = render_hlo.cost_rows(NoAnalysis())
    assert rows == [
        ("cost", "not available on this backend"),
        ("memory", "not available on this backend"),
    ]


@pytest.mark.parametrize("stage", ["stablehlo", "hlo", "optimized"])
def test_html_links_ops_and_source_lines(stage, line_of):
    view = js.hlo(model, stage=stage)(X)
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    html = bundle["text/html"]
    sin_line = line_of(model, "MARK sin")
    # the source pane shows the user's code of that line
    assert "y = jnp.sin(x) * 2.0" in html
    match = re.search(r'<div class="jxh-s" data-k="(\d+)"[^>]*title="([^"]*)"', html)
    assert match is not None
    keys = set(re.findall(r'class="jxh-s" data-k="(\d+)"', html))
    op_keys = set(re.findall(r'class="jxh-l jxh-op" data-k="(\d+)"', html))
    assert keys and op_keys == keys
    assert f"{HERE}:{sin_line}" in html
    # one hover rule per source line, both directions
    assert f':has([data-k="{match.group(1)}"]:hover)' in html


def test_html_escapes_user_strings():
    for stage in ("stablehlo", "hlo", "optimized"):
        html = js.hlo(scoped, stage=stage)(X)._repr_mimebundle_()["text/html"]
        assert "alert(1)</script>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        # the only script element is jaxscope's own
        assert html.count("<script>") == 1


def test_notebook_source_lines_are_escaped(ip):
    ip.run_cell(
        "import jax.numpy as jnp\n"
        "def tagged(x):\n"
        "    return jnp.sin(x)  # <b>bold</b>\n",
        store_history=True,
    )
    view = ip.run_cell("import jaxscope as js; js.hlo(tagged)(jnp.ones(3))").result
    html = view._repr_mimebundle_()["text/html"]
    assert "# &lt;b&gt;bold&lt;/b&gt;" in html
    assert "<b>bold</b>" not in html


def test_long_modules_are_capped_with_a_note(monkeypatch):
    view = js.hlo(model, stage="stablehlo")(X)
    total = len(view.text.splitlines())
    monkeypatch.setattr(render_hlo, "DISPLAY_MAX_LINES", 10)
    text = to_text(view, width=300)
    assert f"... {total - 10} more lines not shown" in text
    html = view._repr_mimebundle_()["text/html"]
    assert f"... {total - 10} more lines not shown" in html
    assert html.count('<div class="jxh-l') <= 10
    assert view.text.count("\n") + 1 >= total  # the data is untouched


def test_long_optimized_modules_keep_the_entry_computation_in_the_cap(monkeypatch):
    view = js.hlo(model, stage="optimized")(X)
    entry = next(line for line in view.text.splitlines() if line.startswith("ENTRY"))
    monkeypatch.setattr(render_hlo, "DISPLAY_MAX_LINES", 3)
    text = to_text(view, width=1000)
    assert entry in text
    assert "more lines not shown (view.text has them all)" in text
    html = view._repr_mimebundle_()["text/html"]
    assert html.count('<div class="jxh-l') <= 3 + 1  # the HloModule title row
    assert "more lines not shown" in html
    # fused bodies get only what the cap leaves: none here
    assert "(not shown here; view.text has them)" in html


def test_fused_computations_fold_in_long_modules(monkeypatch):
    view = js.hlo(model, stage="optimized")(X)
    html = to_html(view)  # the renderer's markup (readers get a styled copy)
    fused = r'<details class="jxh-comp jxh-fused"( open)?><summary> *[\w.]+: \d+ ops'
    assert re.search(fused, html).group(1) == " open"
    monkeypatch.setattr(render_hlo, "FOLD_FUSED_OVER_LINES", 0)
    html = to_html(view)
    assert re.search(fused, html).group(1) is None
    assert re.search(
        r'<details class="jxh-comp" open><summary title="ENTRY[^"]*">ENTRY', html
    )
    # the source tables and the op metadata are left out (the source column has them)
    assert "FileNames" not in html and "stack_frame_id" not in html


def test_html_element_ids_are_unique_per_display():
    view = js.hlo(model)(X)
    first = re.search(r'id="(jxh-[^"]+)"', view._repr_mimebundle_()["text/html"]).group(
        1
    )
    second = re.search(
        r'id="(jxh-[^"]+)"', view._repr_mimebundle_()["text/html"]
    ).group(1)
    assert first != second


def test_repr_names_function_stage_and_size():
    view = js.hlo(model, stage="stablehlo")(X)
    assert repr(view).startswith("<HloView of model: stage='stablehlo', ")
