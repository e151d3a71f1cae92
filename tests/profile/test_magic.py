"""%jaxprof and %jaxmem in a real IPython shell: cells map to ``In [N]``."""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

CELL = """\
import jax
import jax.numpy as jnp
def step(w, x):
    h = jnp.tanh(x @ w)
    return (h * h).sum()
w = jnp.ones((128, 128)) / 128
x = jnp.ones((64, 128))
"""


def define(ip) -> int:
    result = ip.run_cell(CELL, store_history=True)
    result.raise_error()
    return result.execution_count


def magic(ip, name: str, line: str):
    with capture_output() as captured:
        ip.run_line_magic(name, line)
    assert len(captured.outputs) == 1, "the magic displayed nothing"
    return captured.outputs[0].data


def test_jaxprof_shows_cell_lines_in_text_and_html(ip):
    n = define(ip)
    data = magic(ip, "jaxprof", "--repeat 2 --top 3 step(w, x)")
    text, html = data["text/plain"], data["text/html"]
    assert text.startswith("js.profile of step: ")
    assert "(mean of 2 runs; cpu" in text
    assert f"In [{n}]" in text
    assert re.search(
        # Time (any unit, ns included), then hits/per-hit where shown, %, ops, code.
        r"^\s*4\s+\S+ [nµm]?s\s+(?:\d+\s+\S+ [nµm]?s\s+)?\S+%\s+\d+\s+"
        r"h = jnp\.tanh\(x @ w\)",
        text,
        re.M,
    )
    assert re.search(r"^\s*3\s+def step\(w, x\):", text, re.M)
    top = text.split("top lines", 1)[1].split("\n\n", 1)[0]
    assert len(re.findall(rf"In \[{n}\]:\d", top)) <= 3
    assert '<details class="jxp-row" data-line="4">' in html
    assert f"In [{n}]" in html


def test_jaxprof_shows_the_cells_text_after_code_compiled_under_its_number(ip):
    # A %%leaks run outside any cell compiles its code under the next cell's number;
    # the table must still show the text of the cell that defined `step`.
    with capture_output():
        ip.run_cell_magic("leaks", "", "import jax\nz = 1\nq = 2\nr = 3\n")
    n = define(ip)
    text = magic(ip, "jaxprof", "--repeat 1 --top 3 step(w, x)")["text/plain"]
    assert re.search(rf"In \[{n}\]:4\s+h = jnp\.tanh\(x @ w\)", text)
    assert "r = 3" not in text


def test_jaxprof_device_option_and_jit_callees(ip):
    define(ip)
    text = magic(ip, "jaxprof", "--repeat 1 --device 0 jax.jit(step)(w, x)")[
        "text/plain"
    ]
    assert "h = jnp.tanh(x @ w)" in text
    with pytest.raises(UsageError, match="device 5 ran no op"):
        ip.run_line_magic("jaxprof", "--repeat 1 --device 5 step(w, x)")


def test_jaxmem_shows_the_peak(ip):
    n = define(ip)
    data = magic(ip, "jaxmem", "--top 4 step(w, x)")
    text = data["text/plain"]
    assert text.startswith("js.memory of step: peak ")
    assert "argument w" in text and "argument x" in text
    assert f"In [{n}]" in text
    assert re.search(r"Line #\s+Bytes\s+%\s+Buffers\s+Line contents", text)
    assert "jaxscope-memory" in data["text/html"]


def test_magic_usage_errors_are_one_line(ip):
    define(ip)
    with pytest.raises(UsageError, match="needs a call expression"):
        ip.run_line_magic("jaxprof", "")
    with pytest.raises(UsageError, match="--repeat must be >= 1"):
        ip.run_line_magic("jaxprof", "--repeat 0 step(w, x)")
    with pytest.raises(UsageError, match="undefined_thing"):
        ip.run_line_magic("jaxmem", "undefined_thing(w)")


def test_jaxprof_and_jaxmem_show_the_text_of_the_cell_that_ran(ip):
    # Cells run without history share one "In [N]"; each has its own compiled file,
    # and the tables must read the one the program came from, not the first of them.
    other = "def unrelated(a):\n    b = a + 1\n    return b * 3\nq = 1\n"
    ip.run_cell(other, store_history=False).raise_error()
    ip.run_cell(CELL, store_history=False).raise_error()
    for name, line in (("jaxprof", "--repeat 1 step(w, x)"), ("jaxmem", "step(w, x)")):
        text = magic(ip, name, line)["text/plain"]
        assert "h = jnp.tanh(x @ w)" in text.split("top lines", 1)[-1], name
        assert "unrelated" not in text and "b * 3" not in text, name


GRAD_CELL = """\
import jax
import jax.numpy as jnp
def loss(w, x):
    h = jnp.tanh(x @ w)
    return (h * h).sum()
grad_step = jax.jit(jax.grad(loss))
w = jnp.ones((32, 32)) / 32
x = jnp.ones((16, 32))
"""


def test_jaxmem_residuals_by_cell_line(ip):
    result = ip.run_cell(GRAD_CELL, store_history=True)
    result.raise_error()
    n = result.execution_count
    data = magic(ip, "jaxmem", "--residuals grad_step(w, x)")
    text, html = data["text/plain"], data["text/html"]
    # tanh's output and its derivative's 1 - tanh², both f32[16,32]
    assert text.startswith("js.residuals of loss: 2 values saved for the backward")
    assert re.search(rf"In \[{n}\]:4\s+2\s+4 KiB.*h = jnp\.tanh\(x @ w\)", text)
    assert "h = jnp.tanh(x @ w)" in html
    view = ip.run_line_magic("jaxmem", "--residuals grad_step(w, x)")
    assert sorted(r.what for r in view.residuals if r.argument is None) == [
        "output of sub",
        "output of tanh",
    ]
