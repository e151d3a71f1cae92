"""%sharding in a real IPython shell."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

SETUP = """
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
_auto = jax.sharding.AxisType.Auto
mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(_auto, _auto))
x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
w = jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("model", None)))
params = {"w": w, "b": jnp.ones(16)}
def layer(x, w):
    return jnp.sum(x @ w, axis=0)
n = 3
"""


@pytest.fixture
def shell(ip):
    result = ip.run_cell(SETUP)
    result.raise_error()
    return ip


def run(shell, line):
    with capture_output() as cap:
        shell.run_line_magic("sharding", line)
    assert len(cap.outputs) == 1
    return cap.outputs[0].data


def test_array_expression_shows_the_array_view(shell):
    data = run(shell, "w")
    assert "P('model', None)" in data["text/plain"]
    assert "CPU 0,2,4,6" in data["text/plain"]
    assert 'class="jxs-grid"' in data["text/html"]


def test_pytree_expression_shows_a_table(shell):
    data = run(shell, "params")
    assert "['w']" in data["text/plain"] and "['b']" in data["text/plain"]


def test_call_expression_shows_the_program_view(shell):
    data = run(shell, "layer(x, w)")
    text = data["text/plain"]
    assert "shardings of layer" in text
    assert "all-reduce" in text
    assert "In [" in text  # collectives point at the cell that defined layer


def test_array_flag_evaluates_the_call(shell):
    data = run(shell, "--array jnp.ones((8, 8))")
    assert "float32[8, 8]" in data["text/plain"]


def test_dims_flag(shell):
    shell.run_cell(
        "z = jax.device_put(jnp.ones((2, 4, 8)), NamedSharding(mesh, P(None, 'data', 'model')))"
    ).raise_error()
    data = run(shell, "--dims 0,2 z")
    assert "rows = dim 0, columns = dim 2" in data["text/plain"]


@pytest.mark.parametrize(
    "line, pattern",
    [
        ("", "needs an expression"),
        ("undefined_name", "name 'undefined_name' is not defined"),
        ("n", "n is a builtins.int"),
        ("x +", "syntax error"),
        ("--dims a,b w", "--dims 'a,b' must be two integers"),
        ("--dims 0,1 layer(x, w)", "--dims applies to array views"),
        ("n(x)", "not a function"),
        ("--bogus x", "unrecognized arguments"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(shell, line, pattern):
    with pytest.raises(UsageError, match=pattern) as err:
        shell.run_line_magic("sharding", line)
    assert "\n" not in str(err.value)


def test_deleted_array_is_a_usage_error(shell):
    shell.run_cell("d = jnp.ones(3); d.delete()").raise_error()
    with pytest.raises(UsageError, match="d was deleted"):
        shell.run_line_magic("sharding", "d")


EXPLICIT_SETUP = """
_explicit = jax.sharding.AxisType.Explicit
emesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(_explicit, _explicit))
xa = jax.device_put(jnp.ones((64, 32)), NamedSharding(emesh, P("data", "model")))
wa = jax.device_put(jnp.ones((32, 16)), NamedSharding(emesh, P("model", None)))
def elayer(a, w):
    return jnp.tanh(a @ w).sum(axis=0)
"""


def test_a_sharding_error_of_the_call_comes_with_its_hint(shell):
    """The README's mesh with explicit axes: the program cannot be built, and the
    one-line error says why in shardings, with the fix in the user's names."""
    shell.run_cell(EXPLICIT_SETUP).raise_error()
    with pytest.raises(UsageError) as err:
        shell.run_line_magic("sharding", "elayer(xa, wa)")
    text = str(err.value)
    assert "\n" not in text
    assert "Contracting dimensions are sharded" in text
    assert "inner dimensions" not in text
    assert "hint: a (f32[64@data,32@model]) and w (f32[32@model,16])" in text
    assert (
        "jnp.matmul(a, w, out_sharding=NamedSharding(emesh, P('data', None)))" in text
    )


def test_all_lists_the_bookkeeping_ops_of_the_program(shell):
    folded = run(shell, "layer(x, w)")["text/plain"]
    listed = run(shell, "--all layer(x, w)")["text/plain"]
    assert "bookkeeping ops not listed" in folded and " parameter " not in folded
    assert "bookkeeping" not in listed and " parameter " in listed
    with pytest.raises(UsageError, match="--all applies to a call's program"):
        shell.run_line_magic("sharding", "--all x")
