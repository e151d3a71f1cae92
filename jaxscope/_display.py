"""Renderer entry points, one per output kind, dispatched on the record/view type.

``rich_renderable(obj)`` returns a rich renderable (terminal, and ``str()`` through a
colourless console, so the two cannot drift apart); ``html(obj)`` returns an HTML
string with every user string escaped; ``plain_text(obj, width)``, registered only
where a feature has a faster layout of the same characters, stands in for the
colourless console. Feature modules register their handlers with
``@rich_renderable.register`` / ``@html.register``; they are imported on first use so
``import jaxscope`` never loads rich.

Rendering never kills a cell: a failing text or HTML renderer falls back to the
object's repr (escaped in HTML) with a warning that names it. Views never override
``__str__``, ``_repr_mimebundle_`` or the width: they inherit ``Renderable``, and declare
what differs as class attributes the protocol reads (``wrap_text``, ``extra_mime``).
"""

from __future__ import annotations

import copy
import functools
import html as _html
import importlib
import io
import re
import shutil
import sys
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from jaxscope._format import MAX_WORD as MAX_WORD
from jaxscope._format import printable as printable
from jaxscope._htmlstyle import inline_styles
from jaxscope._paths import running_shell

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
def plain_text(obj: Any, width: int) -> str | None:
    """Colourless text for ``obj``, where its feature lays out the same characters
    faster than rich draws them (None: draw with rich). Tests check both agree."""
    return None


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


_CODE_SPAN = re.compile(r"`([^`\n]+)`")


def message_html(text: object) -> str:
    """A message for HTML: escaped as ``escape`` does, each `backquoted` span (a
    name, an expression) as ``<code>``. Terminals and ``str()`` show the message as
    plain text, backquotes included; every renderer of a message in HTML uses this."""
    return _CODE_SPAN.sub(r"<code>\1</code>", escape(text))


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


def _renderer_failed(
    kind: str, obj: Any, exc: BaseException, instead: str, stacklevel: int = 3
) -> None:
    warnings.warn(
        f"jaxscope: the {kind} renderer for {type(obj).__name__} failed "
        f"({type(exc).__name__}: {exc}); showing {instead} instead",
        RuntimeWarning,
        stacklevel=stacklevel,
    )


def to_text(
    obj: Any,
    width: int | None = None,
    *,
    color: bool = False,
    soft_wrap: bool | None = None,
) -> str:
    """Plain text (ANSI-coloured with ``color``): the rich rendering of ``obj``.

    ``width`` defaults to ``terminal_width()``; ``soft_wrap`` (lines left unwrapped)
    to ``not obj.wrap_text``. Never raises: a failing renderer gives ``repr(obj)`` and a
    ``RuntimeWarning``.
    """
    try:
        return rendered_text(obj, width, color=color, soft_wrap=soft_wrap)
    except Exception as exc:  # rendering must never kill a cell
        _renderer_failed("text", obj, exc, "its repr")
        return printable(safe_repr(obj))


def rendered_text(
    obj: Any,
    width: int | None = None,
    *,
    color: bool = False,
    soft_wrap: bool | None = None,
) -> str:
    """``to_text`` that raises what the renderer raises, for a front-end with a
    fallback of its own (IPython's traceback, the script's own error)."""
    if width is None:
        width = terminal_width()
    if soft_wrap is None:
        soft_wrap = not getattr(obj, "wrap_text", True)
    if not color and _has_plain_text(type(obj)):
        text = plain_text(obj, width)
        if text is not None:
            return text
    console = new_console(width, color=color)
    console.print(get_rich(obj), soft_wrap=soft_wrap)
    return console.file.getvalue().rstrip("\n")


def _has_plain_text(cls: type) -> bool:
    """Whether ``plain_text`` has a handler made for the rich renderer ``cls`` uses
    (one registered for the same class, not inherited past a subclass's own)."""
    load_renderers_for(cls)
    mine = _registered_for(plain_text, cls)
    return mine is not object and mine is _registered_for(rich_renderable, cls)


def _registered_for(dispatcher: Any, cls: type) -> type:
    return next((k for k in cls.__mro__ if k in dispatcher.registry), object)


def to_html(obj: Any) -> str:
    """HTML for ``obj``; on a renderer failure, escaped text and a warning."""
    page = _html_or_none(obj)
    return page if page is not None else pre(to_text(obj))


def _html_or_none(obj: Any) -> str | None:
    """The HTML renderer's output, or None (with the warning) when it fails."""
    try:
        load_renderers_for(type(obj))
        return html(obj)
    except Exception as exc:  # rendering must never kill a cell
        _renderer_failed("HTML", obj, exc, "text", stacklevel=4)
        return None


def display_html(obj: Any) -> str:
    """``to_html(obj)`` as a front-end gets it: every path that shows HTML to a
    reader (the mime bundle, notebook formatters, widgets' static parts) uses this.

    The view's ``<style>`` rules are also copied into its markup's ``style=``
    attributes (``_htmlstyle``), so it keeps its layout where a sanitizer (an
    untrusted notebook in JupyterLab, a GitHub-like page) drops the block, unless
    the object's class sets ``static_styles = False`` (a script-drawn viewer).
    """
    return _for_readers(obj, to_html(obj))


def _for_readers(obj: Any, page: str) -> str:
    if not getattr(obj, "static_styles", True):
        return page
    try:
        return inline_styles(page)
    except Exception as exc:  # rendering must never kill a cell
        _renderer_failed("inline style", obj, exc, "its HTML as it was", stacklevel=4)
        return page


# Outputs that JupyterLab's jaxscope extension (extension/labextension/) draws itself,
# so a saved notebook needs no widget model; other front-ends read the text/html.
GRAPH_MIME = "application/vnd.jaxscope.graph+json"
STEPPER_MIME = "application/vnd.jaxscope.stepper+json"


def mimebundle(obj: Any) -> dict[str, Any]:
    """``text/plain`` always (ANSI-coloured in a terminal IPython with colours on),
    ``text/html`` too, and the object's ``extra_mime`` parts when its HTML rendered
    (for ``_repr_mimebundle_``)."""
    colour = colour_terminal()
    bundle: dict[str, Any] = {"text/plain": to_text(obj, color=colour)}
    page = _html_or_none(obj)
    if page is None:
        bundle["text/html"] = pre(to_text(obj) if colour else bundle["text/plain"])
    else:
        bundle["text/html"] = _for_readers(obj, page)
        extra = getattr(obj, "extra_mime", {})
        bundle.update({kind: copy.deepcopy(data) for kind, data in extra.items()})
    return bundle


def safe_rich(obj: Any) -> Any:
    """``get_rich(obj)``, or its repr as plain rich ``Text`` if the renderer fails."""
    try:
        return get_rich(obj)
    except Exception as exc:  # rendering must never kill a cell
        from rich.text import Text

        _renderer_failed("text", obj, exc, "its repr")
        return Text(printable(safe_repr(obj)))


def terminal_width() -> int:
    """The width text displays wrap at: the terminal's (``COLUMNS`` first), clamped to
    60 to 160 columns; 100 where there is no terminal (a notebook, a pipe)."""
    return max(60, min(160, shutil.get_terminal_size((100, 24)).columns))


def colour_terminal() -> bool:
    """Whether a terminal IPython with colours on is running (its displays get ANSI
    colour; Jupyter front-ends show the HTML, plain ``str()`` stays colourless)."""
    terminal = sys.modules.get("IPython.terminal.interactiveshell")
    shell_class = getattr(terminal, "TerminalInteractiveShell", None)
    if shell_class is None:  # never imported: no terminal shell can be running
        return False
    shell = running_shell()
    if not isinstance(shell, shell_class):
        return False
    return str(getattr(shell, "colors", "nocolor")).lower() not in (
        "nocolor",
        "none",
        "",
    )


class Renderable:
    """Mixin for views: ``str``, ``__rich__`` and ``_repr_mimebundle_`` via the dispatch.

    Subclasses never override these; they declare what differs:

    - ``wrap_text``: False for a view whose renderer lays out its own lines (each
      line then prints whole in ``str()`` and terminals, rather than wrapped at the
      terminal width);
    - ``extra_mime``: more parts of the mime bundle, sent only with a working HTML
      rendering (a front-end that draws them reads the data from that HTML);
    - ``static_styles``: False for a view whose HTML a script draws, whose
      ``<style>`` block is then left as it is rather than also copied into the
      markup's ``style=`` attributes.
    """

    __slots__ = ()

    wrap_text: ClassVar[bool] = True
    extra_mime: ClassVar[Mapping[str, Any]] = {}
    static_styles: ClassVar[bool] = True

    def __str__(self) -> str:
        return to_text(self)

    def __rich__(self) -> Any:
        return safe_rich(self)

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> dict[str, Any]:
        return mimebundle(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self) if cycle else str(self))
