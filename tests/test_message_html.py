"""Messages quote names and code in backquotes: HTML shows those spans as ``<code>``
(never the backquotes), terminals keep the plain text, and user strings stay escaped."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp

import jaxscope as js
from jaxscope._display import message_html, to_html, to_text

leaked: list = []


def test_a_leak_names_its_holder_in_code_not_backquotes():
    @jax.jit
    def f(x):
        leaked.append(x)
        return x * 2

    with js.check_leaks(raise_on_leak=False) as report:
        f(jnp.ones(3))
    leaked.clear()
    assert "global list `leaked`[0]" in to_text(report)
    page = to_html(report)
    assert "<code>leaked</code>[0]" in page
    assert "`" not in page


def test_an_error_hint_quotes_code_as_code():
    @jax.jit
    def g(x):
        if x > 0:
            return x
        return -x

    try:
        g(1.0)
    except Exception as exc:
        report = js.explain(exc)
    assert "Python `if`" in to_text(report)
    page = to_html(report)
    assert "Python <code>if</code>" in page
    assert "<code>x &gt; 0</code>" in page
    assert "`" not in re.sub(r"<pre>.*?</pre>", "", page, flags=re.S)


def test_a_backquoted_user_string_is_still_escaped():
    assert message_html("global `<img src=x onerror=alert(1)>`") == (
        "global <code>&lt;img src=x onerror=alert(1)&gt;</code>"
    )
    assert message_html("one ` alone") == "one ` alone"
