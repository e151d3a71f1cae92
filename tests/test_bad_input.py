"""Bad arguments and bad static-argument options: one-line errors that say the fix.

An argument whose ``__repr__`` raises (traced or static), ``static_argnums=None``
(means none), ``static_argnums="x"`` and ``static_argnames=3``, through every
staging transform and every magic that takes a call.
"""

from __future__ import annotations

import io
import sys

import jax
import jax.numpy as jnp
import pytest
from IPython.core.error import UsageError

import jaxscope as js
from jaxscope import InvalidCallError, JaxscopeError


class BadRepr:
    """Hashable, not an array, and its ``__repr__`` raises."""

    def __repr__(self) -> str:
        raise RuntimeError("repr failed")


class BadMessage(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str failed")


def f(x, y=1):
    return jnp.sin(x) * 2.0


X = jnp.ones(3)
APIS = ["jaxpr", "hlo", "graph", "step", "find_nan", "shardings"]


# js.step / js.find_nan read the static options with a private copy that calls
# tuple() on them (jaxscope/_stepper/stepper.py, not this branch's files).
def _one_line_error(excinfo) -> str:
    message = str(excinfo.value)
    assert message and "\n" not in message, message
    assert "Traceback" not in message
    return message


@pytest.mark.parametrize("api", APIS)
def test_a_traced_argument_whose_repr_raises_is_a_one_line_error(api):
    with pytest.raises(InvalidCallError) as info:
        getattr(js, api)(f)(BadRepr())
    message = _one_line_error(info)
    assert "x is a BadRepr (<BadRepr>)" in message
    assert "static_argnums=(0,)" in message  # the fix


@pytest.mark.parametrize("api", APIS)
def test_a_keyword_argument_whose_repr_raises_is_a_one_line_error(api):
    with pytest.raises(InvalidCallError) as info:
        getattr(js, api)(f)(X, y=BadRepr())
    assert "static_argnames=('y',)" in _one_line_error(info)


@pytest.mark.parametrize("api", APIS)
def test_a_static_argument_whose_repr_raises_works(api):
    view = getattr(js, api)(f, static_argnums=1)(X, BadRepr())
    if view is not None:  # find_nan: no NaN here
        assert str(view)


@pytest.mark.parametrize(
    "api",
    list(APIS),
)
@pytest.mark.parametrize("option", ["static_argnums", "static_argnames"])
def test_static_options_of_none_mean_none(api, option):
    view = getattr(js, api)(f, **{option: None})(X)
    if view is not None:
        assert str(view)


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    ("options", "fix"),
    [
        ({"static_argnums": "x"}, "static_argnums must be ints, got 'x'; write e.g."),
        ({"static_argnames": 3}, "static_argnames must be strings, got 3; write e.g."),
        ({"static_argnums": [None]}, "static_argnums must be ints, got None"),
    ],
)
def test_bad_static_options_are_one_line_errors(api, options, fix):
    with pytest.raises(InvalidCallError) as info:
        getattr(js, api)(f, **options)(X)
    assert fix in _one_line_error(info)


@pytest.mark.parametrize("value", [BadRepr(), {"a": BadRepr()}])
def test_sharding_of_a_value_whose_repr_raises_is_a_one_line_error(value):
    with pytest.raises(JaxscopeError) as info:
        js.sharding(value)
    message = _one_line_error(info)
    assert "BadRepr (<BadRepr>), not a JAX array" in message
    assert "jax.device_put" in message


# ------------------------------------------------------------------------- magics

MAGICS = ["jaxpr", "hlo", "jaxgraph", "jaxstep --prompt", "sharding"]


@pytest.fixture
def shell(ip, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    ip.user_ns.update(
        jax=jax, jnp=jnp, f=f, x=X, BadRepr=BadRepr, BadMessage=BadMessage
    )
    return ip


def _run(shell, magic: str, call: str) -> None:
    name, *options = magic.split()
    shell.run_line_magic(name, " ".join([*options, call]))


@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("f(BadRepr())", "x is a BadRepr (<BadRepr>), which JAX cannot trace"),
        ("f(x, y=BadRepr())", "y (keyword) is a BadRepr (<BadRepr>)"),
        (
            "jax.jit(f, static_argnums='x')(x)",
            "raised TypeError: 'str' object cannot be interpreted as an integer",
        ),
        (
            "jax.jit(f, static_argnames=3)(x)",
            "raised TypeError: 'int' object is not iterable",
        ),
    ],
)
def test_magics_give_one_line_usage_errors(shell, magic, call, expected):
    with pytest.raises(UsageError) as info:
        _run(shell, magic, call)
    assert expected in _one_line_error(info)


@pytest.mark.parametrize("magic", MAGICS)
@pytest.mark.parametrize(
    "call",
    [
        "jax.jit(f, static_argnums=1)(x, BadRepr())",
        "jax.jit(f, static_argnums=None)(x)",
    ],
)
def test_magics_accept_static_arguments_whose_repr_raises(shell, magic, call):
    _run(shell, magic, call)


@pytest.mark.parametrize("magic", MAGICS)
def test_an_argument_raising_an_exception_whose_message_raises(shell, magic):
    shell.run_cell("def boom():\n    raise BadMessage()")
    with pytest.raises(UsageError) as info:
        _run(shell, magic, "f(boom())")
    assert "raised BadMessage" in _one_line_error(info)


def test_the_stepper_prompt_prints_a_value_whose_repr_raises():
    from jaxscope._stepper.magic import StepperPrompt

    out = io.StringIO()
    script = "p type('B', (), {'__repr__': lambda self: 1 / 0})()\nq\n"
    StepperPrompt(js.step(f)(X), io.StringIO(script), out).run()
    assert "<B object>" in out.getvalue()
