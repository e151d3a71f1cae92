"""User strings in recompile reports are plain text: never markup, never terminal
escapes, always escaped in HTML."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._display import get_rich, new_console, to_html, to_text
from jaxscope._recompiles.watcher import (
    Cause,
    RecompileEvent,
    RecompileEvents,
    RecompileSummary,
    SummaryRow,
)
from jaxscope._records import SourceLoc

MARKUP = "[bold red]step[/]"
CLOSING = "cache[/data]"
OSC = "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\"
CSI = "\x1b[2J\x1b[31mred"


def _hostile_event():
    return RecompileEvent(
        function=MARKUP + OSC,
        defined_at=SourceLoc(file="m[/x].py", line=3),
        call_site=SourceLoc(file="In [4]", line=2),
        causes=[
            Cause(
                kind="tree_structure",
                path=f"d['{CLOSING}']",
                before=f"with ['{CLOSING}']",
                after=CSI,
                hint=f"pass [{CLOSING}] {MARKUP} {OSC}",
            )
        ],
        seconds=0.01,
        signature=((f"d['{CLOSING}']", "f32[2]"),),
    )


def _hostile_summary():
    return RecompileSummary(
        [
            SummaryRow(
                function=MARKUP + CSI,
                defined_at=SourceLoc(file=CLOSING, line=1),
                calls=2,
                traces=2,
                compiles=2,
                seconds=0.5,
                top_causes=[("shape", 2)],
            )
        ]
    )


def _colored(obj):
    console = new_console(200, color=True)
    console.print(get_rich(obj))
    return console.file.getvalue()


@pytest.mark.parametrize(
    "make",
    [
        _hostile_event,
        lambda: RecompileEvents([_hostile_event()], title="t"),
        _hostile_summary,
    ],
    ids=["event", "events", "summary"],
)
def test_text_renders_user_strings_literally(make):
    obj = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a renderer failure warns: fail instead
        text = to_text(obj, width=400)
        colored = _colored(obj)
    assert "[bold red]step[/]" in text
    assert "\x1b" not in text
    assert "\\x1b" in text  # spelled out, visibly
    # Styles come only from jaxscope: the user's markup styles nothing, and no
    # escape sequence of the user's reaches the terminal.
    assert "[bold red]step[/]" in colored
    assert "\x1b]8" not in colored and "\x1b[2J" not in colored
    assert "\x1b[31mred" not in colored


def test_event_str_and_description_spell_out_escapes():
    ev = _hostile_event()
    for text in (str(ev), str(ev.causes[0])):
        assert "\x1b" not in text


@pytest.mark.parametrize(
    "make",
    [
        _hostile_event,
        lambda: RecompileEvents([_hostile_event()], title="<t>"),
        _hostile_summary,
    ],
    ids=["event", "events", "summary"],
)
def test_html_escapes_user_strings(make):
    out = to_html(make())
    assert "[bold red]step[/]" in out
    assert "<script" not in out and "\x1b" not in out


def test_real_log_with_a_bracket_key_renders():
    f = jax.jit(lambda d: d[CLOSING].sum())
    with js.watch_recompiles() as log:
        f({CLOSING: jnp.ones(2)})
        f({CLOSING: jnp.ones(3)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        str(log)
        text = to_text(log, width=400)
        html = to_html(log)
    assert f"shape d['{CLOSING}']: f32[2] → f32[3]" in text
    assert "cache[/data]" in html


def test_function_named_with_markup_does_not_style_the_summary():
    def make():
        def fn(x):
            return x + 1

        fn.__qualname__ = MARKUP
        return fn

    f = jax.jit(make())
    with js.watch_recompiles() as log:
        f(jnp.ones(2))
    colored = _colored(log.summary())
    assert MARKUP in colored
