"""Text/HTML rendering of the stepper and NaN findings; the widget's Python side."""

from __future__ import annotations

import linecache
import textwrap

import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._display import to_html, to_text
from jaxscope._stepper.widget import StepperWidget, payload

SOURCE = textwrap.dedent(
    """\
    import jax.numpy as jnp

    def evil(x):
        a = x * 2.0  # <script>alert(1)</script>
        return jnp.log(a - 1.0)
    """
)
FILE = "evil_prog.py"


@pytest.fixture(scope="module")
def evil():
    linecache.cache[FILE] = (len(SOURCE), None, SOURCE.splitlines(True), FILE)
    namespace: dict = {}
    exec(compile(SOURCE, FILE, "exec"), namespace)
    return namespace["evil"]


def test_text_shows_location_source_and_values_table(evil):
    s = js.step(evil)(jnp.array([1.0, 0.25])).next()
    text = to_text(s, width=100)
    assert text.splitlines()[0] == "Stepper of evil (next)"
    assert "> evil_prog.py:5 in evil  [evil]" in text
    assert "  -> c:f32[2] = sub b 1.0:f32[]" in text
    assert "   5  ->     return jnp.log(a - 1.0)" in text
    for column in ("name", "aval", "min", "max", "mean", "value"):
        assert column in text
    assert "nan" not in text.split("values", 1)[1]  # no NaN yet: no nan column
    assert "f32[2]" in text and "0.25" in text
    assert str(s) == to_text(s)


WIDE = textwrap.dedent(
    """    import jax.numpy as jnp

    def wide(params, inputs_batch):
        hidden_activations = jnp.tanh(inputs_batch @ params["layers"][0]["weight"] + params["layers"][0]["bias"] * 3.0)
        return jnp.log(hidden_activations)
    """
)


@pytest.mark.parametrize("width", [100, 200])
def test_values_fit_the_console_width_one_line_each(width):
    linecache.cache["wide_prog.py"] = (len(WIDE), None, WIDE.splitlines(True), "")
    namespace: dict = {}
    exec(compile(WIDE, "wide_prog.py", "exec"), namespace)
    params = {
        "layers": [
            {"weight": jnp.ones((16, 32)) * 0.1, "bias": jnp.linspace(-1, 1, 32)}
        ]
    }
    s = js.step(namespace["wide"])(params, jnp.linspace(0, 1, 64).reshape(4, 16))
    s.break_on(nan=True).run()
    text = to_text(s, width=width)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("values"))
    table = lines[start + 3 :]
    assert max(len(line) for line in lines) <= width
    assert len(table) == len(s.summaries())  # one line per value, none wrapped
    name = table[0].split("\u2502", 1)[0].strip()
    if width == 200:
        assert name == "params['layers'][0]['bias'] (a)"
    else:  # cut in the middle: both the path's end and the jaxpr name stay
        assert name.startswith("params[") and name.endswith("['bias'] (a)")
    assert "nan" in lines[-len(table) - 2]  # a NaN now: the nan column is back
    assert "hidden_activations (" in text
    preview = table[1].rsplit("\u2502", 1)[1].strip()  # the weight's, 120 chars
    assert preview.startswith("[[0.1 0.1")
    assert len(preview) >= (10 if width == 100 else 100)
    prompt = js._stepper.render.values_text(s.summaries(), width)  # the prompt's v
    assert max(len(line) for line in prompt.splitlines()) <= width
    assert len(prompt.splitlines()) == len(s.summaries()) + 1


def test_html_escapes_source_lines_and_has_the_values_table(evil):
    s = js.step(evil)(jnp.array([1.0, 0.25]))
    out = to_html(s)
    assert "<script>alert" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert '<span class="cur">' in out and "<table>" in out
    bundle = s._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}


def test_nan_finding_text_and_html(evil):
    found = js.find_nan(evil)(jnp.array([1.0, 0.25]))
    text = to_text(found, width=100)
    assert text.splitlines()[0] == "nan first produced by log at evil_prog.py:5 in evil"
    assert "inputs" in text and "outputs" in text
    assert repr(found) == "<NanFinding: nan from log at evil_prog.py:5>"
    html = to_html(found)
    assert 'class="nan"' in html and "evil_prog.py:5" in html


def test_finished_stepper_renders_its_result(evil):
    s = js.step(evil)(jnp.array([1.0, 2.0])).run()
    assert (
        "program finished (evil); result: Array([0. , 1.0986123], dtype=float32)"
        in to_text(s, width=120)
    )


def test_widget_payload_has_source_lines_current_line_and_values(evil):
    s = js.step(evil)(jnp.array([1.0, 0.25]))
    state = payload(s)
    assert state["current"]["line"] == 4 and state["current"]["primitive"] == "mul"
    assert state["source"]["file"] == FILE
    assert [n for n, _ in state["source"]["lines"]] == [3, 4, 5]
    assert state["source"]["eqn_lines"] == [4, 5]
    assert state["values"][0]["name"] == "a" and state["values"][0]["aval"] == "f32[2]"
    assert state["done"] is False and state["error"] == ""


def test_widget_commands_step_break_continue_and_errors(evil):
    w = StepperWidget(js.step(evil)(jnp.array([1.0, 0.25])))
    w.command("toggle_break", 5)
    assert w.state["breakpoints"] == [5]
    w.command("continue")
    assert w.state["current"]["line"] == 5 and w.state["reason"] == "breakpoint"
    w.command("next")
    assert w.state["current"]["primitive"] == "log"
    w.command("toggle_break", 2)
    assert (
        "no equation at line 2 of evil_prog.py; lines with equations: 4, 5"
        in w.state["error"]
    )
    w.command("toggle_break", 5)
    assert w.state["breakpoints"] == []
    w.command("finish")
    assert w.state["done"] and w.state["result"].startswith("Array([")
    w.command("step")
    assert w.state["error"].startswith("cannot step(): the program has finished")
    w.command("expand", name="a")
    assert w.state["values"][0]["full"] == "array([1.  , 0.25], dtype=float32)"
    assert "full" not in w.state["values"][1]
    w.command("expand", name="a")
    assert "full" not in w.state["values"][0]
    w.command("explode")
    assert w.state["error"] == "unknown command 'explode'"
    w._on_message(w, {"cmd": "step"}, [])
    assert "cannot step()" in w.state["error"]


def test_widget_front_end_module_is_built_from_the_extension_source():
    """_static/stepper.js is build.mjs's bundle of the current src/stepper/index.js."""
    import hashlib
    import json
    from pathlib import Path

    import jaxscope

    def sha(path):
        return hashlib.sha256(path.read_bytes()).hexdigest()

    static = Path(jaxscope.__file__).parent / "_static"
    stale = "stepper.js is stale: run `npm --prefix extension run build`"
    entry = json.loads((static / "BUILD.json").read_text("utf-8"))["entries"]["stepper"]
    assert entry["bundle"] == "stepper.js"
    assert entry["bundle_sha256"] == sha(static / "stepper.js"), stale
    source = static.parent.parent / "extension" / "src" / "stepper" / "index.js"
    if source.exists():  # a source checkout, not an installed wheel
        assert entry["sources"]["src/stepper/index.js"] == sha(source), stale
    shipped = (static / "stepper.js").read_text("utf-8")
    assert "export default" in shipped or "export{" in shipped.replace(" ", "")


def test_views_show_a_file_under_the_cwd_relative_to_it(tmp_path, monkeypatch):
    from jaxscope._stepper.render import listing_text, where_text

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    path = tmp_path / "pkg" / "prog.py"
    path.write_text(SOURCE)
    namespace: dict = {}
    exec(compile(SOURCE, str(path), "exec"), namespace)
    s = js.step(namespace["evil"])(jnp.array([1.0, 0.25])).next()
    for text in (to_text(s, width=200), where_text(s), listing_text(s)):
        assert str(path) not in text
        assert "pkg/prog.py" in text
    assert "> pkg/prog.py:5 in evil" in to_text(s, width=200)
    page = to_html(s)
    assert f'title="{path}"' in page and ">pkg/prog.py<" in page
    assert s.current is not None and s.current.source is not None
    assert s.current.source.file == str(path)  # the data keeps the full path
    finding = js.find_nan(namespace["evil"])(jnp.array([1.0, 0.25]))
    assert "at pkg/prog.py:5 in evil" in to_text(finding, width=200)
