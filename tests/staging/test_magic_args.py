"""``parse_magic_args``, shared by every jaxscope magic: --help and one-line errors."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from jaxscope._features import feature_modules


def _feature_magics() -> list[str]:
    """Every magic a feature's ``MAGICS`` class defines (what ``load_ext`` registers):
    ``%name`` for line magics, ``%%name`` for cell magics."""
    found = []
    for module in feature_modules("magic"):
        magics = getattr(module, "MAGICS", None)
        if magics is not None:
            found += [f"%{name}" for name in magics.magics["line"]]
            found += [f"%%{name}" for name in magics.magics["cell"]]
    return sorted(found)


MAGICS = _feature_magics()


def _run_magic(ip, magic: str, line: str):
    if magic.startswith("%%"):
        return ip.run_cell_magic(magic[2:], line, "the_cell_ran = True\n")
    return ip.run_line_magic(magic[1:], line)


def test_the_magics_checked_here_are_every_feature_magic_the_shell_registered(ip):
    registered = set()
    for magics in ip.magics_manager.registry.values():
        module = type(magics).__module__
        # jaxscope._ipython's own magics (%jaxscope, %jaxhelp) take no options
        if module.startswith("jaxscope.") and not module.startswith(
            "jaxscope._ipython"
        ):
            registered |= {f"%{name}" for name in magics.magics["line"]}
            registered |= {f"%%{name}" for name in magics.magics["cell"]}
    assert set(MAGICS) == registered
    assert {"%jaxpr", "%jaxprof", "%jaxmem", "%jaxerrors", "%%leaks"} <= registered


@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_and_does_nothing(ip, magic, flag):
    ip.user_ns.pop("_jaxstep", None)  # the shell is shared: an earlier %jaxstep's
    ip.user_ns.pop("the_cell_ran", None)
    with capture_output() as cap:
        result = _run_magic(ip, magic, flag)
    assert result is None
    assert f"{magic} [" in cap.stdout
    assert "_jaxstep" not in ip.user_ns
    assert "the_cell_ran" not in ip.user_ns


@pytest.mark.parametrize("magic", MAGICS)
def test_unknown_option_is_a_one_line_usage_error(ip, magic):
    ip.user_ns.pop("the_cell_ran", None)
    with pytest.raises(UsageError) as info:
        _run_magic(ip, magic, "--bogus")
    message = str(info.value)
    assert message.endswith("unrecognized arguments: --bogus")
    assert "\n" not in message
    assert "the_cell_ran" not in ip.user_ns


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
