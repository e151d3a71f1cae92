"""Every view and message shows files one way (``short_path``): relative to the
working directory, an installed library's from its package, a notebook cell as
``In [N]``; never an absolute path under the project or site-packages, never
IPython's raw ``<ipython-input-N-…>`` name."""

from __future__ import annotations

import os
import re
import sys

import jax
import jax.numpy as jnp
import optax
import pytest

import jaxscope as js
from jaxscope._display import new_console
from jaxscope._records import SourceLoc
from jaxscope._source import short_path, short_place

# A program typed in a terminal IPython cell: Python compiles it under IPython's name.
CELL = "<ipython-input-45-80b4c3dd3c15>"
CELL_SOURCE = """
def cell_loss(w, x):
    h = jnp.tanh(x @ w)
    return optax.l2_loss(h).mean()
"""
_cell_namespace = {"jnp": jnp, "optax": optax}
exec(compile(CELL_SOURCE, CELL, "exec"), _cell_namespace)
cell_loss = _cell_namespace["cell_loss"]


def file_loss(w, x):
    h = cell_loss(w, x) + jnp.sin(x @ w).sum()
    return h


step = jax.jit(jax.value_and_grad(file_loss))
W, X = jnp.ones((4, 3)), jnp.ones((2, 4))


def bad_shape(w, x):
    return x.T @ w  # raises while traced


def absolute_paths(text: str) -> list[str]:
    """Every absolute path of this project, of the installed libraries or of the
    Python installation in ``text``, and every raw IPython cell name."""
    roots = {os.getcwd(), sys.prefix, os.path.dirname(jax.__file__)}
    found = [root for root in roots if root in text]
    found += re.findall(r"\S*(?:site|dist)-packages/\S*", text)
    found += re.findall(r"<ipython-input-\S*", text)
    return found


def shown(view: object) -> str:
    console = new_console(200)
    console.print(view)
    return str(view) + "\n" + console.file.getvalue()  # type: ignore[attr-defined]


VIEWS = {
    "jaxpr": lambda: js.jaxpr(step)(W, X),
    "jaxpr.text": lambda: js.jaxpr(step)(W, X).text,
    "jaxpr.text_by_line": lambda: js.jaxpr(step)(W, X).text_by_line(),
    "hlo": lambda: js.hlo(step)(W, X),
    "hlo stablehlo": lambda: js.hlo(step, stage="stablehlo")(W, X),
    "hlo optimized": lambda: js.hlo(step, stage="optimized")(W, X),
    "graph": lambda: js.graph(step)(W, X),
    "profile": lambda: js.profile(step, repeat=1)(W, X),
    "memory": lambda: js.memory(step)(W, X),
    "shardings": lambda: js.shardings(step)(W, X),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_show_no_absolute_path_and_no_raw_cell_name(name):
    text = shown(VIEWS[name]())
    assert absolute_paths(text) == []
    assert "In [45]" in text or name == "shardings"


def test_trace_error_names_the_users_line_relative_and_not_the_librarys():
    with pytest.raises(js.TraceError) as info:
        js.jaxpr(lambda w, x: optax.l2_loss(bad_shape(w, x)))(W, X)
    message = str(info.value)
    assert absolute_paths(message) == []
    assert f" at {short_path(__file__)}:" in message


def test_explained_error_and_its_frames_show_short_paths():
    try:
        jax.jit(bad_shape)(W, X)
    except TypeError as exc:
        report = js.explain(exc)
    assert absolute_paths(shown(report)) == []
    assert all(not os.path.isabs(str(frame)) for frame in report.frames)


LEAKY_SOURCE = """
def leaky_in_cell(x):
    y = x * 2
    store.append(y)
    return x
"""


def test_leak_report_and_its_error_name_the_cell_as_in_n():
    namespace = {"store": []}
    exec(compile(LEAKY_SOURCE, CELL, "exec"), namespace)
    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(namespace["leaky_in_cell"])(1.0)
        with pytest.raises(jax.errors.UnexpectedTracerError) as info:
            namespace["store"][0] + 1
    explained = shown(js.explain(info.value))
    assert "tracer created at In [45]:3:8" in explained
    for text in (shown(report), str(info.value).splitlines()[0], explained):
        assert absolute_paths(text) == []


def test_source_loc_str_is_the_shown_form_and_file_keeps_the_full_path():
    here = os.path.abspath(__file__)
    loc = SourceLoc(file=here, line=3)
    assert str(loc) == f"{short_path(here)}:3" == "tests/test_paths_shown.py:3"
    assert loc.file == here
    assert str(SourceLoc(file=CELL, line=5)) == "In [45]:5"
    assert short_place(f"{CELL}:5:8") == "In [45]:5:8"
    assert short_place("not a place") == "not a place"


def test_installed_commands_are_not_the_users_code():
    from jaxscope._source import is_library_file

    script = os.path.join(os.path.dirname(sys.executable), "ipython")
    assert is_library_file(script)
    assert not is_library_file(os.path.abspath(__file__))


def test_a_reused_donated_array_is_reported_with_a_short_path():
    double = jax.jit(lambda v: v * 2, donate_argnums=0)
    v = jnp.ones(3)
    double(v)
    try:
        double(v)
    except (RuntimeError, ValueError) as exc:
        report = js.explain(exc)
    assert report.category == "donated"
    assert f" at {short_path(__file__)}:" in str(report)
    assert absolute_paths(shown(report)) == []


def test_a_cell_number_reads_the_latest_cell_run_under_it(ip):
    # a cell run without storing history shares its number with the next stored one
    from jaxscope._profile.source import raw_file

    ip.run_cell("unstored = 1")
    ip.run_cell("stored = 2\nsecond_line = 3", store_history=True)
    number = ip.execution_count - 1
    import linecache

    assert linecache.getline(raw_file(f"In [{number}]"), 2).strip() == "second_line = 3"


def test_a_cell_number_reads_the_cell_not_a_magics_expression_run_in_it(ip):
    from jaxscope._profile.source import raw_file

    ip.run_cell("import jax.numpy as jnp\nx = jnp.ones(3)", store_history=True)
    ip.run_cell("a = 1\nb = 2\nv = %jaxpr jnp.sin(x)", store_history=True)
    number = ip.execution_count - 1
    import linecache

    assert linecache.getline(raw_file(f"In [{number}]"), 2).strip() == "b = 2"
