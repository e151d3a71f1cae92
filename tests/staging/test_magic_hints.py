"""Every command a hint suggests works when pasted into the same IPython shell."""

from __future__ import annotations

import io
import re
import sys
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

SETUP = """\
import functools
import jax, jax.numpy as jnp
import jaxscope as js

def scale(n, x):
    if n > 0:
        return x * n
    return x

@jax.jit
def jitted_scale(n, x):
    if n > 0:
        return x * n
    return x

def act(kind, x):
    return jnp.tanh(x) if kind == "tanh" else jnp.sin(x)

def act_kw(x, *, kind):
    return jnp.tanh(x) if kind == "tanh" else jnp.sin(x)

x = jnp.arange(4.0)
cube = jnp.ones((2, 3, 4))
"""

# (magic, its options other than the static ones)
MAGICS = [
    ("jaxpr", "--depth 1"),
    ("hlo", "--stage optimized"),
    ("jaxgraph", ""),
    ("sharding", ""),
    ("jaxprof", "--repeat 1 --warmup 0"),
    ("jaxmem", ""),
    ("jaxstep", "--widget"),
]
_STATIC_COMMAND = re.compile(r"static \((%[^()]*\([^()]*\))\)")


@pytest.fixture
def shell(ip):
    ip.run_cell(SETUP).raise_error()
    return ip


def _usage_error(shell, source: str) -> str:
    with capture_output():
        result = shell.run_cell(source)
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    message = str(result.error_in_exec)
    assert "\n" not in message
    return message


def _suggested(message: str) -> str:
    match = _STATIC_COMMAND.search(message)
    assert match, message
    return match.group(1)


def _found(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    assert match, text
    return match.group(1)


def _runs(shell, source: str) -> Any:
    with capture_output():
        result = shell.run_cell(source)
    result.raise_error()
    return result.result


@pytest.mark.parametrize("function", ["scale", "jitted_scale"])
@pytest.mark.parametrize(("magic", "options"), MAGICS, ids=[m for m, _ in MAGICS])
def test_control_flow_hint_of_every_call_magic_is_a_working_command(
    shell, magic, options, function
):
    line = f"%{magic} {options} {function}(3, x)".replace("  ", " ")
    command = _suggested(_usage_error(shell, line))
    assert command.startswith(f"%{magic} {options}".strip() + " ")
    assert "--static-argnums 0" in command and f"{function}(3, x)" in command
    _runs(shell, command)


def test_static_hint_keeps_the_static_arguments_already_given(shell):
    shell.run_cell(
        "def two(a, n, x):\n    return x * a if n > 0 and a > 1 else x\n"
    ).raise_error()
    message = _usage_error(shell, "%jaxpr --static-argnums 1 two(2, 3, x)")
    command = _suggested(message)
    assert "--static-argnums 1,0" in command
    _runs(shell, command)


def test_string_arguments_are_static_with_no_option_needed(shell):
    assert "tanh" in str(_runs(shell, "%jaxpr act('tanh', x)"))
    assert "tanh" in str(_runs(shell, "%hlo act_kw(x, kind='tanh')"))


def test_untraceable_argument_hints_are_working_commands(shell):
    shell.run_cell(
        "import enum\n"
        "class Kind(enum.Enum):\n"
        "    TANH = 1\n"
        "def act_enum(kind, x):\n"
        "    return jnp.tanh(x) if kind is Kind.TANH else jnp.sin(x)\n"
        "def act_enum_kw(x, *, kind):\n"
        "    return jnp.tanh(x) if kind is Kind.TANH else jnp.sin(x)\n"
    ).raise_error()
    message = _usage_error(shell, "%jaxpr act_enum(Kind.TANH, x)")
    assert "kind is a Kind" in message
    command = _found(r"static argument \((%.*\))\)", message)
    assert command == "%jaxpr --static-argnums 0 act_enum(Kind.TANH, x)"
    assert "tanh" in str(_runs(shell, command))

    message = _usage_error(shell, "%hlo act_enum_kw(x, kind=Kind.TANH)")
    command = _found(r"static argument \((%.*\))\)", message)
    assert command == "%hlo --static-argnames kind act_enum_kw(x, kind=Kind.TANH)"
    assert "tanh" in str(_runs(shell, command))


def test_jaxstep_static_argnums_option_steps_the_call(shell, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("c\nq\n"))
    shell.run_line_magic("jaxstep", "--static-argnums 0 jitted_scale(3, x)")
    stepper = shell.user_ns["_jaxstep"]
    assert stepper.done
    assert stepper.result.tolist() == [0.0, 3.0, 6.0, 9.0]


def test_api_static_argnums_of_a_jitted_function_takes_effect(shell):
    view = _runs(shell, "js.jaxpr(jitted_scale, static_argnums=(0,))(3, x)")
    assert "mul" in str(view)
    # JAX's own cache of the user's jitted function is untouched: it still fails
    with capture_output():
        result = shell.run_cell("jitted_scale(3, x)")
    assert result.error_in_exec is not None


def test_api_hint_names_the_function_and_works_with_the_call_filled_in(shell):
    with capture_output():
        result = shell.run_cell("js.hlo(scale)(3, x)")
    message = str(result.error_in_exec)
    assert "js.hlo(scale, static_argnums=(0,))(...)" in message
    _runs(shell, "js.hlo(scale, static_argnums=(0,))(3, x)")


def _explain_hint(shell, source: str) -> str:
    with capture_output() as captured:
        result = shell.run_cell(source, store_history=True)
    assert result.error_in_exec is not None
    hint = next(line for line in captured.stdout.splitlines() if "hint:" in line)
    return hint


def test_explain_hint_for_a_jit_decorated_function_unwraps_it(shell):
    hint = _explain_hint(shell, "jitted_scale(3, x)")
    assert "@functools.partial(jax.jit, static_argnums=(0,))" in hint
    expression = _found(r"to try it first: `(jax\.jit\([^;`]*\))`", hint)
    assert expression == "jax.jit(jitted_scale.__wrapped__, static_argnums=(0,))"
    assert _runs(shell, f"{expression}(3, x)").tolist() == [0.0, 3.0, 6.0, 9.0]
    # the decorator it suggests works too
    _runs(
        shell,
        "@functools.partial(jax.jit, static_argnums=(0,))\n"
        "def fixed(n, x):\n    return x * n if n > 0 else x\n"
        "fixed(3, x)",
    )


def test_explain_hint_for_a_function_jitted_at_the_call_works(shell):
    hint = _explain_hint(shell, "jax.jit(scale)(3, x)")
    expression = _found(r"(jax\.jit\(scale, static_argnums=\(0,\)\))", hint)
    assert "__wrapped__" not in hint
    _runs(shell, f"{expression}(3, x)")


def test_an_expression_that_is_not_one_call_gets_a_wellformed_suggestion(shell):
    message = _usage_error(shell, "%jaxpr scale(3, x) + 1")
    assert "scale(3, x) + 1(" not in message
    command = _found(r"`(%jaxpr \(lambda: .*\)\(\))`", message)
    assert "add" in str(_runs(shell, command))
    # a bare function name still gets "add the arguments"
    assert "`%jaxpr scale(x)`" in _usage_error(shell, "%jaxpr scale")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("%hlo act(1, x) --stage optimized", "optimized HLO of act"),
        ("%jaxpr act(1, x) --depth 0", "sin"),
        ("%jaxpr act(1, x) --graph", "graph of act"),
        ("%sharding cube --dims 0,2", "grid: rows = dim 0"),
    ],
)
def test_options_after_the_call_are_read_as_options(shell, line, expected):
    view = _runs(shell, line)
    assert expected in str(view)


def test_an_unknown_option_after_the_call_is_one_clear_line(shell):
    message = _usage_error(shell, "%jaxpr act(1, x) --stage lowered")
    assert message.startswith("%jaxpr has no option --stage; its options are")
    assert "--depth" in message and "syntax error" not in message
