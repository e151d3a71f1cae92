"""Optimized HLO as displays lay it out: ENTRY first, fused computations under their
fusion op, no source tables, metadata folded into the source column."""

from __future__ import annotations

import re

import jax.numpy as jnp

import jaxscope as js
from jaxscope._display import to_text
from jaxscope._hlo.outline import (
    module_title,
    outline,
    rows,
    short_header,
    without_metadata,
)

X = jnp.ones((8, 4), jnp.float32)


def model(x):
    y = jnp.sin(x) * 2.0 + 1.0
    return jnp.sum(jnp.cos(y) @ x.T, axis=0)


def _computation_names(text: str) -> list[str]:
    return re.findall(r"^(?:ENTRY )?%([\w.\-]+) .*\{$", text, flags=re.M)


def test_optimized_text_starts_at_the_entry_computation_without_source_tables():
    view = js.hlo(model, stage="optimized")(X)
    assert "FileNames" in view.text and "stack_frame_id=" in view.text  # untouched
    shown = to_text(view, width=10_000).splitlines()
    assert shown[1].startswith("HloModule jit_model")
    assert "entry_computation_layout" not in shown[1]
    assert shown[3].startswith("ENTRY %")
    body = "\n".join(shown)
    for word in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
        assert word not in body
    assert "metadata={" not in body and "stack_frame_id" not in body
    assert "# tests/hlo/test_hlo_outline.py:" in body


def test_fused_computations_are_one_summary_line_under_their_fusion_op():
    view = js.hlo(model, stage="optimized")(X)
    layout = outline(view.text.splitlines())
    assert layout.fused
    shown = to_text(view, width=10_000).splitlines()
    for name in layout.fused:
        count = len(layout.computations[name].body)
        summary = f"  {name}: {count} ops"
        at = next(i for i, line in enumerate(shown) if line.strip() == summary.strip())
        # right under the fusion op that calls it
        assert f"calls=%{name}" in shown[at - 1]
        header = view.text.splitlines()[layout.computations[name].header]
        assert header not in shown
    assert f"{len(layout.fused)} fused computations folded" in shown[-1]


def test_expand_fused_prints_each_fused_body_under_its_fusion_op():
    view = js.hlo(model, stage="optimized")(X)
    view.expand_fused = True
    text = to_text(view, width=10_000)
    lines = view.text.splitlines()
    layout = outline(lines)
    for name in layout.fused:
        comp = layout.computations[name]
        header = "    " + lines[comp.header]
        assert header in text
        for index in comp.body:
            assert "    " + without_metadata(lines[index]) in text
    assert "fused computations folded" not in text


def test_every_computation_and_op_is_shown_once_when_expanded():
    view = js.hlo(model, stage="optimized")(X)
    layout = outline(view.text.splitlines())
    listed = [r.index for r in rows(layout, expand_fused=True) if r.kind == "line"]
    expected = [
        i for c in layout.computations.values() for i in (c.header, *c.body, c.end)
    ]
    assert sorted(listed) == sorted(expected)
    assert set(_computation_names(view.text)) == set(layout.computations)


def test_html_nests_fused_bodies_after_the_entry_and_keeps_their_ops_linked():
    view = js.hlo(model, stage="optimized")(X)
    html = view._repr_mimebundle_()["text/html"]
    assert html.index(">ENTRY %") < html.index("jxh-fused")
    sin = next(op for op in view.ops if op.opcode == "sine")
    assert sin.fusion is not None
    # the full path stays in the title
    assert f'title="{sin.source.file}:{sin.source.line}' in html
    assert "stack_frame_id" not in html and "FileNames" not in html


def test_without_metadata_skips_braces_inside_quoted_op_names():
    line = '  %a = f32[] add(%b, %c), metadata={op_name="jit(f)/{x}\\"}" stack_frame_id=3}, x=1'
    assert without_metadata(line) == "  %a = f32[] add(%b, %c), x=1"
    assert without_metadata("  %a = f32[] add(%b, %c)") == "  %a = f32[] add(%b, %c)"


def test_module_title_drops_the_layouts():
    line = "HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[4])->f32[4]}"
    assert module_title(line) == "HloModule jit_f, is_scheduled=true"
    assert module_title("HloModule jit_g") == "HloModule jit_g"


def test_long_computation_headers_count_their_parameters_and_results():
    params = ", ".join(f"p{i}: f32[{i + 1},4]{{1,0}}" for i in range(12))
    results = ", ".join(["/*index=5*/f32[4]{0}"] + ["f32[3,3,32,64]{3,2,1,0}"] * 9)
    line = f"ENTRY %main.28 ({params}) -> ({results}) {{"
    assert short_header(line) == "ENTRY %main.28 (12 parameters) -> (10 results) {"
    short = "%region_0.1 (a: f32[], b: f32[]) -> f32[] {"
    assert short_header(short) == short  # fits: unchanged
    one = f"%fused_computation.3 (param_0.2: f32[{'9,' * 40}9]{{1,0}}) -> f32[4] {{"
    assert short_header(one) == "%fused_computation.3 (1 parameter) -> f32[4] {"


def test_the_terminal_shows_the_entry_header_counted_and_the_html_keeps_it_whole():
    view = js.hlo(model, stage="optimized")(X)
    entry = next(ln for ln in view.text.splitlines() if ln.startswith("ENTRY"))
    shown = to_text(view, width=10_000)
    assert short_header(entry) in shown
    html = view._repr_mimebundle_()["text/html"]
    assert f'title="{entry}"' in html.replace("&gt;", ">")
