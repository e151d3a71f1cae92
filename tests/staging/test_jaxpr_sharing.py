"""Jaxpr displays as JAX prints them: shared sub-jaxprs once, as ``let name = {...}
in``; long binder lines wrapped at the display width."""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxscope as js
from jaxscope._display import terminal_width as display_width
from jaxscope._display import to_html
from jaxscope._format import plural


def mlp(params, x):
    for w, b in params:
        x = jax.nn.relu(x @ w + b)
    return x


def _args(layers: int):
    return [(jnp.ones((8, 8)), jnp.ones(8)) for _ in range(layers)], jnp.ones((2, 8))


def test_a_jaxpr_used_three_times_is_printed_once_as_jax_does():
    view = js.jaxpr(mlp)(*_args(3))
    jax_text = str(jax.make_jaxpr(mlp)(*_args(3)))
    assert jax_text.startswith("let relu = { lambda ")
    lines = view.text.splitlines()
    assert lines[0].startswith("let relu = { lambda ; ")
    assert lines[2].startswith("  in (") and lines[2].endswith(",) } in")
    assert view.text.count("= max ") == 1
    assert view.text.count("jit[name=relu jaxpr=relu]") == 3
    # the data keeps every use: three max equations, each with its own path
    maxes = [e for e in view.eqns if e.primitive == "max"]
    assert len(maxes) == 3 and len({e.path for e in maxes}) == 3
    assert [r.shared for r in view.model.shared] == ["relu"]


def _jitted_double(scale: float):
    @jax.jit
    def double(x):
        return x * scale

    return double


def test_distinct_shared_jaxprs_get_distinct_names():
    # two functions named `double`, each called twice
    double, other_double = _jitted_double(2.0), _jitted_double(3.0)

    def f(x, v):
        return double(double(x)), other_double(other_double(v))

    view = js.jaxpr(f)(jnp.ones(()), jnp.ones(3))
    names = [r.shared for r in view.model.shared]
    assert sorted(names) == ["double", "double1"]
    for name in names:
        assert f"let {name} = {{ lambda " in view.text
        assert view.text.count(f"jaxpr={name}]") == 2


def test_a_jaxpr_used_once_stays_inline():
    view = js.jaxpr(mlp)(*_args(1))
    assert "let " not in view.text
    assert "jaxpr={ lambda " in view.text
    assert not view.model.shared


def test_html_prints_the_shared_jaxpr_once_and_refers_to_it():
    view = js.jaxpr(mlp)(*_args(3))
    html = to_html(view)  # the renderer's markup (readers get a styled copy)
    assert html.count("let relu = { lambda") == 1
    assert html.count("jaxpr=relu") == 3
    assert html.count('<b class="jxs-p">max</b>') == 1


def test_long_binder_lines_wrap_at_the_display_width_in_displays_only():
    view = js.jaxpr(mlp)(*_args(60))
    width = display_width()
    (head,) = [ln for ln in view.text.splitlines() if ln.startswith("{ lambda ")]
    assert len(head) > 1000  # .text keeps what the trace is
    shown = str(view).splitlines()
    start = next(i for i, ln in enumerate(shown) if ln.startswith("{ lambda "))
    end = next(i for i, ln in enumerate(shown) if ln.endswith(". let") and i >= start)
    assert end - start >= 5
    binders = shown[start : end + 1]
    assert all(len(ln) <= width for ln in binders)
    assert all(ln.startswith("    ") for ln in binders[1:])
    # the same binders, in order
    assert " ".join(" ".join(binders).split()) == " ".join(head.split())


def test_folding_below_a_shared_jaxpr_folds_its_let_block_too():
    view = js.jaxpr(mlp)(*_args(3))
    folded = view.text_at(depth=0)
    first = folded.splitlines()[0]
    total = view.model.shared[0].total
    assert first == f"let relu = {{ ... {plural(total, 'equation')} }} in"
    assert "= max " not in folded
    assert folded.count("call_jaxpr={ ... 2 equations }") == 3  # jit and max
