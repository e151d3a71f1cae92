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
from jaxscope._features import feature_modules


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

# what a magic needs here besides the call: %jaxstep reads its prompt from stdin,
# %jaxdiff compares the call with a first one, %jaxprobe needs a value to read
OPTIONS = {"jaxstep": "--prompt", "jaxdiff": "--no-hlo f(x)", "jaxprobe": "--at result"}


def _call_magics() -> list[str]:
    """Every line magic of a feature's ``MAGICS`` class whose one argument is a call
    (or an expression) it evaluates, with the options of ``OPTIONS``."""
    names = []
    for module in feature_modules("magic"):
        magics = getattr(module, "MAGICS", None)
        for name, method in magics.magics["line"].items() if magics else ():
            parser = getattr(getattr(magics, method), "parser", None)
            actions = parser._actions if parser is not None else []
            if [a.dest for a in actions if not a.option_strings] in (
                ["call"],
                ["expr"],
            ):
                names.append(f"{name} {OPTIONS.get(name, '')}".strip())
    return sorted(names)


MAGICS = _call_magics()


def test_the_magics_checked_here_include_every_magic_that_takes_a_call():
    names = {magic.split()[0] for magic in MAGICS}
    assert {"jaxpr", "hlo", "jaxgraph", "jaxstep", "sharding"} <= names
    assert {"jaxprof", "jaxmem"} <= names  # missing from the list once kept by hand
    assert not names & {"purity", "recompiles", "jaxerrors"}  # no call to evaluate


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


# ------------------------------------------------------- options of views and stepper


def _g(x):
    return jnp.sum(jnp.tanh(x) * 2.0)


@pytest.fixture(scope="module")
def views():
    return {
        "jaxpr": js.jaxpr(_g)(X),
        "hlo": js.hlo(_g)(X),
        "profile": js.profile(_g, repeat=1, warmup=0)(X),
        "memory": js.memory(_g)(X),
    }


def _set_depth(view, value):
    view.depth = value


def _set_max_eqns(view, value):
    view.max_eqns = value


# (what is called, the bad value, what the one line must say)
VIEW_OPTIONS = [
    ("jaxpr", lambda v, b: v.text_at(depth=b), -3, "depth must be an int >= 0"),
    ("jaxpr", lambda v, b: v.text_at(depth=b), "2", "depth must be an int >= 0"),
    ("jaxpr", lambda v, b: v.text_at(max_eqns=b), -1, "max_eqns must be an int >= 2"),
    ("jaxpr", lambda v, b: v.text_at(max_eqns=b), 1.5, "max_eqns must be an int >= 2"),
    ("jaxpr", lambda v, b: v.text_at(width=b), -5, "width must be an int >= 20"),
    ("jaxpr", lambda v, b: v.text_by_line(max_eqns=b), -2, "max_eqns must be an int"),
    ("jaxpr", _set_depth, -1, "depth must be an int >= 0"),
    ("jaxpr", _set_depth, -100, "depth must be an int >= 0"),
    ("jaxpr", _set_depth, 1.5, "depth must be an int >= 0"),
    ("jaxpr", _set_depth, "2", "depth must be an int >= 0"),
    ("jaxpr", _set_max_eqns, 0, "max_eqns must be an int >= 2"),
    ("jaxpr", _set_max_eqns, True, "max_eqns must be an int >= 2"),
    ("hlo", lambda v, b: v.source_line("f", b), "x", "line must be an int >= 1"),
    ("profile", lambda v, b: v.top(b), -1, "n must be an int >= 0"),
    ("profile", lambda v, b: v.top(b), "3", "n must be an int >= 0"),
    ("memory", lambda v, b: v.largest(b), -1, "n must be an int >= 0"),
    ("memory", lambda v, b: v.largest(b), "3", "n must be an int >= 0"),
]


@pytest.mark.parametrize(
    ("view", "call", "bad", "says"),
    VIEW_OPTIONS,
    ids=[f"{v}-{says.split()[0]}-{bad!r}" for v, _, bad, says in VIEW_OPTIONS],
)
def test_view_options_are_checked_with_one_line(views, view, call, bad, says):
    with pytest.raises(InvalidCallError) as info:
        call(views[view], bad)
    message = _one_line_error(info)
    assert says in message and f"got {bad!r}" in message
    assert "e.g." in message  # the fix


def test_view_options_that_make_sense_still_work(views):
    view = views["jaxpr"]
    assert view.text_at(depth=0, max_eqns=2, width=40)
    view.depth, view.max_eqns = 1, None
    view.depth, view.max_eqns = None, 200
    assert str(view)
    assert len(views["profile"].top(0)) == 0 and views["memory"].largest(1)


STEPPER_OPTIONS = [
    (lambda s: s.break_on(nan="yes"), "nan must be True or False, got 'yes'"),
    (lambda s: s.break_on(inf=[1]), "inf must be True or False, got [1]"),
    (lambda s: s.break_on(primitive=3), "primitive must be a primitive name"),
    (lambda s: s.break_on(primitive=["sin", 3]), "primitive must be a primitive name"),
]


@pytest.mark.parametrize(("call", "says"), STEPPER_OPTIONS)
def test_stepper_options_are_checked_with_one_line(call, says):
    with pytest.raises(InvalidCallError) as info:
        call(js.step(_g)(X))
    assert says in _one_line_error(info)


@pytest.mark.parametrize("inf", ["x", 2, [True]])
def test_find_nan_inf_must_be_none_true_or_false(inf):
    with pytest.raises(InvalidCallError) as info:
        js.find_nan(_g, inf=inf)
    message = _one_line_error(info)
    assert f"inf must be None, True or False, got {inf!r}" in message
    assert "js.find_nan(f, inf=True)" in message


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"dims": 3}, "dims must be a tuple of one or two ints, got 3"),
        ({"dims": "01"}, "dims must be a tuple of one or two ints, got '01'"),
        ({"spec": jax.sharding.PartitionSpec("a"), "mesh": {"a": -2}}, "got -2"),
        ({"spec": jax.sharding.PartitionSpec("a"), "mesh": {"a": 0}}, "got 0"),
        ({"spec": jax.sharding.PartitionSpec("a"), "mesh": {"a": "x"}}, "got 'x'"),
    ],
)
def test_sharding_options_are_checked_with_one_line(options, says):
    with pytest.raises(JaxscopeError) as info:
        js.sharding(jnp.ones((8, 4)), **options)
    assert isinstance(info.value, ValueError | TypeError)
    assert says in _one_line_error(info)


@pytest.mark.parametrize(
    "until", [lambda: True, lambda eqn: True, lambda eqn, values, more: True]
)
def test_an_until_callable_that_cannot_take_eqn_and_values_is_one_line(until):
    stepper = js.step(_g)(X)
    with pytest.raises(js.BreakpointError) as info:
        stepper.run(until=until)
    message = _one_line_error(info)
    assert "is called with (eqn, values)" in message
    assert "run(until=lambda eqn, values:" in message
    assert stepper.current is not None  # nothing ran


def test_an_until_callable_of_eqn_and_values_still_works():
    stepper = js.step(_g)(X).run(until=lambda eqn, values: eqn.primitive == "mul")
    assert stepper.current.primitive == "mul"


def test_events_of_needs_a_function_name():
    with js.watch_recompiles() as log:
        jax.jit(_g)(X)
    with pytest.raises(InvalidCallError) as info:
        log.events_of(3)
    assert "function must be a function's name, got 3" in _one_line_error(info)
    assert log.events_of("_g")


# Every view that takes the function first returns a function of its arguments, like
# jax.make_jaxpr; passing the arguments along with the function is the common slip.
CURRIED = {
    "jaxpr": {},
    "hlo": {},
    "graph": {},
    "step": {},
    "find_nan": {"mode": "compiled"},
    "probe": {"at": ["y"]},
    "memory": {},
    "residuals": {},
    "profile": {"repeat": 1},
    "compile_profile": {},
    "shardings": {},
}


@pytest.mark.parametrize("api", sorted(CURRIED))
def test_arguments_passed_with_the_function_say_to_call_what_it_returns(api):
    def step(x):
        y = jnp.sin(x)
        return y * 2.0

    options = CURRIED[api]
    with pytest.raises(InvalidCallError) as info:
        getattr(js, api)(step, X, **options)
    message = _one_line_error(info)
    fix = message.split("write ", 1)[1].split(", not ", 1)[0]
    assert fix.startswith(f"js.{api}(step"), message
    assert fix.endswith(")(*args)"), message
    # The fix, applied: the call it names, with the arguments given to what it returns.
    env = {"js": js, "step": step}
    made = eval(fix.removesuffix("(*args)"), env)  # our own message, as pasted
    assert callable(made)
    made(X)
