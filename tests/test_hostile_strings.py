"""User strings in every text renderer: shown as they are, never as markup or escapes.

Function names, dict keys (pytree paths), mesh axis names, device kinds, file names
and source lines are the user's. Rich must not parse them as markup (a dict key
``"cache[/data]"`` is a closing tag that matches nothing: ``MarkupError``), and the
terminal must not receive their control characters (ESC of ANSI/OSC sequences, the
C1 CSI 0x9b): they are spelled out (``\\x1b``). HTML escapes them.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import re
import sys
import warnings

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from rich.console import Console

import jaxscope as js
from jaxscope._display import to_text

# Markup, an HTML tag, an SGR colour, an OSC 8 hyperlink and a C1 CSI.
HOSTILE = "<i>[bold red]red[/bold red]\x1b[31mESC\x1b]8;;http://x\x1b\\C1\x9b31m"
KEY = "cache[/data]"  # a closing tag matching nothing: MarkupError if parsed
# XLA aborts on mesh axis names with control or non-ASCII characters.
AXIS = "<i>[bold red]red[/bold red]"

SOURCE = f"""
import jax
import jax.numpy as jnp


def inner(v):
    return jnp.sin(v) * 2.0  # {HOSTILE}


def evil(tree):
    a, b = tree[{KEY!r}], tree[{HOSTILE!r}]
    with jax.named_scope({HOSTILE!r}):
        y = jax.jit(inner)(a) + b  # {HOSTILE}
    return jnp.log(y - 10.0)  # {HOSTILE}


def reduce(tree):
    return jnp.sum(tree[{KEY!r}], axis=1) + jnp.sum(tree[{HOSTILE!r}], axis=1)  # {HOSTILE}
"""

_SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colours


def _rename(fn):
    fn.__code__ = fn.__code__.replace(co_name=HOSTILE, co_qualname=HOSTILE)
    fn.__name__ = fn.__qualname__ = HOSTILE
    return fn


@pytest.fixture(scope="module")
def evil_module(tmp_path_factory):
    # The path holds "[/data]" (a markup closing tag), an ESC and a C1 character.
    folder = tmp_path_factory.mktemp("src") / "x[" / "data]\x1b[31m\x9b31m"
    folder.mkdir(parents=True)
    path = folder / "evil.py"
    path.write_text(SOURCE, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("jaxscope_test_evil", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("inner", "evil", "reduce"):
        _rename(getattr(module, name))
    yield module
    sys.modules.pop("jaxscope_test_evil", None)


@pytest.fixture(scope="module")
def views(evil_module):
    tree = {KEY: jnp.ones(3), HOSTILE: jnp.ones(3)}
    fn = evil_module.evil
    by_source = js.jaxpr(fn)(tree)
    by_source.by_source = True
    finished = js.step(fn)(tree)
    finished.run()
    out = {
        "jaxpr": js.jaxpr(fn)(tree),
        "jaxpr by source": by_source,
        "jaxpr folded": js.jaxpr(fn)(tree),
        "graph": js.graph(fn)(tree),
        "stepper": js.step(fn)(tree),
        "stepper finished": finished,
        "nan finding": js.find_nan(fn)(tree),
        "sharding tree": js.sharding({KEY: jnp.ones(3), "b": {HOSTILE: jnp.ones(2)}}),
    }
    out["jaxpr folded"].depth = 0
    out["profile"] = js.profile(fn, repeat=1, warmup=0)(tree)
    out["memory"] = js.memory(fn)(tree)
    out["diff"] = js.diff(fn)((tree,), ({KEY: jnp.ones(4), HOSTILE: jnp.ones(4)},))
    out["compile profile"] = js.compile_profile(fn)(tree)
    for stage in ("stablehlo", "hlo", "optimized"):
        out[f"hlo {stage}"] = js.hlo(fn, stage=stage)(tree)
        out[f"hlo {stage}"].show_cost = True
    return out


@pytest.fixture(scope="module")
def sharded_views(evil_module):
    assert len(jax.devices()) >= 8, "the root conftest asks XLA for 8 CPU devices"
    auto = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((4, 2), (KEY, AXIS), axis_types=(auto, auto))
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P(KEY, AXIS)))
    array = js.sharding(x)
    # A device kind is the backend's; a plugin's can be any string.
    shards = [dataclasses.replace(s, platform=HOSTILE) for s in array.shards]
    return {
        "sharding array": dataclasses.replace(array, shards=shards).with_dims(0, 1),
        "program shardings": js.shardings(evil_module.reduce)({KEY: x, HOSTILE: x}),
    }


def _renders(view):
    """``str``, the mimebundle, and a colour terminal's output, failing on any
    renderer's fallback warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="jaxscope: the .* renderer")
        text = str(view)
        bundle = view._repr_mimebundle_()
        terminal = io.StringIO()
        console = Console(
            file=terminal, force_terminal=True, color_system="standard", width=200
        )
        console.print(view)
    return text, bundle, terminal.getvalue()


def _assert_shown_safely(text: str) -> None:
    assert "\x1b" not in _SGR.sub("", text), "a raw ESC reached the terminal"
    assert "\x1b[31mESC" not in text and "\x1b]8;;" not in text
    assert "\x9b" not in text, "a raw C1 CSI reached the terminal"
    assert "\\x1b" in text, "the user's string is not shown"
    assert "[/bold" in text, "the user's markup was parsed, not shown"


def _assert_html_escaped(html: str) -> None:
    assert "<i>" not in html
    assert "&lt;i&gt;" in html or "\\u003ci\\u003e" in html
    assert "\x1b" not in html and "\x9b" not in html


NAMES = [
    "jaxpr",
    "jaxpr by source",
    "jaxpr folded",
    "hlo stablehlo",
    "hlo hlo",
    "hlo optimized",
    "graph",
    "stepper",
    "stepper finished",
    "nan finding",
    "sharding tree",
    "profile",
    "memory",
    "diff",
    "compile profile",
]
SHARDED = ["sharding array", "program shardings"]


def _params(names):
    return list(names)


@pytest.mark.parametrize("name", _params(NAMES))
def test_plain_text_shows_user_strings_literally(views, name):
    text, bundle, _ = _renders(views[name])
    _assert_shown_safely(text)
    _assert_shown_safely(bundle["text/plain"])


@pytest.mark.parametrize("name", NAMES)
def test_a_colour_terminal_gets_no_markup_and_no_control_codes(views, name):
    _, _, coloured = _renders(views[name])
    _assert_shown_safely(coloured)


@pytest.mark.parametrize("name", NAMES)
def test_html_escapes_user_strings(views, name):
    _, bundle, _ = _renders(views[name])
    _assert_html_escaped(bundle["text/html"])


@pytest.mark.parametrize("name", SHARDED)
def test_sharding_views_show_user_strings_safely(sharded_views, name):
    text, bundle, coloured = _renders(sharded_views[name])
    for shown in (text, bundle["text/plain"], coloured):
        _assert_shown_safely(shown)
    _assert_html_escaped(bundle["text/html"])


def test_a_dict_key_that_is_a_markup_closing_tag_is_shown():
    view = js.sharding({KEY: jnp.ones(3)})
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="jaxscope: the .* renderer")
        assert "'cache[/data]'" in str(view) or "cache[/data]" in str(view)


def test_reprs_spell_out_control_characters(views, sharded_views):
    shown = ("graph", "profile", "memory", "compile profile")
    for view in (*(views[n] for n in shown), sharded_views["program shardings"]):
        assert "\x1b" not in repr(view) and "\x9b" not in repr(view)
        assert "\\x1b" in repr(view)


def test_the_stepper_prompt_spells_out_control_characters(evil_module):
    from jaxscope._stepper.magic import StepperPrompt

    stepper = js.step(evil_module.evil)({KEY: jnp.ones(3), HOSTILE: jnp.ones(3)})
    out = io.StringIO()
    StepperPrompt(stepper, io.StringIO("l\nw\nv\nn\nn\nq\n"), out).run()
    _assert_shown_safely(out.getvalue())


class _HostileRepr:
    def __repr__(self) -> str:
        return HOSTILE


@pytest.mark.parametrize("magic", ["jaxpr", "hlo", "jaxgraph", "jaxstep", "sharding"])
def test_magic_errors_spell_out_control_characters(ip, magic):
    from IPython.core.error import UsageError

    ip.user_ns.update(jnp=jnp, HostileRepr=_HostileRepr)
    ip.run_cell("def f(x):\n    return jnp.sin(x)")
    with pytest.raises(UsageError) as info:
        ip.run_line_magic(magic, "f(HostileRepr())")
    message = str(info.value)
    assert "\x1b" not in message and "\x9b" not in message
    assert "[bold red]red[/bold red]\\x1b[31m" in message


INDEXED = """
import jax.numpy as jnp


def indexed(w, x, i, idx, b):
    # [b]b[/b][link=x]l[/link][/]
    h = jnp.tanh(w[i] * 2.0)
    h = h * w[idx] + x[b].sum()
    return h.sum()
"""


@pytest.fixture(scope="module")
def indexed_views(tmp_path_factory):
    # XLA spells control characters of file names in octal, so this path has none.
    path = tmp_path_factory.mktemp("src") / "cache[/data]" / "[link=x]m[b].py"
    path.parent.mkdir(parents=True)
    path.write_text(INDEXED, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("jaxscope_test_indexed", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = (jnp.ones((4, 3)), jnp.ones((4, 3)), 1, 2, 3)
    fn = jax.jit(module.indexed, static_argnums=(2, 3, 4))
    return {
        "profile": js.profile(fn, repeat=1, warmup=0)(*args),
        "memory": js.memory(fn)(*args),
    }


@pytest.mark.parametrize("name", ["profile", "memory"])
def test_source_lines_keep_their_brackets(indexed_views, name):
    text, bundle, coloured = _renders(indexed_views[name])
    for shown in (text, bundle["text/plain"], _SGR.sub("", coloured)):
        assert "w[i] * 2.0" in shown, "an index was read as a markup tag"
        assert "# [b]b[/b][link=x]l[/link][/]" in shown
        assert "[link=x]m[b].py" in shown
    assert "\x1b]8;" not in coloured, "a [link=...] became a terminal hyperlink"


# Each name goes into one program as its function name, a named_scope, a dict key, a
# global the program leaks into and a trace-time print; then into every view.
HOSTILE_NAMES = {
    "index": "w[i]",
    "closing tag": "cache[/]",
    "link": "[link=http://x]l[/link]",
    "bold": "[b]bold",
    "controls": "n\x00ul\x07b\x08\x1b[2J\x1b]8;;http://x\x07o\x9b",
    "100k": "L" * 100_000,
}

PROGRAM = """
import jax
import jax.numpy as jnp

NAME = {name!r}
leaked = {{}}


def fn(tree):
    print(NAME)
    leaked[NAME] = tree[NAME]
    with jax.named_scope(NAME):
        return jnp.sin(tree[NAME]) * 2.0


def bad(tree):
    return tree[NAME] @ jnp.ones((5, 5))
"""


def _every_view(tmp_path, name):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM.format(name=name), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("jaxscope_test_prog", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for fn in (module.fn, module.bad):
        fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=name)
        fn.__name__ = fn.__qualname__ = name
    tree = {name: jnp.ones(3)}
    fn = module.fn
    finished = js.step(fn)(tree)
    finished.run()
    views = {
        "jaxpr": js.jaxpr(fn)(tree),
        "hlo": js.hlo(fn, stage="optimized")(tree),
        "graph": js.graph(fn)(tree),
        "stepper": finished,
        "profile": js.profile(fn, repeat=1, warmup=0)(tree),
        "memory": js.memory(fn)(tree),
        "sharding": js.sharding(tree),
    }
    jitted = jax.jit(fn)
    with (
        js.watch_recompiles() as log,
        js.check_leaks(raise_on_leak=False) as leaks,
        js.watch_purity() as purity,
    ):
        jitted(tree)
        jitted({name: jnp.ones(4)})
    views.update(
        recompiles=log,
        recompile_summary=log.summary(),
        leaks=leaks,
        purity=purity,
    )
    try:
        jax.jit(module.bad)(tree)
    except TypeError as exc:
        views["explain"] = js.explain(exc)
    return views


_RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.mark.parametrize("kind", list(HOSTILE_NAMES))
def test_every_view_shows_a_hostile_name_as_plain_short_text(tmp_path, kind, capsys):
    name = HOSTILE_NAMES[kind]
    views = _every_view(tmp_path, name)
    capsys.readouterr()
    assert len(views) == 12
    for view_name, view in views.items():
        text, bundle, coloured = _renders(view)
        for shown in (text, bundle["text/plain"], _SGR.sub("", coloured)):
            assert not _RAW_CONTROL.search(shown), f"{view_name}: a raw control byte"
            assert len(shown) < 60_000, f"{view_name}: {len(shown)} characters"
        if kind in ("index", "closing tag", "link", "bold") and view_name != "jaxpr":
            wide = to_text(view, width=1000)
            assert name in wide, f"{view_name} does not show {name!r}"
        assert "\x1b]8;" not in coloured, f"{view_name}: a terminal hyperlink"
        assert "\x00" not in bundle["text/html"]


DOT_NAMES = {
    **HOSTILE_NAMES,
    "quotes": 'a"b}c\\d{e;f\\',
    "newlines": "x\ny\r\nz",
    "html": "<b>x</b>&amp;",
}


@pytest.mark.parametrize("kind", list(DOT_NAMES))
def test_dot_output_is_valid_for_hostile_names(kind):
    import shutil
    import subprocess

    name = DOT_NAMES[kind]
    assert shutil.which("dot"), "the test machine has Graphviz"

    def fn(x):
        with jax.named_scope(name):
            return jnp.sin(x) + 1

    fn.__name__ = fn.__qualname__ = name
    dot = js.graph(fn)(jnp.ones(2)).to_dot()
    assert "\x00" not in dot and "\x1b" not in dot
    done = subprocess.run(
        ["dot", "-Tsvg"], input=dot.encode(), capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[:300]


@pytest.mark.parametrize("kind", ["controls", "100k"])
@pytest.mark.parametrize("api", ["jaxpr", "hlo", "graph", "step", "profile", "memory"])
def test_api_error_messages_show_hostile_names_plain_and_short(kind, api):
    name = HOSTILE_NAMES[kind]

    def fails(x):
        raise ValueError(name)

    fails.__code__ = fails.__code__.replace(co_name=name, co_qualname=name)
    fails.__name__ = fails.__qualname__ = name
    with pytest.raises(js.JaxscopeError) as info:
        getattr(js, api)(fails)(jnp.ones(3))
    message = str(info.value)
    assert not _RAW_CONTROL.search(message), message[:200]
    assert len(message) < 2_000


def test_a_lone_surrogate_in_a_name_can_be_written_to_a_utf8_terminal():
    name = "bad\udc80name"

    def scoped(x):
        with jax.named_scope(name):
            return jnp.sin(x)

    def named(x):
        return jnp.sin(x)

    named.__name__ = named.__qualname__ = name
    text, bundle, coloured = _renders(js.graph(scoped)(jnp.ones(3)))
    for shown in (text, bundle["text/plain"], coloured, bundle["text/html"]):
        shown.encode("utf-8")  # a lone surrogate raises here
    with pytest.raises(js.TraceError) as info:  # JAX refuses the name
        js.jaxpr(named)(jnp.ones(3))
    str(info.value).encode("utf-8")
