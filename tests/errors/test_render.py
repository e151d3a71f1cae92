"""Rendering of ``ErrorReport`` (hand-built records, so JAX releases cannot churn goldens)."""

from __future__ import annotations

import re

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from jaxscope import ErrorReport, SourceLoc
from jaxscope._display import to_html, to_text
from jaxscope._explain.report import Operand


class TextSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "txt"


class HtmlSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "html"


def shape_report(**overrides) -> ErrorReport:
    fields = {
        "kind": "TypeError",
        "message": "dot_general requires contracting dimensions to have the same shape, "
        "got (3,) and (4,). — in `h @ w` with h: f32[4,3], w: f32[4,5]",
        "user_frame": SourceLoc(file="In [3]", line=3, column=11, function="model"),
        "frames": [
            SourceLoc(file="In [4]", line=1, column=0, function="<module>"),
            SourceLoc(file="In [3]", line=3, column=11, function="model"),
        ],
        "hint": "h is f32[4,3] and w is f32[4,5]: the inner dimensions differ (3 vs 4); "
        "did you mean h.T @ w?",
        "category": "shape",
        "is_jax": True,
        "operands": (
            Operand(
                expr="h",
                aval="f32[4,3]",
                origin="`h = jnp.tanh(x)` at In [3]:2",
                origin_loc=SourceLoc(file="In [3]", line=2),
            ),
            Operand(
                expr="w", aval="f32[4,5]", origin="argument w of model (position 1)"
            ),
        ),
        "jax_context": (
            "h: f32[4,3]",
            "w: f32[4,5]",
            "shapes in JAX's message: (3,), (4,)",
        ),
        "source_lines": (
            (1, "def model(x, w):"),
            (2, "    h = jnp.tanh(x)"),
            (3, "    return h @ w"),
        ),
        "span": (11, 16),
        "traceback": "Traceback (most recent call last):\n  ...\nTypeError: dot_general ...\n",
        "original_message": "dot_general requires contracting dimensions ...",
    }
    fields.update(overrides)
    return ErrorReport(**fields)


def test_text_rendering_golden(snapshot):
    assert to_text(shape_report(), width=100) == snapshot(extension_class=TextSnapshot)


def test_html_rendering_golden(snapshot):
    assert to_html(shape_report()) == snapshot(extension_class=HtmlSnapshot)


def test_text_has_caret_under_the_failing_expression():
    lines = to_text(shape_report(), width=100).splitlines()
    current = next(i for i, line in enumerate(lines) if line.startswith("→ 3"))
    assert lines[current].endswith("return h @ w")
    caret = lines[current + 1]
    start = lines[current].index("h @ w")
    assert caret[start : start + 5] == "^^^^^"
    assert caret.strip().strip("│").strip() == "^^^^^"


def test_html_escapes_user_strings_and_folds_the_traceback():
    report = shape_report(
        message="<script>alert(1)</script>",
        hint="use <b>x</b> & y",
        source_lines=((1, "def f():"), (2, "    <script>"), (3, "    return h @ w")),
        traceback="Traceback <script>bad()</script>",
    )
    out = to_html(report)
    assert "<script>alert" not in out and "<script>bad" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "use &lt;b&gt;x&lt;/b&gt; &amp; y" in out
    assert "<details><summary>Full traceback</summary>" in out
    assert "Traceback &lt;script&gt;bad()&lt;/script&gt;" in out


def test_plain_report_renders_without_hint_or_context():
    report = ErrorReport(
        kind="ZeroDivisionError", message="division by zero", user_frame=None
    )
    text = to_text(report, width=80)
    assert text.splitlines()[0] == "ZeroDivisionError"
    assert "division by zero" in text
    assert "hint" not in text
    assert "<b>hint:</b>" not in to_html(report)


def test_report_mimebundle_and_str():
    report = shape_report()
    bundle = report._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert "In [3]:3 in model" in str(report)
    assert 'class="jaxscope-error"' in bundle["text/html"]


@pytest.mark.parametrize("span", [None, (40, 50), (5, 2)])
def test_bad_spans_draw_no_caret(span):
    text = to_text(shape_report(span=span), width=100)
    assert "^" not in text


def test_long_frame_lists_are_elided_in_the_middle():
    frames = [SourceLoc(file="m.py", line=i, function=f"f{i}") for i in range(1, 11)]
    text = to_text(shape_report(frames=frames), width=300)
    line = next(t for t in text.splitlines() if t.startswith("frames: "))
    assert line == (
        "frames: m.py:1 (f1) → … 5 more → m.py:7 (f7) → m.py:8 (f8) → m.py:9 (f9) → m.py:10 (f10)"
    )


HOSTILE = (
    "[bold red]x[/] cache[/data] \x1b[31mred\x1b[0m "
    "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \x9b31m"
)


def hostile_report() -> ErrorReport:
    """Every user-controlled string of a report carries markup and escape sequences."""
    loc = SourceLoc(file="m.py" + HOSTILE, line=1, column=0, function="f" + HOSTILE)
    return shape_report(
        kind="Error" + HOSTILE,
        message=HOSTILE,
        user_frame=loc,
        frames=[loc, SourceLoc(file="n.py", line=2, function=HOSTILE)],
        hint=HOSTILE,
        operands=(Operand(expr=HOSTILE, aval=HOSTILE, origin=HOSTILE),),
        jax_context=(HOSTILE,),
        source_lines=((1, "x = '" + HOSTILE + "'"),),
        span=(0, 1),
        traceback="Traceback " + HOSTILE,
    )


def _no_escapes(text: str) -> None:
    assert "\x1b" not in text and "\x9b" not in text


@pytest.mark.parametrize("color", [False, True])
def test_text_shows_markup_literally_and_escape_sequences_escaped(color):
    text = to_text(hostile_report(), width=400, color=color)
    if color:  # the renderer's own styles are the only escape sequences left
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    _no_escapes(text)
    assert "[bold red]x[/] cache[/data]" in text
    assert "\\x1b[31mred\\x1b[0m" in text
    assert "\\x1b]8;;http://evil\\x1b\\link" in text


def test_html_shows_escape_sequences_escaped():
    out = to_html(hostile_report())
    _no_escapes(out)
    assert "[bold red]x[/] cache[/data]" in out
    assert "\\x1b[31mred" in out


def test_hostile_exception_message_and_function_name_print_as_plain_text(catch):
    import jax

    from jaxscope._explain.explainer import explain

    def relu(x):
        return x if x > 0 else 0.0

    name = "relu[bold]\x1b[31m\x1b]8;;http://evil\x1b\\"
    relu.__name__ = relu.__qualname__ = name
    for exc in (
        catch(jax.jit(relu), 1.0),
        ValueError("bad [bold red]value[/] \x1b[31m\x1b]8;;http://evil\x1b\\"),
    ):
        report = explain(exc)
        text = to_text(report, width=400)
        _no_escapes(text)
        _no_escapes(to_html(report))
        assert "[bold" in text
        assert "\\x1b[31m" in text


def test_an_operand_without_a_type_shows_no_empty_type():
    report = shape_report(
        operands=(Operand(expr="state", origin="argument state of f (position 1)"),),
        jax_context=(),
    )
    text = to_text(report, width=100)
    assert "  state  ← argument state of f (position 1)" in text
    assert "state: " not in text
