"""js.probe(f, at=[...]): intermediates of the real compiled program, by the user's
names, lines, scopes or a predicate; stacked over loop iterations and devices."""

from __future__ import annotations

import html

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js


@pytest.fixture(scope="module")
def mlp(stepper_programs):
    p = stepper_programs
    params = p.mlp_init(jax.random.key(0))
    x = jnp.linspace(-1.0, 1.0, 8).reshape(2, 4)
    y = jax.nn.one_hot(jnp.array([0, 2]), 3)
    return p, (params, x, y)


def test_user_names_of_an_optax_style_mlp_step_read_the_compiled_values(mlp):
    p, args = mlp
    view = js.probe(p.train_step, at=["logits", "h"])(*args)
    params, x, _ = args
    h = jnp.tanh(x @ params[0]["w"] + params[0]["b"])
    logits = h @ params[1]["w"] + params[1]["b"]
    np.testing.assert_allclose(view["h"], h, rtol=1e-5)
    np.testing.assert_allclose(view["logits"], logits, rtol=1e-5)
    assert view.info["logits"].source.line == _line(p.mlp_loss, "logits = ")
    assert view.info["logits"].phase == "forward"
    assert view.keys() == ["logits", "h"]
    new, loss = view.result
    want_new, want_loss = p.train_step(*args)
    np.testing.assert_array_equal(loss, want_loss)
    jax.tree_util.tree_map(np.testing.assert_array_equal, new, want_new)


def test_a_line_and_a_predicate_select_equations(mlp):
    p, args = mlp
    line = _line(p.mlp_loss, "logits = ")
    view = js.probe(
        p.train_step, at=[f"programs.py:{line}", lambda e: e.primitive == "tanh"]
    )(*args)
    at_line = [v for v in view.values if v.name.startswith("programs.py:")]
    assert at_line and all(v.source.line == line for v in at_line)
    assert at_line[0].name == f"programs.py:{line}"
    assert [v.primitive for v in view.values if v.name.startswith("tanh@")] == ["tanh"]


def test_inside_a_scan_values_are_stacked_or_the_last(stepper_programs):
    p = stepper_programs
    params = {"wh": jnp.eye(3) * 0.5, "wx": jnp.ones((2, 3)) * 0.1}
    xs = jnp.linspace(0.0, 1.0, 10).reshape(5, 2)
    stacked = js.probe(p.rnn, at="h")(params, xs)
    last = js.probe(p.rnn, at="h", loops="last")(params, xs)
    carry, _ = p.rnn(params, xs)
    assert stacked["h"].shape == (5, 3)
    assert stacked.info["h"].axes[0].startswith("scan iteration")
    np.testing.assert_allclose(stacked["h"][-1], carry, rtol=1e-6)
    np.testing.assert_allclose(last["h"], carry, rtol=1e-6)
    assert last.info["h"].axes == () and last.info["h"].reduced


def test_inside_a_while_loop_the_value_is_the_last_iterations(stepper_programs):
    p = stepper_programs
    a = jnp.float32(2.0)
    view = js.probe(p.newton_sqrt, at=lambda e: e.primitive == "div")(a)
    (value,) = view.values
    assert "while" in value.reduced[0]
    # a / x of the last iteration run, x being the next-to-last estimate of sqrt(2)
    np.testing.assert_allclose(view[value.name], np.sqrt(2.0), rtol=1e-2)


def test_a_named_scope_reads_its_results():
    def f(x):
        with jax.named_scope("encoder"):
            h = jnp.sin(x) * 2.0
        return h.sum()

    view = js.probe(f, at="encoder")(jnp.ones(3))
    np.testing.assert_allclose(view["encoder"], jnp.sin(jnp.ones(3)) * 2.0)


def test_per_device_values_of_a_sharded_program():
    mesh = jax.make_mesh((8,), ("d",))
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("d")))

    @jax.jit
    def f(x):
        h = jnp.sin(x) * 2.0
        return h.sum()

    view = js.probe(f, at="h")(x)
    assert len(view.info["h"].devices) == 8
    assert view.info["h"].devices[0][1].shape == (2,)

    def local(block):
        z = jnp.cos(block)
        return z * 2

    g = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
    per = js.probe(g, at="z")(x)
    assert per["z"].shape == (8, 2)
    assert per.info["z"].axes[0].startswith("device (d=8)")
    np.testing.assert_allclose(
        np.asarray(per["z"]).reshape(-1), np.cos(np.arange(16.0)), rtol=1e-6
    )


@pytest.mark.slow
@pytest.mark.parametrize("library", ["nnx", "linen", "equinox"])
def test_library_train_steps_are_probed_by_the_users_names(libs, library):
    step, args = libs.CASES[library](1.0, False)
    view = js.probe(step, at="h")(*args)
    # h = self.linear1(x); h = shifted_log(h, ...); (h = scale_norm(h): where named)
    assert view.keys()[:2] == ["h", "h #2"]
    assert view.values[1].source.line == libs.marker_line("FORWARD")
    assert view.values[1].primitive == "log"
    assert {v.phase for v in view.values} == {"forward"}
    assert all(np.isfinite(np.asarray(view[k])).all() for k in view)
    step, args = libs.CASES[library](1.0, False)
    real = jax.tree_util.tree_leaves(step(*args))
    ours = jax.tree_util.tree_leaves(view.result)
    if library == "nnx":  # nnx.jit's program also returns the state it updates
        assert any(np.shape(o) == () and np.allclose(o, real[0]) for o in ours)
    else:
        jax.tree_util.tree_map(np.testing.assert_allclose, ours, real)


def test_a_misspelled_name_is_one_line_naming_the_nearest(mlp):
    p, args = mlp
    with pytest.raises(js.InvalidCallError) as err:
        js.probe(p.train_step, at="logit")(*args)
    message = str(err.value)
    assert "\n" not in message and "'logit'" in message and "logits" in message


def test_a_line_without_equations_names_lines_that_have_them(mlp):
    p, args = mlp
    with pytest.raises(js.InvalidCallError, match=r"no equation at programs\.py:1;"):
        js.probe(p.train_step, at="programs.py:1")(*args)


def test_bad_options_are_one_clear_line():
    with pytest.raises(js.InvalidCallError, match="loops must be 'stack' or 'last'"):
        js.probe(jnp.sin, at="x", loops="first")
    with pytest.raises(js.InvalidCallError, match="at= names nothing"):
        js.probe(jnp.sin, at=[])
    with pytest.raises(js.InvalidCallError, match="each entry of at="):
        js.probe(lambda x: jnp.sin(x), at=[3.5])(jnp.ones(2))


def test_the_users_function_and_its_cache_are_untouched():
    @jax.jit
    def f(x):
        h = jnp.sin(x)
        return h * 2

    f(jnp.ones(3))
    before = f._cache_size()
    view = js.probe(f, at="h")(jnp.ones(3))
    assert f._cache_size() == before
    assert view.compile_seconds > 0
    view = js.probe(f, at=lambda e: e.primitive == "sin")(jnp.ones(3))
    assert f._cache_size() == before  # staged without the names, too
    assert view.values[0].primitive == "sin"


def test_the_view_summarises_values_in_text_and_escaped_html():
    def f(x):
        with jax.named_scope("<b>enc</b>"):
            h = jnp.log(x)
        return h.sum()

    view = js.probe(f, at=["<b>enc</b>", "h"])(jnp.array([1.0, -1.0]))
    text = str(view)
    assert "<b>enc</b>" in text and "compile" in text and "nan" in text
    assert "[1.0" not in text  # summarised, not dumped
    page = view._repr_mimebundle_()["text/html"]
    assert "<b>enc</b>" not in page and html.escape("<b>enc</b>") in page
    assert view.info["h"].summary.nan_count == 1


def _line(fn, text: str) -> int:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def test_a_value_inside_a_cond_branch_is_refused_in_one_line():
    def f(x):
        return jax.lax.cond(x.sum() > 0, lambda v: jnp.log(v), lambda v: v, x)

    with pytest.raises(js.InvalidCallError, match="inside cond branches"):
        js.probe(f, at=lambda e: e.primitive == "log")(jnp.ones(3))


def test_names_bound_under_value_and_grad_in_an_nnx_step_read_their_values(libs):
    # `pred` inside the loss under nnx.value_and_grad, and `loss, grads = ...`: the
    # names the user's Python held as it traced, not a guess from the source
    step, args = libs.CASES["nnx"](1.0, False)
    view = js.probe(step, at=["pred", "loss", "grads"])(*args)
    model, _, x, y = args
    pred = model(x)
    np.testing.assert_allclose(view["pred"], pred, rtol=1e-5)
    np.testing.assert_allclose(view["loss"], ((pred - y) ** 2).mean(), rtol=1e-5)
    leaves = [k for k in view if k.startswith("grads[")]
    assert leaves and all("linear" in k or "shift" in k for k in leaves)
    assert {v.phase for v in view.values if v.name == "pred"} == {"forward"}


def test_a_line_or_a_predicate_probe_traces_without_reading_the_users_locals(mlp):
    # reading locals (sys.settrace while JAX traces) slows all of tracing: only a
    # name needs them
    import sys

    outer = sys.gettrace()
    tracers = []

    def f(x):
        tracers.append(sys.gettrace())
        h = jnp.sin(x) * 2.0
        return h.sum()

    line = f"test_probe.py:{_line(f, 'h = ')}"
    view = js.probe(f, at=[lambda e: e.primitive == "sin", line])(jnp.ones(3))
    assert view.values[0].primitive == "sin"
    assert view[line].tolist() == pytest.approx([float(jnp.sin(1.0) * 2)] * 3)
    assert tracers == [outer]
    view = js.probe(f, at="h")(jnp.ones(3))
    assert view["h"].tolist() == pytest.approx([float(jnp.sin(1.0) * 2)] * 3)
    assert len(tracers) == 2
    if outer is None:  # where a debugger or coverage traces, locals are not read
        assert tracers[1] is not None
