"""Rendering never kills a cell: a failing text or HTML renderer falls back to the
object's repr (escaped in HTML) with a warning that names the renderer."""

from __future__ import annotations

import io

import jax.numpy as jnp
import pytest
from rich.console import Console

import jaxscope as js
from jaxscope import _display
from jaxscope._display import Renderable, html, rich_renderable


class Exploding(Renderable):
    __slots__ = ()

    def __repr__(self) -> str:
        return "<Exploding <b>view</b>>"


@rich_renderable.register
def _(obj: Exploding) -> object:
    raise RuntimeError("text renderer broke")


@html.register
def _(obj: Exploding) -> str:
    raise RuntimeError("html renderer broke")


def test_failing_text_renderer_falls_back_to_repr_with_a_warning():
    with pytest.warns(RuntimeWarning, match="text renderer for Exploding failed"):
        assert str(Exploding()) == "<Exploding <b>view</b>>"


def test_failing_renderers_still_give_a_full_mimebundle():
    with pytest.warns(RuntimeWarning) as record:
        bundle = Exploding()._repr_mimebundle_()
    assert bundle["text/plain"] == "<Exploding <b>view</b>>"
    assert "&lt;Exploding &lt;b&gt;view&lt;/b&gt;&gt;" in bundle["text/html"]
    assert "<b>" not in bundle["text/html"]
    messages = " ".join(str(w.message) for w in record)
    assert "HTML renderer for Exploding failed" in messages


def test_rich_console_printing_a_broken_view_prints_its_repr():
    console = Console(file=io.StringIO(), width=80, color_system=None)
    with pytest.warns(RuntimeWarning, match="text renderer"):
        console.print(Exploding())
    assert "<Exploding <b>view</b>>" in console.file.getvalue()


def test_a_repr_that_raises_too_gives_the_type_name():
    class Worse(Exploding):
        __slots__ = ()

        def __repr__(self) -> str:
            raise ValueError("no repr either")

    with pytest.warns(RuntimeWarning):
        assert str(Worse()) == "<Worse object>"


def test_a_real_view_whose_renderer_breaks_falls_back():
    view = js.jaxpr(lambda x: jnp.sin(x))(jnp.ones(3))

    class BrokenJaxprView(type(view)):
        __slots__ = ()

    def broken(obj: object) -> object:
        raise KeyError("boom")

    rich_renderable.register(BrokenJaxprView, broken)
    html.register(BrokenJaxprView, broken)
    view.__class__ = BrokenJaxprView
    with pytest.warns(RuntimeWarning, match="text renderer for BrokenJaxprView"):
        assert _display.to_text(view) == repr(view)
    with pytest.warns(RuntimeWarning) as record:
        assert "JaxprView" in _display.to_html(view)
    assert any("HTML renderer for BrokenJaxprView" in str(w.message) for w in record)


def test_user_strings_are_plain_text_without_terminal_controls():
    console = Console(file=io.StringIO(), width=80, color_system="standard")
    console.print(
        _display.plain("[bold red]x[/] cache[/data] \x1b[31mred\x1b]8;;http://x\x1b\\")
    )
    out = console.file.getvalue()
    assert "[bold red]x[/] cache[/data]" in out
    assert "\\x1b[31mred" in out and "\x1b]8" not in out
    assert _display.printable("a\tb\nc\x07") == "a\tb\nc\\x07"
