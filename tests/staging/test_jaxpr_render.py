"""Text, rich and HTML renderings of JaxprView: source comments, quiet params,
folding and eliding of long programs, source-linked HTML, escaping."""

from __future__ import annotations

import os
import re
import warnings

import jax
import jax.numpy as jnp
import pytest
from jax import lax

import jaxscope as js
from jaxscope._display import new_console, to_html
from jaxscope._source import short_loc

HERE = os.path.abspath(__file__)


X4 = jnp.arange(4.0)


def inner(x):
    return jnp.sin(x) * 2.0


def nested(x, y):
    a = jax.jit(inner)(x)
    c, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, a)
    return lax.cond(y > 0, lambda z: z - 1.0, lambda z: z * 2.0, c) + ys.sum()


@pytest.fixture(scope="module")
def view():
    return js.jaxpr(nested)(X4, 1.0)


def html_of(obj):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a renderer falling back to text warns
        return to_html(obj)


def test_text_ends_every_mapped_equation_line_with_file_and_line(view):
    lines = view.text.splitlines()
    by_path = {e.path: e for e in view.eqns}
    eqn_lines = [ln for ln in lines if " = " in ln]
    assert len(eqn_lines) == len(view.eqns)
    for ln in eqn_lines:
        assert re.search(r"  # .+:\d+$", ln), ln
    assert all(e.source is not None for e in by_path.values())
    first = view.eqns[0]
    assert eqn_lines[0].endswith(f"# {short_loc(first.source)}")
    assert first.source.file == HERE  # the record keeps the full path


def test_text_hides_noisy_default_params_but_params_keep_them(view):
    jit = next(e for e in view.eqns if e.primitive == "jit")
    assert jit.params["in_shardings"] == "(UnspecifiedValue,)"
    assert jit.params["donated_invars"] == "(False,)"
    assert "keep_unused" in jit.params
    lines = view.text.splitlines()
    at = next(i for i, ln in enumerate(lines) if "= jit[" in ln)
    jit_line = lines[at]
    for noisy in ("UnspecifiedValue", "donated_invars", "keep_unused", "ctx_mesh"):
        assert noisy not in jit_line
    # as JAX prints it, name first; the nested jaxpr is drawn below, not counted here
    assert "= jit[name=inner] a" in jit_line and "eqns}" not in jit_line
    assert lines[at + 1].strip().startswith("jaxpr={ lambda ; ")
    assert jit.params["jaxpr"] == "{2 eqns}"  # the record keeps every param
    sin = next(e for e in view.eqns if e.primitive == "sin")
    assert sin.params.get("accuracy") == "None"
    assert "accuracy" not in view.text and "sharding=None" not in view.text


def test_nested_regions_are_indented_under_their_equation(view):
    text = view.text
    assert "      jaxpr={ lambda ; " in text
    assert "      branches[0]={ lambda ; " in text
    assert "      branches[1]={ lambda ; " in text
    assert text.startswith("{ lambda ; a:f32[4] b:f32[]. let")
    assert text.rstrip().endswith("}")


def test_depth_zero_folds_nested_jaxprs(view):
    folded = view.text_at(depth=0)
    assert "jaxpr={ ... 2 equations }" in folded
    assert "branches[0]={ ... 1 equation }" in folded
    assert "sin" not in folded
    assert view.text_at(depth=1) == view.text


def test_source_comments_can_be_hidden(view):
    assert "  # " not in view.text_at(source=False)


def test_by_source_groups_equations_under_their_line(view):
    grouped = view.text_by_line()
    sin = next(e for e in view.eqns if e.primitive == "sin")
    header = f"{short_loc(sin.source)}  return jnp.sin(x) * 2.0"
    assert header in grouped.splitlines()
    after = grouped.split(header, 1)[1].splitlines()
    assert "sin" in after[1] and "mul" in after[2]


def test_str_is_the_unwrapped_display_text(view):
    assert str(view) == view.text  # small: nothing folded or elided
    assert "\n" not in max(str(view).splitlines(), key=len)


def test_rich_rendering_colours_primitives_and_sources(view):
    console = new_console(200, color=True)
    console.print(view)
    out = console.file.getvalue()
    assert "\x1b[" in out
    assert re.search(r"\x1b\[1;35msin\x1b\[0m", out), out[:500]
    plain = new_console(200)
    plain.print(view)
    assert "\x1b[" not in plain.file.getvalue()
    assert "= sin d" in plain.file.getvalue()


def test_mimebundle_has_text_and_html(view):
    bundle = view._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/plain"] == str(view)
    assert bundle["text/html"].startswith('<div class="jxs-jaxpr"')


def test_html_links_equations_and_source_lines(view):
    html = html_of(view)
    sin = next(e for e in view.eqns if e.primitive == "sin")
    keys = list(view.by_line)
    k = keys.index(sin.source.key)
    rows = re.findall(rf'<div class="jxs-e" data-s="{k}"', html)
    assert len(rows) == len(view.by_line[sin.source.key]) == 2
    panel = re.findall(rf'<div class="jxs-s" data-s="{k}">', html)
    assert len(panel) == 1
    assert "return jnp.sin(x) * 2.0" in html
    assert html.count('<details class="jxs-r" open>') == 4
    assert "addEventListener" in html and "scrollIntoView" in html
    ids = set(re.findall(r'id="(jxs-jaxpr-[\w-]+)"', html))
    assert len(ids) == 1
    uid = ids.pop()
    assert f"#{uid} .jxs-hl" in html and f'jaxscope_jaxpr.wire("{uid}")' in html


def test_html_depth_closes_nested_details(view):
    view.depth = 0
    try:
        html = html_of(view)
    finally:
        view.depth = None
    assert '<details class="jxs-r">' in html
    assert '<details class="jxs-r" open>' not in html


def weird(x):
    with jax.named_scope("<script>scope</script>"):
        return jnp.sin(x)


def test_html_escapes_function_names_scopes_and_files():
    weird.__name__ = weird.__qualname__ = "<script>alert(1)</script>"
    v = js.jaxpr(weird)(X4)
    assert v.eqns[0].scope == "<script>scope</script>"
    html = html_of(v)
    assert "<script>alert" not in html and "<script>scope" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'title="&lt;script&gt;scope&lt;/script&gt;"' in html
    ns = {"jnp": jnp}
    exec(compile("def g(x):\n    return jnp.cos(x)\n", "<b>bold</b>", "exec"), ns)
    g = js.jaxpr(ns["g"])(X4)
    assert g.eqns[0].source.file == "<b>bold</b>"
    assert "&lt;b&gt;bold&lt;/b&gt;:2" in html_of(g)
    assert "<b>bold" not in html_of(g)


def chain(n):
    def long_program(x):
        for _ in range(n):
            x = x * 1.5
        return x

    return long_program


@pytest.fixture(scope="module")
def huge():
    return js.jaxpr(chain(10_000))(X4)


def test_ten_thousand_equations_display_without_flooding(huge):
    assert len(huge.eqns) == 10_000
    assert len(huge.text.splitlines()) == 10_002
    shown = str(huge).splitlines()
    assert len(shown) <= 210
    assert any(
        ln.startswith("    ... 9800 equations elided (%jaxpr --all") for ln in shown
    )
    html = html_of(huge)
    assert len(html) < 1_000_000
    assert html.count('class="jxs-e"') <= 2_200
    assert "equations elided (#100 to #599; click to expand)" in html
    assert "equations not shown here" in html


def test_long_nested_regions_start_collapsed_in_html():
    def outer(x):
        return jax.jit(chain(500))(x)

    html = html_of(js.jaxpr(outer)(X4))
    assert '<details class="jxs-r">' in html  # 500 > 200 equations: closed


def test_html_fallback_never_raises_for_a_broken_view(view):
    broken = js.jaxpr(inner)(X4)
    broken.model.by_line = None  # a renderer bug must not kill the cell
    with pytest.warns(RuntimeWarning, match="HTML renderer for JaxprView failed"):
        html = to_html(broken)
    assert html.startswith("<pre")


def test_terminal_ipython_with_colours_gets_ansi_text(ip, view):
    before = ip.colors
    ip.colors = "linux"
    try:
        coloured = view._repr_mimebundle_()["text/plain"]
    finally:
        ip.colors = before
    assert "\x1b[" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == str(view)
    ip.colors = "nocolor"
    try:
        assert view._repr_mimebundle_()["text/plain"] == str(view)
    finally:
        ip.colors = before


def test_html_by_source_is_an_annotated_source_listing(view):
    view.by_source = True
    try:
        html = html_of(view)
    finally:
        view.by_source = False
    assert "by source line" in html
    assert html.count('<details class="jxs-g" open>') == len(view.by_line)
    sin = next(e for e in view.eqns if e.primitive == "sin")
    k = list(view.by_line).index(sin.source.key)
    group = html.split(f'<summary class="jxs-s" data-s="{k}">', 1)[1].split(
        "</details>"
    )[0]
    assert "return jnp.sin(x) * 2.0" in group
    assert group.count('class="jxs-e"') == len(view.by_line[sin.source.key])


def global_weights():
    return jnp.arange(3.0)


W = global_weights()


def uses_a_captured_array(x):
    return x * W


def test_captured_arrays_are_constvars_in_the_text():
    v = js.jaxpr(uses_a_captured_array)(jnp.ones(3))
    assert v.top.constvars == [("a", "f32[3]")]
    assert v.text.splitlines()[0] == "{ lambda a:f32[3]; b:f32[3]. let"
    mul = next(e for e in v.eqns if e.primitive == "mul")
    assert mul.inputs == [("b", "f32[3]"), ("a", "f32[3]")]
    assert "{ lambda a:f32[3]; b:f32[3]. let" in html_of(v)


def many_nested(x):
    for i in range(30):
        x = jax.jit(chain(60 + i))(x)  # distinct bodies, so no shared trace
    return x


def test_many_nested_regions_fold_automatically_to_stay_short():
    v = js.jaxpr(many_nested)(X4)
    assert len(v.eqns) > 1_900
    assert len(v.text.splitlines()) > 1_900  # .text keeps everything
    assert v.display_depth() == 0
    shown = str(v).splitlines()
    assert len(shown) <= 100
    assert shown[-1].startswith("# nested jaxprs deeper than 0 are folded")
    assert "jaxpr={ ... 60 equations }" in shown[2]
    console = new_console(200)
    console.print(v)
    assert "nested jaxprs deeper than 0 are folded" in console.file.getvalue()
    v.depth = 1  # an explicit depth wins, with no note
    assert not str(v).splitlines()[-1].startswith("# nested")


def test_shown_params_are_the_ones_jax_prints():
    def mlp(params, x):
        for w, b in params:
            x = jax.nn.relu(x @ w + b)
        return jnp.sum(x, axis=0)

    args = ([(jnp.ones((4, 4)), jnp.ones(4))] * 2, jnp.ones((2, 4)))
    view = js.jaxpr(mlp)(*args)
    jax_text = str(jax.make_jaxpr(mlp)(*args))
    relu = next(e for e in view.eqns if e.primitive == "custom_jvp_call")
    line = next(ln for ln in view.text.splitlines() if "custom_jvp_call" in ln)
    assert "custom_jvp_call[name=relu jvp=jvp symbolic_zeros=False]" in line
    assert "Wrapped function" not in view.text and "memoized" not in view.text
    assert "jvp_jaxpr_fun" in relu.params  # the record keeps every param
    for info in view.eqns:
        shown = info.printed_params
        assert shown is not None, info.primitive
        for key, value in shown.items():
            if not value.startswith("{"):
                assert f"{key}={value}" in jax_text, (info.primitive, key, value)


def test_max_eqns_sets_how_much_a_display_keeps():
    def chain(x):
        for _ in range(30):
            x = x * 2.0
        return x

    assert "elided" not in str(js.jaxpr(chain)(jnp.ones(3)))
    shown = str(js.jaxpr(chain, max_eqns=10)(jnp.ones(3)))
    assert "... 20 equations elided" in shown and shown.count("= mul ") == 10
    view = js.jaxpr(chain, max_eqns=None)(jnp.ones(3))
    assert view.max_eqns is None and str(view).count("= mul ") == 30
    for bad in (0, 1, -5, 2.5, True, "10"):
        with pytest.raises(js.InvalidCallError, match=r"max_eqns must be an int >= 2"):
            js.jaxpr(chain, max_eqns=bad)  # type: ignore[arg-type]
