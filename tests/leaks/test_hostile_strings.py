"""User strings in leak reports (holder names, dict keys, attribute and function
names) are shown as plain text: never rich markup, never terminal control
sequences, always HTML-escaped; and a lone leak is not listed twice."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._display import get_rich, new_console, to_html, to_text
from jaxscope._leaks.checker import Leak, LeakReport
from jaxscope._records import SourceLoc

ESC_CSI = "\x1b[2J\x1b[31m"  # clear screen, red
OSC_LINK = "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07"
HOSTILE = ["cache[/data]", "[bold red]loud[/bold red]", ESC_CSI, OSC_LINK, "<script>"]


def _report(*found_in: str, function: str = "f") -> LeakReport:
    report = LeakReport(raise_on_leak=False)
    for text in found_in:
        report.leaks.append(
            Leak(
                aval="f32[3]",
                transformation="jit",
                created_at=SourceLoc(file="t.py", line=3, function=function),
                found_in=text,
                function=f"{function} at t.py:1",
            )
        )
    return report


def _all_text(report: LeakReport) -> list[str]:
    colour = new_console(200, color=True)
    colour.print(get_rich(report))
    colour.print(get_rich(report.summary()))
    return [
        str(report),
        to_text(report, width=200),
        to_text(report.summary(), width=200),
        report.message(),
        str(report.leaks[0]),
        colour.file.getvalue(),
    ]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_holder_name_renders_as_plain_text(hostile):
    report = _report(f"global dict `d`[{hostile!s}]", function=hostile)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a renderer failure warns and falls back
        texts = _all_text(report)
    for text in texts:
        assert "\x07" not in text and "\x1b]" not in text and "\x1b[2J" not in text
    plain_text = texts[1]
    assert "jaxscope: 1 leaked tracer" in plain_text
    if "[" in hostile and "\x1b" not in hostile:
        assert hostile in plain_text.replace("\n", "")  # markup shown, not applied
    page = to_html(report)
    assert "<script>" not in page and "\x1b" not in page and "\x07" not in page


def test_the_coloured_text_does_not_style_a_markup_lookalike():
    report = _report("global dict `d`['[bold red]loud[/bold red]']")
    console = new_console(200, color=True)
    console.print(get_rich(report))
    out = console.file.getvalue()
    assert "[bold red]loud[/bold red]" in out
    assert "\x1b[1;31mloud" not in out


def test_real_leaks_under_hostile_keys_and_attribute_names_render():
    holder = type("Holder", (), {})()
    cache: dict = {}

    def f(x):
        cache["cache[/data]"] = x * 2
        setattr(holder, "[bold]" + ESC_CSI + "attr", x + 1)
        return x

    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(f)(jnp.ones(2))
    assert len(report) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        texts = _all_text(report)
    assert "cache[/data]" in texts[1]
    for text in texts:
        assert "\x1b[2J" not in text
    assert "\\x1b[2J" in texts[1]  # spelled out


def test_a_lone_leak_is_described_once():
    report = _report("global list `kept`[0]")
    message = report.message()
    assert message.count("global list `kept`[0]") == 1
    assert message.startswith("1 leaked tracer: f32[3] tracer from jit")
    assert "fix:" in message.splitlines()[-1]


def test_several_leaks_are_listed_after_the_headline():
    report = _report("global list `kept`[0]", "global list `kept`[1]")
    lines = report.message().splitlines()
    assert lines[0].startswith("2 leaked tracers: ") and "(and 1 more)" in lines[0]
    assert lines[1].startswith("  1. ") and lines[2].startswith("  2. ")
