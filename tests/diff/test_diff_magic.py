"""``%jaxdiff`` through a real IPython shell, and the diff's text and HTML."""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

CELL = (
    "import jax, jax.numpy as jnp\n"
    "def old(x):\n"
    "    y = jnp.sin(x)\n"
    "    return y * 3.0\n"
    "def new(x):\n"
    "    y = jnp.sin(x)\n"
    "    return jnp.tanh(y * 3.0)\n"
    "x = jnp.ones((4, 4))\n"
)


def _define(ip) -> int:
    result = ip.run_cell(CELL, store_history=True)
    assert result.success
    return result.execution_count


def test_jaxdiff_of_two_calls_shows_the_changed_line_in_text_and_html(ip):
    count = _define(ip)
    with capture_output() as captured:
        ip.run_line_magic("jaxdiff", "old(x) new(x)")
    (output,) = captured.outputs
    plain, html = output.data["text/plain"], output.data["text/html"]
    assert plain.startswith("ProgramDiff of old → new (jaxpr, optimized HLO)")
    assert f"line In [{count}]:7: " in plain  # the new function's line
    assert "+1 equation (tanh)" in plain
    assert f"@@ In [{count}]:7  return jnp.tanh(y * 3.0)" in plain
    assert "(was: return y * 3.0)" in plain
    assert "jaxscope-diff" in html and "tanh" in html


def test_assigned_jaxdiff_returns_the_diff_and_shows_nothing(ip):
    _define(ip)
    with capture_output() as captured:
        result = ip.run_cell("d = %jaxdiff --no-hlo old(x), old(jnp.ones(3))")
    assert result.success
    assert not captured.outputs
    d = ip.user_ns["d"]
    assert [c.kind for c in d.causes] == ["shape"]
    assert d.levels == ("jaxpr",)


def test_jaxdiff_last_diffs_the_last_recompile(ip):
    _define(ip)
    ip.run_line_magic("recompiles", "on")
    try:
        ip.run_cell("f = jax.jit(old); f(x); f(jnp.ones(3))")
        d = ip.run_cell("%jaxdiff --last").result
    finally:
        ip.run_line_magic("recompiles", "off")
    assert [c.kind for c in d.causes] == ["shape"]
    assert d.changed_lines


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "%jaxdiff needs two calls"),
        ("old(x)", "%jaxdiff needs two call expressions, got `old(x)`"),
        ("old(x) nothing(x)", "name 'nothing' is not defined"),
        ("--last old(x) new(x)", "--last takes no calls"),
    ],
)
def test_bad_jaxdiff_lines_are_one_line_usage_errors(ip, line, message):
    _define(ip)
    with pytest.raises(UsageError, match=re.escape(message)) as info:
        ip.run_line_magic("jaxdiff", line)
    assert "\n" not in str(info.value)


def test_jaxdiff_last_without_the_watcher_says_how_to_start_it(ip):
    with pytest.raises(UsageError, match="run %recompiles on first"):
        ip.run_line_magic("jaxdiff", "--last")


def test_user_strings_are_escaped_in_html_and_plain_in_text(ip):
    cell = (
        "import jax.numpy as jnp\n"
        "def a(x):\n"
        "    return x + 1  # <script>alert('a')</script>\n"
        "def b(x):\n"
        "    return x * 2  # [bold]b[/bold] <script>\n"
    )
    assert ip.run_cell(cell, store_history=True).success
    d = ip.run_cell("%jaxdiff --no-hlo a(jnp.ones(2)) b(jnp.ones(2))").result
    from jaxscope._display import to_html, to_text

    page = to_html(d)
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    assert "[bold]b[/bold]" in to_text(d)
