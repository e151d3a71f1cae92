"""The optax MLP step as the JAX docs write it: the user's names at the user's
lines (``logits``, ``loss``, ``grads``), inside optax's own jits too, and a line
breakpoint that stops once each time the line runs."""

from __future__ import annotations

import importlib.util
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxscope as js
from jaxscope._stepper.magic import StepperPrompt

_FILE = pathlib.Path(__file__).parent / "optax_mlp.py"


def _line(text):
    lines = _FILE.read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


LOSS_LINE = _line("return optax.softmax_cross_entropy_with_integer_labels")
UPDATE_LINE = _line("params = jax.tree.map(")
STEP_LINE = _line("loss, grads = jax.value_and_grad")
RETURN_LINE = _line('return x @ last["w"]')
LOGITS_LINE = _line("logits = predict(params, x)")


@pytest.fixture(scope="module")
def mlp():
    spec = importlib.util.spec_from_file_location("optax_mlp", _FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def batch(mlp):
    params = mlp.init(jax.random.PRNGKey(0))
    x = jax.random.normal(jax.random.PRNGKey(1), (64, 16))
    y = jnp.arange(64) % 10
    mlp.sgd_step(params, x, y, 0.1)  # as a user would have: JAX's caches are warm
    return params, x, y


def _close(got, want):
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_logits_loss_and_grads_resolve_at_the_users_lines(mlp, batch):
    params, x, y = batch
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    s.run(until=f"optax_mlp.py:{LOSS_LINE}")
    _close(s.value("logits"), mlp.predict(params, x))
    assert s.user_frame is not None and s.user_frame.function == "loss_fn"
    s.run(until=f"optax_mlp.py:{UPDATE_LINE}")
    loss, grads = jax.value_and_grad(mlp.loss_fn)(params, x, y)
    names = s.namespace()
    _close(names["loss"], loss)
    _close(names["grads"], grads)  # the pytree value_and_grad returned
    _close(names["p"], params[0]["b"])  # the lambda's first call: its own p
    assert "$a" in names and "a" not in names  # jaxpr names only with a $


def test_optax_library_jit_keeps_the_users_names_and_says_it_is_a_library(
    mlp, batch, fake_io
):
    params, x, y = batch
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    s.run(until=f"optax_mlp.py:{LOSS_LINE}")
    while not s.frames[-1].label.startswith("jit(take_along_axis"):
        s.step()
    stdin, stdout = fake_io(
        ["p x.shape", "p y.shape", "p logits.shape", "up", "p x.shape"]
    )
    StepperPrompt(s, stdin, stdout).run()
    out = stdout.getvalue()
    assert "(in library code: softmax_cross_entropy_with_integer_labels (" in out
    assert "names of loss_fn)" in out
    assert "(jaxstep) p x.shape\n(64, 16)\n" in out  # the user's x, not optax's
    assert "(jaxstep) p y.shape\n(64,)\n" in out
    assert "(jaxstep) p logits.shape\n(64, 10)\n" in out
    assert "(jaxstep) up\n> " in out
    assert f"optax_mlp.py:{STEP_LINE} in sgd_step (p reads this frame's names)" in out


def test_up_and_down_move_between_the_users_frames(mlp, batch, fake_io):
    params, x, y = batch
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    s.run(until=f"optax_mlp.py:{RETURN_LINE}")  # after x = jax.nn.relu(...)
    commands = ["p x.shape", "up", "p x.shape", "up", "up", "down", "d", "d"]
    stdin, stdout = fake_io(commands)
    StepperPrompt(s, stdin, stdout).run()
    out = stdout.getvalue()
    assert "(jaxstep) p x.shape\n(64, 32)\n" in out  # predict's x: the hidden layer
    assert f"optax_mlp.py:{LOGITS_LINE} in loss_fn (p reads" in out
    assert "(jaxstep) p x.shape\n(64, 16)\n" in out  # loss_fn's x: the input
    assert "*** already in the outermost frame of the program" in out
    assert "*** already in the innermost frame" in out
    assert "Traceback" not in out


def test_a_line_breakpoint_stops_once_each_time_the_line_runs(mlp, batch, fake_io):
    params, x, y = batch
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    stdin, stdout = fake_io([f"b {LOSS_LINE}", "c", "p logits.shape", "c"])
    StepperPrompt(s, stdin, stdout).run()
    out = stdout.getvalue()
    # optax's nested jits on the line (take_along_axis, _take, _where) run through
    assert out.count(f"optax_mlp.py:{LOSS_LINE} in loss_fn  [") == 1
    assert "(jaxstep) p logits.shape\n(64, 10)\n" in out
    assert "program finished (sgd_step)" in out


def test_until_a_line_stops_at_its_next_run_not_inside_it(mlp, batch):
    params, x, y = batch
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    s.run(until=f"optax_mlp.py:{LOSS_LINE}")
    first = s.current.path
    s.next()
    s.run(until=f"optax_mlp.py:{LOSS_LINE}")
    assert s.done  # one run of the line in the program (its backward pass joins it)
    assert len(first) == 1


def test_a_conditional_breakpoint_stops_only_where_its_condition_holds(
    mlp, batch, fake_io
):
    params, x, y = batch
    commands = [
        f"b {UPDATE_LINE}, loss > 100",
        f"b {LOSS_LINE}, logits.shape[0] == 64",
        "b",
        "c",
        "c",
    ]
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    stdin, stdout = fake_io(commands)
    StepperPrompt(s, stdin, stdout).run()
    out = stdout.getvalue()
    assert f"breakpoint set: {UPDATE_LINE} if loss > 100" in out
    assert f"line {UPDATE_LINE} if loss > 100" in out
    assert out.count(f"optax_mlp.py:{LOSS_LINE} in loss_fn  [") == 1
    assert f"optax_mlp.py:{UPDATE_LINE}" not in out.split("(jaxstep) b\n")[1]
    assert "program finished (sgd_step)" in out
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    s.break_on(line=UPDATE_LINE, condition="loss < 100").run()
    assert s.reason == "breakpoint" and s.current.source.line == UPDATE_LINE


def test_a_condition_that_fails_stops_and_says_why(mlp, batch, fake_io):
    params, x, y = batch
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    stdin, stdout = fake_io([f"b {LOSS_LINE}, nope > 1", "b 3, (", "c"])
    StepperPrompt(s, stdin, stdout).run()
    out = stdout.getvalue()
    assert "*** break_on(condition=...): '(' is not a Python expression" in out
    assert (
        "*** the condition nope > 1 raised NameError: name 'nope' is not defined; "
        "stopped here" in out
    )
    assert s.current.source.line == LOSS_LINE


def test_the_values_table_names_values_as_the_source_binds_them(mlp, batch):
    params, x, y = batch
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    s.run(until=f"optax_mlp.py:{UPDATE_LINE}")
    labels = {v.user_name for v in s.summaries()}
    # the lambda's first call: its g is grads[0]['b'], its p params[0]['b']
    assert {"loss", "grads[1]['w']", "grads[0]['w']", "g", "p", "x", "y"} <= labels
    s = js.step(mlp.sgd_step)(params, x, y, 0.1)
    s.run(until=f"optax_mlp.py:{RETURN_LINE}")
    hidden = [v for v in s.summaries() if v.user_name == "x" and v.shape == (64, 32)]
    assert hidden  # the relu's result: predict's x after x = jax.nn.relu(...)
