"""The user's names of values: arguments, pytree paths, assigned variables, body
parameters; usable in ``p`` and shown first; never a name that does not hold."""

from __future__ import annotations

import linecache
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxscope as js
from jaxscope._stepper.magic import StepperPrompt

SOURCE = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    from jax import lax

    @jax.jit
    def layer(a, b):
        pre = a @ b
        return jnp.tanh(pre)

    def model(params, x):
        h = jnp.tanh(x @ params["w"] + params["b"])
        z = layer(h, params["w"])
        for _ in range(2):
            z = jnp.cos(z) + 1.0
        pair = (z * 2.0, z + 3.0)
        ys = lax.map(lambda v: v * 5.0, z)
        def cell(c, row):
            c = c + row * params["b"]
            return c, c.sum()
        carry, sums = lax.scan(cell, jnp.zeros(2), ys)
        return carry + pair[0].sum() + sums.sum()
    """
)
FILE = "names_prog.py"


@pytest.fixture(scope="module")
def model():
    linecache.cache[FILE] = (len(SOURCE), None, SOURCE.splitlines(True), FILE)
    namespace: dict = {}
    exec(compile(SOURCE, FILE, "exec"), namespace)
    return namespace["model"]


PARAMS = {"w": jnp.eye(2) * 0.5, "b": jnp.array([0.1, -0.2])}
X = jnp.array([[1.0, 2.0], [3.0, 4.0]])


def _run_to(stepper, line):
    return stepper.run(until=f"{FILE}:{line}")


def test_arguments_and_assigned_variables_name_values(model):
    s = js.step(model)(PARAMS, X)
    names = s.user_names
    assert {k: names[k] for k in "abc"} == {
        "a": "params['b']",
        "b": "params['w']",
        "c": "x",
    }
    assert list(names.values())[-1] == "result"  # the returned value, by its path
    _run_to(s, 12)  # after h = ...
    ns = s.namespace()
    want_h = np.tanh(np.asarray(X) @ np.asarray(PARAMS["w"]) + np.asarray(PARAMS["b"]))
    np.testing.assert_allclose(ns["h"], want_h, rtol=1e-6)
    np.testing.assert_array_equal(ns["params['w']"], PARAMS["w"])
    np.testing.assert_array_equal(eval("params['w']", {}, ns), PARAMS["w"])
    np.testing.assert_array_equal(ns["params_b"], PARAMS["b"])
    np.testing.assert_array_equal(ns["x"], X)
    h_var = next(k for k, v in s.user_names.items() if v == "h")
    np.testing.assert_allclose(s.value("h"), s.value(h_var))
    labels = [v.label for v in s.summaries()]
    assert f"h ({h_var})" in labels and "x (c)" in labels


def test_each_run_of_a_python_loop_names_its_result(model):
    s = js.step(model)(PARAMS, X)
    _run_to(s, 15)  # after the loop
    z_vars = [k for k, v in s.user_names.items() if v == "z"]
    assert len(z_vars) == 3  # the layer's result and both loop turns
    z = s.namespace()["z"]
    np.testing.assert_allclose(z, s.values[z_vars[-1]])


def test_no_name_where_the_value_is_not_the_variables(model):
    s = js.step(model)(PARAMS, X)
    _run_to(s, 16)  # ys = lax.map(lambda v: v * 5.0, z)
    while s.frames[-1].label != "scan body":  # into lax.map's body (a scan)
        s.step()
    s.next()
    assert s.values and "ys" not in s.user_names.values()  # v * 5.0 is one row
    _run_to(s, 20)  # carry, sums = lax.scan(...)
    names = set(s.user_names.values())
    assert "pair" not in names  # a tuple: two values leave the line
    assert "ys" in names  # the map's result


def test_nested_frames_use_the_bodys_parameter_names(model):
    s = js.step(model)(PARAMS, X)
    _run_to(s, 12)
    s.step()  # into jit(layer)
    assert s.frames[-1].label == "jit(layer)"
    assert set(s.user_names.values()) == {"a", "b"}
    s.next()
    assert "pre" in s.user_names.values()
    s.finish()
    _run_to(s, 20)
    while s.frames[-1].label != "scan body":
        s.step()
    users = set(s.user_names.values())
    assert {"c", "row", "params['b']"} <= users  # b: a loop constant, passed through
    s.next().next()
    np.testing.assert_allclose(
        s.namespace()["c"], s.namespace()["row"] * np.asarray(PARAMS["b"]), rtol=1e-6
    )


def test_p_evaluates_user_names_and_paths_at_the_prompt(model, fake_io):
    s = js.step(model)(PARAMS, X)
    stdin, stdout = fake_io([f"u {FILE}:12", "p h.shape", "p params['w'][0, 0]", "v"])
    StepperPrompt(s, stdin, stdout).run()
    out = stdout.getvalue()
    assert "(jaxstep) p h.shape\n(2, 2)\n" in out
    assert "(jaxstep) p params['w'][0, 0]\nArray(0.5, dtype=float32)\n" in out
    table = out.split("(jaxstep) v\n", 1)[1].splitlines()
    assert table[1].split()[:2] == ["params['b']", "(a)"]


def test_stepping_a_library_function_names_nothing_from_the_calling_line():
    s = js.step(jax.nn.softmax)(jnp.arange(3.0))
    s.run(until=lambda info, values: info.primitive == "div")
    assert set(s.user_names.values()) <= {"x", "result"}  # none of softmax's lines


def test_scan_carry_is_not_named_after_the_initial_value():
    def f(xs):
        init = xs[0] * 2.0
        total, _ = lax.scan(lambda c, v: (c + v, None), init, xs)
        return total

    s = js.step(f)(jnp.arange(3.0))
    s.run(until="scan")
    assert "init" in s.user_names.values()
    s.step()
    assert s.frames[-1].label == "scan body"
    assert "init" not in s.user_names.values()


def test_names_cost_a_second_trace_only_when_asked_for():
    # reading locals slows all of tracing: a stepper that shows no names never does
    traced = []

    def f(x):
        traced.append(1)
        h = jnp.sin(x) * 2.0
        return h.sum()

    stepper = js.step(f)(jnp.ones(3))
    assert stepper.run().result == pytest.approx(float(jnp.sin(1.0) * 6.0))
    assert len(traced) == 1
    stepper = js.step(f)(jnp.ones(3)).run(
        until=lambda e, v: e.primitive == "reduce_sum"
    )
    assert len(traced) == 2
    assert stepper.namespace()["h"].tolist() == pytest.approx(
        [float(jnp.sin(1.0) * 2)] * 3
    )
    assert len(traced) == 3  # the names' own trace, once
    stepper.namespace()
    assert len(traced) == 3
