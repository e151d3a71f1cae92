"""``parse_magic_args``, shared by every jaxscope magic: --help and one-line errors."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

MAGICS = ["jaxpr", "hlo", "jaxgraph", "sharding", "recompiles", "purity", "jaxstep"]


@pytest.mark.parametrize("name", MAGICS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_does_nothing(ip, name, flag):
    ip.user_ns.pop("_jaxstep", None)  # the shell is shared: an earlier %jaxstep's
    with capture_output() as cap:
        result = ip.run_line_magic(name, flag)
    assert result is None
    assert f"%{name} [" in cap.stdout
    assert "_jaxstep" not in ip.user_ns


@pytest.mark.parametrize("name", MAGICS)
def test_unknown_option_is_a_one_line_usage_error(ip, name):
    with pytest.raises(UsageError) as info:
        ip.run_line_magic(name, "--bogus")
    assert str(info.value) == "unrecognized arguments: --bogus"


def test_call_after_options_is_kept_verbatim(ip):
    ip.run_cell("def f(s, n): return n")
    # argparse would have split the string and taken -b / -1 for options
    with pytest.raises(UsageError, match=r"s\[0\] is a str \('a  -b'\)"):
        ip.run_line_magic("jaxpr", "--no-source f(['a  -b'], -1)")


@pytest.mark.parametrize("magic", ["jaxgraph", "jaxstep --prompt", "sharding"])
def test_quoted_strings_in_the_call_reach_the_function_intact(ip, magic, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("c\n"))
    ip.run_cell(
        "import jax.numpy as jnp\n"
        "def tagged(x, tag):\n"
        "    assert tag == 'a  b', tag\n"
        "    return x * 2\n"
        "xq = jnp.ones(4)"
    )
    ip.run_cell("from functools import partial")
    call = "partial(tagged, tag='a  b')(xq)"
    ip.run_line_magic(magic.split()[0], " ".join([*magic.split()[1:], call]))


@pytest.mark.parametrize(
    ("magic", "option", "fixed"),
    [
        ("jaxgraph", "--svg", "--svg out.svg"),
        ("jaxstep", "-b", "-b 12"),
        ("jaxpr", "--depth", "--depth 1"),
        ("hlo", "--stage", "--stage hlo"),
    ],
)
def test_an_option_missing_its_value_does_not_swallow_the_call(
    ip, magic, option, fixed
):
    ip.run_cell("import jax.numpy as jnp\ndef g(x, y, lr): return x * lr + y")
    with pytest.raises(UsageError) as info:
        ip.run_line_magic(magic, f"{option} g(jnp.ones(3), jnp.ones(3), 0.1)")
    assert str(info.value) == (
        f"%{magic}: {option} takes a value before the call, and `g(jnp.ones(3),` "
        f"is the start of the call; write e.g. "
        f"`%{magic} {fixed} g(jnp.ones(3), jnp.ones(3), 0.1)`"
    )
    with pytest.raises(UsageError, match=f"{option} takes a value before the call"):
        ip.run_line_magic(magic, f"{option} g(1)")


def test_an_option_whose_value_is_optional_leaves_the_call_alone(ip, tmp_path):
    ip.run_cell("import jax.numpy as jnp\ndef g(x, y): return x * y")
    with capture_output() as cap:
        ip.run_line_magic("jaxgraph", "--dot g(jnp.ones(3), jnp.ones(3))")
    assert "digraph" in cap.stdout
