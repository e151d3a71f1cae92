"""Rendering never kills a cell: a failing text or HTML renderer falls back to the
object's repr (escaped in HTML) with a warning that names the renderer."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import pkgutil
import re
import warnings

import jax
import jax.numpy as jnp
import pytest
from rich.console import Console

import jaxscope
import jaxscope as js
from jaxscope import _display
from jaxscope._compile.cell import collect_compiles
from jaxscope._display import Renderable, html, rich_renderable
from jaxscope._recompiles.records import RecompileEvents


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


# --------------------------------------------------------------------------- every view
#
# One small real instance of every ``Renderable`` in the package, built as users
# build them. A new view without an entry here fails
# ``test_every_renderable_has_an_entry``.

_X = jnp.arange(1.0, 5.0)
_SCALE = 1.0


def _mlp(x):
    h = jnp.tanh(x * 2.0 + 1.0)
    return jnp.sum(jax.lax.scan(lambda c, a: (c + a, c), 0.0, h)[0] * h)


def _leak_report():
    kept = []

    @jax.jit
    def keep(x):
        kept.append(x)
        return x + 1

    with js.check_leaks(raise_on_leak=False) as report:
        keep(_X)
    return report


def _recompile_log():
    @jax.jit
    def double(x):
        return x * 2

    with js.watch_recompiles() as log:
        double(_X)
        double(jnp.ones(3))
    return log


def _purity_log():
    global _SCALE

    def scaled(x):
        return x * _SCALE

    with js.watch_purity() as log:
        jax.jit(scaled)(_X)
    _SCALE += 1.0
    return log


def _error_report():
    def positive(x):
        if x > 0:
            return x
        return -x

    try:
        jax.jit(positive)(1.0)
    except Exception as exc:
        return js.explain(exc)
    raise AssertionError("tracing should have failed")


def _cell_compiles():
    with collect_compiles() as out:
        jax.jit(lambda x: x * 3.0)(_X)
    return out[0]


def _mesh_array():
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    return jax.device_put(jnp.ones((8, 4)), sharding)


VIEWS = {
    "JaxprView": lambda: js.jaxpr(_mlp)(_X),
    "HloView": lambda: js.hlo(_mlp)(_X),
    "GraphView": lambda: js.graph(_mlp)(_X),
    "ErrorReport": _error_report,
    "LeakReport": _leak_report,
    "LeakSummary": lambda: _leak_report().summary(),
    "RecompileLog": _recompile_log,
    "RecompileSummary": lambda: _recompile_log().summary(),
    "RecompileEvents": lambda: RecompileEvents(_recompile_log().events, title="t"),
    "PurityLog": _purity_log,
    "PuritySummary": lambda: _purity_log().summary(),
    "ShardingView": lambda: js.sharding(_mesh_array()),
    "ProgramShardingView": lambda: js.shardings(lambda a: a.sum(0))(_mesh_array()),
    "Stepper": lambda: js.step(_mlp)(_X).run(until=lambda e, v: e.primitive == "scan"),
    "NanFinding": lambda: js.find_nan(lambda x: jnp.log(x - 3.0))(_X),
    "NanInInput": lambda: js.find_nan(jnp.sin)(jnp.array([1.0, jnp.nan])),
    "CompiledNanFinding": lambda: js.find_nan(
        lambda x: jnp.log(x - 3.0), mode="compiled"
    )(_X),
    "ProbeView": lambda: js.probe(_mlp, at=["h"])(_X),
    "ProfileView": lambda: js.profile(_mlp, repeat=1, warmup=0)(_X),
    "MemoryView": lambda: js.memory(_mlp)(_X),
    "CompileProfile": lambda: js.compile_profile(_mlp)(_X),
    "CellCompiles": _cell_compiles,
    "ProgramDiff": lambda: js.diff(_mlp)((_X,), (_X * 2.0,)),
    "ResidualsView": lambda: js.residuals(
        lambda x: jax.grad(lambda y: jnp.tanh(y).sum())(x), compile=False
    )(_X),
}


def _package_renderables() -> dict[str, type]:
    """Every ``Renderable`` subclass defined in jaxscope (every module imported)."""
    for module in pkgutil.walk_packages(jaxscope.__path__, "jaxscope."):
        if module.name != "jaxscope.__main__":
            importlib.import_module(module.name)
    found: dict[str, type] = {}
    todo = list(Renderable.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("jaxscope."):
            found[cls.__name__] = cls
    return found


@pytest.fixture(scope="module")
def views():
    return {name: build() for name, build in VIEWS.items()}


def test_every_renderable_has_an_entry():
    classes = _package_renderables()
    missing = sorted(set(classes) - set(VIEWS))
    assert not missing, f"add a small real instance of {missing} to VIEWS"
    assert len(classes) >= 18


_SGR = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_every_renderable_renders_as_text_and_html_without_a_warning(views, name):
    view = views[name]
    assert type(view).__name__ == name
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = str(view)
        coloured = _display.to_text(view, color=True)
        bundle = view._repr_mimebundle_()
        console = Console(file=io.StringIO(), width=100, color_system="standard")
        console.print(view)
    assert text and text != repr(view)
    # str() and a colour terminal show the same characters, however they are drawn
    assert _SGR.sub("", coloured) == text
    assert bundle["text/plain"] == text
    assert bundle["text/html"] and not bundle["text/html"].startswith("<pre")
    assert console.file.getvalue().strip()


# --------------------------------------------------------------------------- fallbacks


@contextlib.contextmanager
def _renderers_raising(cls: type):
    """Every renderer registered for ``cls`` (text, plain text, HTML) raises inside."""
    _display.load_renderers_for(cls)
    dispatchers = (rich_renderable, _display.plain_text, html)
    originals = [dispatcher.dispatch(cls) for dispatcher in dispatchers]

    def boom(obj: object, *args: object) -> object:
        raise ZeroDivisionError(f"{type(obj).__name__} renderer broke")

    for dispatcher in dispatchers:
        dispatcher.register(cls, boom)
    try:
        yield
    finally:
        for dispatcher, original in zip(dispatchers, originals, strict=True):
            dispatcher.register(cls, original)


def _one_line(text: str) -> str:
    assert "\n" not in text, text
    return text


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_every_renderable_falls_back_to_its_repr_when_its_renderers_fail(views, name):
    view = views[name]
    short = _one_line(_display.printable(_display.safe_repr(view)))
    with _renderers_raising(type(view)):
        with pytest.warns(RuntimeWarning, match=f"text renderer for {name} failed"):
            assert _one_line(str(view)) == short
        with pytest.warns(RuntimeWarning) as record:
            bundle = view._repr_mimebundle_()
        console = Console(file=io.StringIO(), width=100, color_system="standard")
        with pytest.warns(RuntimeWarning, match=f"text renderer for {name} failed"):
            console.print(view)
    assert any(f"HTML renderer for {name} failed" in str(w.message) for w in record)
    assert bundle["text/plain"] == short
    assert bundle["text/html"].startswith('<pre class="jaxscope-text">')
    assert set(bundle) == {"text/plain", "text/html"}  # no part whose data is missing
    assert console.file.getvalue().strip() == short.strip() or (
        short[:40] in console.file.getvalue()
    )
    # and the renderers are back
    assert str(view) != short


def test_a_jaxpr_whose_layout_fails_still_displays(monkeypatch):
    """The jaxpr's text layout (not only its registered renderers) is inside the guard."""
    from jaxscope._jaxpr import view as jaxpr_view

    def broken(*args: object, **kwargs: object) -> str:
        raise IndexError("layout broke")

    monkeypatch.setattr(jaxpr_view, "render_text", broken)
    view = js.jaxpr(_mlp)(_X)
    with pytest.warns(RuntimeWarning, match="text renderer for JaxprView failed"):
        assert str(view) == repr(view)
    with pytest.warns(RuntimeWarning, match="text renderer for JaxprView failed"):
        assert view._repr_mimebundle_()["text/plain"] == repr(view)


# --------------------------------------------------------------------------- options


def test_display_options_are_a_frozen_record_replaced_by_with_options(views):
    view = views["JaxprView"]
    folded = view.with_options(depth=0, show_source=False)
    assert view.options == js.JaxprDisplay()  # the original is unchanged
    assert folded.options == js.JaxprDisplay(depth=0, show_source=False)
    assert folded.model is view.model and folded.text == view.text
    assert "# " not in str(folded) and "# " in str(view)
    with pytest.raises(dataclasses.FrozenInstanceError):
        folded.options.depth = 1  # type: ignore[misc]
    hlo = views["HloView"]
    costly = hlo.with_options(show_cost=True)
    assert not hlo.show_cost and costly.options == js.HloDisplay(show_cost=True)
    assert "cost and memory" in str(costly) and "cost and memory" not in str(hlo)


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda v: v.with_options(depth=-1), "JaxprView.with_options: depth must"),
        (lambda v: v.with_options(max_eqns=1), "max_eqns must be an int >= 2"),
        (lambda v: v.with_options(by_source="yes"), "by_source must be True or"),
        (lambda v: js.JaxprDisplay(depth="2"), "JaxprDisplay: depth must be"),
    ],
)
def test_bad_display_options_are_one_line_errors(views, call, says):
    with pytest.raises(js.InvalidCallError, match=says) as info:
        call(views["JaxprView"])
    assert "\n" not in str(info.value) and "e.g." in str(info.value)


def test_magics_give_a_view_with_their_options_and_keep_the_defaults(ip):
    ip.user_ns.update(mlp=_mlp, X=_X)
    view = ip.run_line_magic("jaxpr", "--depth 0 --no-source mlp(X);")
    assert view.options == js.JaxprDisplay(depth=0, show_source=False)
    view = ip.run_line_magic("jaxpr", "--all --source mlp(X);")
    assert view.options == js.JaxprDisplay(by_source=True, max_eqns=None)
    hlo = ip.run_line_magic("hlo", "--cost --all mlp(X);")
    assert hlo.options == js.HloDisplay(show_cost=True, expand_fused=True)


def test_a_colour_terminal_ipython_shows_every_view_coloured(ip, views):
    before = ip.colors
    ip.colors = "linux"
    try:
        bundles = {name: view._repr_mimebundle_() for name, view in views.items()}
    finally:
        ip.colors = before
    for name, bundle in bundles.items():
        assert _SGR.sub("", bundle["text/plain"]) == str(views[name]), name
    assert all(
        "\x1b[" in bundles[name]["text/plain"] for name in ("JaxprView", "HloView")
    )
    assert views["HloView"]._repr_mimebundle_()["text/plain"] == str(views["HloView"])
