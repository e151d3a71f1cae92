"""Counts and articles read as English: "1 group", "an int", never "1 groups"."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import jaxscope as js
from jaxscope._display import to_html

_ONE_PLURAL = re.compile(
    r"\b1 (groups|nodes|edges|compiles|findings|shards|ops|devices|collectives|arrays|functions|events|leaks|buffers|source lines)\b"
)


def nested(x):
    return jax.jit(jnp.sin)(x)


def test_one_of_a_thing_is_singular_in_graph_text():
    view = js.graph(nested)(jnp.ones(3))
    header = str(view).splitlines()[0]
    assert header.endswith(", 1 group"), header
    assert not _ONE_PLURAL.search(str(view) + repr(view))


def sine(x):
    return jnp.sin(x)


def test_one_of_a_thing_is_singular_in_hlo_and_sharding_views():
    hlo = js.hlo(sine)(jnp.ones(3))
    assert str(hlo).splitlines()[0].endswith(" mapped to 1 source line")
    program = js.shardings(lambda x: x * 2)(jnp.ones(3))
    text = str(program) + to_html(program) + repr(program)
    assert "1 device," in str(program).splitlines()[0]
    assert not _ONE_PLURAL.search(text), text[:300]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("n(x)", "`n` is an int, not a function"),
        ("f(*n)", "`*n` is an int, not an iterable"),
        ("f(x, **n)", "`**n` is an int, not a mapping"),
        ("g(x, ['a'])", "label[0] is a str"),
        ("g(x, ob)", "label is an object"),
    ],
)
def test_magic_errors_use_the_right_article(ip, line, expected):
    ip.run_cell(
        "import jax.numpy as jnp\nn = 3\nob = object()\nx = jnp.ones(2)\n"
        "def f(x):\n    return x\ndef g(x, label):\n    return x\n"
    ).raise_error()
    with capture_output():
        result = ip.run_cell(f"%jaxpr {line}")
    assert isinstance(result.error_in_exec, UsageError)
    assert expected in str(result.error_in_exec)
