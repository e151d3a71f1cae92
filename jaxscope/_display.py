"""Renderer entry points, one per output kind, dispatched on the record/view type.

``rich_renderable(obj)`` returns a rich renderable (terminal, and ``str()`` through a
colourless console, so the two cannot drift apart); ``html(obj)`` returns an HTML
string with every user string escaped. Feature modules register their handlers with
``@rich_renderable.register`` / ``@html.register``; they are imported on first use so
``import jaxscope`` never loads rich.

Rendering never kills a cell: a failing HTML renderer falls back to escaped text with a
warning that names it.
"""

from __future__ import annotations

import functools
import html as _html
import importlib
import io
import os
import warnings
from typing import Any

from jaxscope._format import MAX_WORD as MAX_WORD
from jaxscope._format import printable as printable

_loaded_features: set[str] = set()


def load_renderers_for(cls: type) -> None:
    """Import the ``render`` module of each jaxscope feature folder in ``cls``'s MRO.

    A view or record defined in ``jaxscope._<feature>.<module>`` is drawn by the
    handlers that ``jaxscope._<feature>.render`` registers; importing it on first use
    keeps rich out of ``import jaxscope``. A feature without its render module is a
    packaging error and raises.
    """
    for klass in cls.__mro__:
        parts = klass.__module__.split(".")
        if len(parts) < 3 or parts[0] != "jaxscope" or not parts[1].startswith("_"):
            continue
        feature = f"jaxscope.{parts[1]}"
        if feature not in _loaded_features:
            importlib.import_module(f"{feature}.render")
            _loaded_features.add(feature)


@functools.singledispatch
def rich_renderable(obj: Any) -> Any:
    """A rich renderable for ``obj`` (falls back to its ``repr``)."""
    from rich.text import Text

    return Text(repr(obj))


@functools.singledispatch
def html(obj: Any) -> str:
    """An HTML fragment for ``obj`` (falls back to escaped plain text)."""
    return pre(to_text(obj))


@functools.singledispatch
def widget(obj: Any) -> Any:
    """An anywidget showing ``obj`` (registered by features that have one)."""
    raise TypeError(f"jaxscope has no widget for {type(obj).__name__}")


def widget_of(obj: Any) -> Any:
    """``widget(obj)`` after loading the renderers of ``obj``'s feature."""
    load_renderers_for(type(obj))
    return widget(obj)


def plain(text: str, style: str = "") -> Any:
    """A user string as rich ``Text``: never parsed as markup, control characters
    spelled out. Every user string in a text renderer goes through this."""
    from rich.text import Text

    return Text(printable(text), style=style)


def escape(text: object) -> str:
    """A user string for HTML: control characters spelled out, then escaped
    (quotes included, so it may sit in an attribute)."""
    return _html.escape(printable(str(text)), quote=True)


def pre(text: str, css_class: str = "jaxscope-text") -> str:
    """Plain text as an escaped ``<pre>`` block."""
    return f'<pre class="{css_class}">{_html.escape(text)}</pre>'


def get_rich(obj: Any) -> Any:
    """``rich_renderable`` after loading the renderers of ``obj``'s feature."""
    load_renderers_for(type(obj))
    return rich_renderable(obj)


def new_console(width: int = 100, *, color: bool = False, file: Any = None) -> Any:
    """A deterministic rich ``Console`` (colourless unless asked)."""
    from rich.console import Console

    return Console(
        width=width,
        file=file if file is not None else io.StringIO(),
        color_system="standard" if color else None,
        force_terminal=color,
        force_jupyter=False,  # inside Jupyter rich would display instead of writing to `file`
        legacy_windows=False,
        highlight=False,
        soft_wrap=False,
    )


def safe_repr(obj: Any) -> str:
    """``repr(obj)``, or ``<TypeName object>`` when that raises too."""
    try:
        return repr(obj)
    except Exception:
        return f"<{type(obj).__name__} object>"


def _renderer_failed(kind: str, obj: Any, exc: BaseException, instead: str) -> None:
    warnings.warn(
        f"jaxscope: the {kind} renderer for {type(obj).__name__} failed "
        f"({type(exc).__name__}: {exc}); showing {instead} instead",
        RuntimeWarning,
        stacklevel=3,
    )


def to_text(obj: Any, width: int | None = None) -> str:
    """Plain text: the rich rendering of ``obj`` through a colourless console.

    Never raises: a failing renderer gives ``repr(obj)`` and a ``RuntimeWarning``.
    """
    if width is None:
        width = _terminal_width()
    console = new_console(width)
    try:
        console.print(get_rich(obj))
    except Exception as exc:  # rendering must never kill a cell
        _renderer_failed("text", obj, exc, "its repr")
        return printable(safe_repr(obj))
    return console.file.getvalue().rstrip("\n")


def to_html(obj: Any) -> str:
    """HTML for ``obj``; on a renderer failure, escaped text and a warning."""
    try:
        load_renderers_for(type(obj))
        return html(obj)
    except Exception as exc:  # rendering must never kill a cell
        _renderer_failed("HTML", obj, exc, "text")
        return pre(to_text(obj))


# Outputs that JupyterLab's jaxscope extension (extension/labextension/) draws itself,
# so a saved notebook needs no widget model; other front-ends read the text/html.
GRAPH_MIME = "application/vnd.jaxscope.graph+json"
STEPPER_MIME = "application/vnd.jaxscope.stepper+json"


def mimebundle(obj: Any) -> dict[str, str]:
    """``text/plain`` always, ``text/html`` too (for ``_repr_mimebundle_``)."""
    return {"text/plain": to_text(obj), "text/html": to_html(obj)}


def safe_rich(obj: Any) -> Any:
    """``get_rich(obj)``, or its repr as plain rich ``Text`` if the renderer fails."""
    try:
        return get_rich(obj)
    except Exception as exc:  # rendering must never kill a cell
        from rich.text import Text

        _renderer_failed("text", obj, exc, "its repr")
        return Text(printable(safe_repr(obj)))


def _terminal_width() -> int:
    try:
        return max(60, min(160, os.get_terminal_size().columns))
    except OSError:
        return 100


class Renderable:
    """Mixin for views: ``str``, ``__rich__`` and ``_repr_mimebundle_`` via the dispatch."""

    __slots__ = ()

    def __str__(self) -> str:
        return to_text(self)

    def __rich__(self) -> Any:
        return safe_rich(self)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, str]:
        return mimebundle(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self) if cycle else str(self))
