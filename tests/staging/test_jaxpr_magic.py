"""%jaxpr (and %hlo's argument checks) in a real IPython shell."""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

SETUP = """\
import jax
import jax.numpy as jnp
from jax import lax
x = jnp.arange(4.0)
"""


def run(ip, source):
    """Run a cell with history (so it gets a number); return that number."""
    result = ip.run_cell(source, store_history=True)
    result.raise_error()
    return result.execution_count


def magic(ip, line, name="jaxpr"):
    with capture_output() as cap:
        ip.run_line_magic(name, line)
    assert cap.outputs, "the magic displayed nothing"
    return cap.outputs[-1].data


@pytest.fixture
def shell(ip):
    run(ip, SETUP)
    return ip


def test_jaxpr_maps_equations_to_the_defining_cell(shell):
    n = run(shell, "def f(x):\n    y = jnp.sin(x)\n    return y * 2.0\n")
    data = magic(shell, "f(x)")
    text = data["text/plain"]
    assert re.search(rf"= sin a  # In \[{n}\]:2$", text, re.M), text
    assert re.search(rf"= mul b 2.0:f32\[\]  # In \[{n}\]:3$", text, re.M), text
    assert "text/html" in data and f"In [{n}]:2" in data["text/html"]
    assert "y = jnp.sin(x)" in data["text/html"]  # the cell's code beside its eqns


def test_api_view_from_a_cell_uses_in_n(shell):
    n = run(shell, "def g(x):\n    return jnp.cos(x)\n")
    run(shell, "import jaxscope as js\nv = js.jaxpr(g)(x)")
    v = shell.user_ns["v"]
    assert v.eqns[0].source.file == f"In [{n}]"
    assert v.eqns[0].source.line == 2
    assert str(v.eqns[0].source) == f"In [{n}]:2"


def test_jaxpr_of_grad_and_a_jitted_callee_expression(shell):
    run(shell, "def loss(w, b):\n    return jnp.sum(jnp.tanh(w) * b)\n")
    text = magic(shell, "jax.grad(loss)(x, 2.0)")["text/plain"]
    assert "tanh" in text and "mul" in text
    text = magic(shell, "jax.jit(loss)(w=x, b=3.0)")["text/plain"]
    assert "tanh" in text


def test_quoted_and_negative_arguments_reach_the_function(shell):
    run(
        shell,
        "def pick(x, mode, k):\n"
        "    return jnp.sin(x) * k if mode == 'a b' else jnp.cos(x) * k\n",
    )
    text = magic(shell, "jax.jit(pick, static_argnums=(1, 2))(x, 'a b', -1)")[
        "text/plain"
    ]
    assert "sin" in text and "cos" not in text


def test_depth_folds_and_source_groups(shell):
    run(
        shell,
        "def h(x):\n"
        "    c, ys = lax.scan(lambda c, v: (c + jnp.sin(v), c), 0.0, x)\n"
        "    return c\n",
    )
    folded = magic(shell, "--depth 0 h(x)")["text/plain"]
    assert re.search(r"jaxpr=\{ \.\.\. \d+ equations \}", folded)
    assert "sin" not in folded
    grouped = magic(shell, "--source h(x)")["text/plain"]
    assert "c, ys = lax.scan(lambda c, v: (c + jnp.sin(v), c), 0.0, x)" in grouped
    bare = magic(shell, "--no-source h(x)")["text/plain"]
    assert "  # " not in bare


def test_graph_option_shows_the_graph_view(shell):
    run(shell, "def f2(x):\n    return jnp.sin(x) + 1.0\n")
    data = magic(shell, "--graph f2(x)")
    assert data["text/plain"].startswith("graph of f2")
    assert "{ lambda" not in data["text/plain"]  # the graph, not the jaxpr text


def test_help_describes_the_options(shell):
    with capture_output() as cap:
        shell.run_cell("%jaxpr?", store_history=False)
    text = cap.stdout
    assert "--depth" in text and "--source" in text and "--graph" in text


@pytest.mark.parametrize("flag", ["--help", "-h", "--depth 1 --help"])
def test_help_flag_prints_usage_and_traces_nothing(shell, flag):
    with capture_output() as cap:
        result = shell.run_line_magic("jaxpr", f"{flag} undefined_fn(x)")
    assert result is None and not cap.outputs
    usage = " ".join(cap.stdout.split())
    assert (
        "%jaxpr [--source] [--no-source] [--depth DEPTH] [--max-eqns N] [--all] [--graph]"
        in usage
    )
    assert "fold nested jaxprs deeper than N" in cap.stdout


def usage_error(ip, line, name="jaxpr"):
    with pytest.raises(UsageError) as info:
        ip.run_line_magic(name, line)
    message = str(info.value)
    assert "\n" not in message, message
    return message


def test_empty_argument(shell):
    assert "needs a call expression: write e.g. `%jaxpr f(x, y)`" in usage_error(
        shell, ""
    )


def test_not_a_call(shell):
    run(shell, "y = 3")
    msg = usage_error(shell, "y")
    assert "needs a call expression, got `y`" in msg and "`%jaxpr y(x)`" in msg


def test_undefined_name(shell):
    msg = usage_error(shell, "nowhere(x)")
    assert "name 'nowhere' is not defined" in msg and "define it in a cell first" in msg


def test_branch_on_an_array_argument_is_not_told_to_mark_it_static(shell):
    run(
        shell,
        "@jax.jit\ndef flip(x):\n    if x.sum() > 0:\n        return x\n"
        "    return -x\n\nones = jnp.ones(3)\n",
    )
    msg = usage_error(shell, "flip(ones)")
    assert "--static-argnums" not in msg
    assert "x is an array, which cannot be static" in msg
    assert "jnp.where" in msg


def test_misspelt_function_gets_a_did_you_mean(shell):
    run(shell, "def train_step(x):\n    return x + 1\n")
    msg = usage_error(shell, "train_stepp(1.0)")
    assert msg == (
        "name 'train_stepp' is not defined; did you mean `train_step`? (or define "
        "it in a cell first)"
    )
    assert "in the function" not in msg


def test_undefined_argument(shell):
    run(shell, "def k(x):\n    return x\n")
    msg = usage_error(shell, "k(missing)")
    assert "'missing' is not defined" in msg and "the argument `missing`" in msg


def test_syntax_error(shell):
    msg = usage_error(shell, "f(x,,)")
    assert "syntax error in `f(x,,)`" in msg and "write a call such as" in msg


def test_string_argument_in_a_list(shell):
    run(shell, "def s(x, labels):\n    return x\n")
    msg = usage_error(shell, "s(x, ['hello'])")
    assert "labels[0] is a str ('hello'), which JAX cannot trace" in msg
    assert "(%jaxpr --static-argnums 1 s(x, ['hello']))" in msg


def test_shape_tuple_and_mode_string_are_static(shell):
    reshaped = magic(shell, "jnp.reshape(jnp.ones(1024), (32, 32))")["text/plain"]
    assert "reshape[new_sizes=(32, 32)]" in reshaped
    padded = magic(shell, "jnp.pad(jnp.ones(3), (1, 2), mode='edge')")["text/plain"]
    assert "f32[6]" in padded


def test_object_argument(shell):
    run(shell, "class Thing: pass\ndef o(x, t):\n    return x\n")
    msg = usage_error(shell, "o(x, Thing())")
    assert "t is a Thing" in msg and "which JAX cannot trace" in msg


def test_function_raising_while_tracing_names_the_cell_line(shell):
    n = run(shell, "def bad(x):\n    y = x + 1\n    raise ValueError('no good')\n")
    msg = usage_error(shell, "bad(x)")
    assert msg.startswith(f"bad raised ValueError at In [{n}]:3 while being traced")
    assert msg.endswith("no good")


def test_value_dependent_control_flow_names_the_argument_and_index(shell):
    n = run(
        shell,
        "def relu(scale, v):\n    if v > 0:\n        return v * scale\n    return 0.0\n",
    )
    msg = usage_error(shell, "relu(2.0, x.sum())")
    assert f"at In [{n}]:2" in msg
    assert "depends on the value of argument v" in msg
    # x.sum() is an array: --static-argnums 1 would fail when pasted
    assert "v is an array, which cannot be static" in msg
    assert "--static-argnums" not in msg
    assert "lax.cond" in msg


def test_negative_depth(shell):
    run(shell, "def q(x):\n    return x\n")
    assert "--depth must be >= 0, got -1" in usage_error(shell, "--depth -1 q(x)")


def test_unknown_option(shell):
    msg = usage_error(shell, "--colour q(x)")
    assert "unrecognized arguments: --colour" in msg


def test_hlo_rejects_an_unknown_stage(shell):
    run(shell, "def q(x):\n    return x\n")
    msg = usage_error(shell, "--stage bad q(x)", name="hlo")
    assert "unknown stage 'bad'" in msg and "stablehlo, hlo or optimized" in msg


def test_star_args_and_kwargs_are_unpacked(shell):
    run(
        shell,
        "def kw(a, b, *, c):\n    return jnp.sin(a) * b + c\nargs = (x, 2.0)\nopts = {'c': 1.0}",
    )
    text = magic(shell, "kw(*args, **opts)")["text/plain"]
    assert "sin" in text and "add" in text


def test_bad_unpacking_is_a_usage_error(shell):
    run(shell, "def kw2(a, **k):\n    return a\nn = 3")
    assert "`*n` is an int, not an iterable" in usage_error(shell, "kw2(*n)")
    assert "`**n` is an int, not a mapping" in usage_error(shell, "kw2(x, **n)")
    msg = usage_error(shell, "kw2(x, c=1.0, **{'c': 2.0})")
    assert "keyword argument 'c' is given twice" in msg


def test_an_argument_raising_while_evaluated(shell):
    msg = usage_error(shell, "jnp.sin(1 / 0)")
    assert "evaluating the argument `1 / 0` raised ZeroDivisionError" in msg


def test_a_lambda_typed_in_the_magic_maps_to_its_cell(shell):
    with capture_output() as cap:
        result = shell.run_cell("%jaxpr (lambda v: jnp.cos(v))(x)", store_history=True)
    result.raise_error()
    text = cap.stdout  # the cell's result, printed by the displayhook
    n = result.execution_count
    assert re.search(rf"= cos a  # In \[{n}\]:1$", text, re.M), text
    assert "<jaxscope-call>" not in text


def test_after_a_failing_magic_the_users_exception_is_the_last_one(shell):
    import sys

    run(shell, "def broken(v):\n    return {}['missing'] + v\n")
    result = shell.run_cell("%jaxpr broken(x)", store_history=True)
    assert isinstance(result.error_in_exec, UsageError)  # shown as one line
    assert isinstance(sys.last_value, KeyError)  # %debug / %tb reach the user's error
    tb = sys.last_traceback
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_name == "broken"


LONG = "def long_fn(x):\n" + "".join(f"    x = x * {i + 2}.0\n" for i in range(300))
LONG += "    return x\n"


def test_jaxpr_max_eqns_and_all_show_the_elided_equations(shell):
    run(shell, LONG)
    default = magic(shell, "long_fn(x)")["text/plain"]
    assert "... 100 equations elided (%jaxpr --all" in default
    assert "mul" in default and " 150.0:f32[]" not in default
    wider = magic(shell, "--max-eqns 280 long_fn(x)")["text/plain"]
    assert "... 20 equations elided" in wider
    everything = magic(shell, "--all long_fn(x)")["text/plain"]
    assert "elided" not in everything
    assert len(re.findall(r"= mul ", everything)) == 300
    html = magic(shell, "--all long_fn(x)")["text/html"]
    assert "elided" not in html and html.count('class="jxs-e"') == 300


def test_jaxpr_max_eqns_below_two_is_a_usage_error(shell):
    run(shell, LONG)
    with pytest.raises(UsageError, match=r"--max-eqns must be >= 2, got 0; .*--all"):
        shell.run_line_magic("jaxpr", "--max-eqns 0 long_fn(x)")
