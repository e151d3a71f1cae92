"""``js.explain`` on errors raised through Flax NNX and Equinox: hints in the library's
own terms (``nnx.jit``, ``eqx.filter_jit``, ``eqx.field(static=True)``), and the errors
only these libraries raise (reused donated buffers, BatchNorm's unbound axis, NNX
objects mutated across trace levels)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import optax
import pytest
from flax import linen, nnx

import jaxscope as js
from jaxscope._source import short_path


def raised(fn, *args, **kwargs) -> BaseException:
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # the point of the helper
        return exc
    pytest.fail(f"{fn!r} raised nothing")


# ------------------------------------------------------------------ wrapper-aware hints


class Tiny(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.lin = nnx.Linear(2, 2, rngs=rngs)

    def __call__(self, x, train):
        if train:  # <- error
            return self.lin(x)
        return x


@nnx.jit
def nnx_step(model, x, train):
    return model(x, train)


def test_nnx_jit_hint_names_nnx_jit_not_jax_jit(line_of):
    report = js.explain(
        raised(nnx_step, Tiny(nnx.Rngs(0)), jnp.ones((1, 2)), jnp.array(True))
    )
    assert report.category == "bool_conversion"
    assert report.user_frame.line == line_of(Tiny.__call__, "# <- error")
    # nnx_step is jitted by its decorator: the fix is there
    assert "@functools.partial(nnx.jit, static_argnums=(2,))" in report.hint
    assert "nnx.jit(nnx_step.__wrapped__, static_argnums=(2,))" in report.hint
    assert "jax.jit" not in report.hint
    unwrapped = nnx.jit(nnx_step.__wrapped__, static_argnums=(2,))
    assert unwrapped(Tiny(nnx.Rngs(0)), jnp.ones((1, 2)), True).shape == (1, 2)
    assert "(traced for nnx.jit)" in report.message


@eqx.filter_jit
def eqx_branch(x, y):
    if x > 0:  # <- error
        return y
    return -y


def test_filter_jit_traced_flag_is_named_and_passing_a_python_value_is_the_fix():
    report = js.explain(raised(eqx_branch, jnp.array(1.0), jnp.ones(2)))
    assert report.category == "bool_conversion"
    assert report.arguments == ("x",)
    assert "depends on argument x" in report.message
    assert "dynamic_nodonate" not in str(report)
    assert "(traced for eqx.filter_jit)" in report.message
    assert "static_argnums" not in report.hint
    assert "jax.jit" not in report.hint
    assert "pass it as a Python bool/int/float" in report.hint
    assert "eqx.filter_jit keeps non-array arguments static" in report.hint
    # JAX's message names Equinox's own wrapper; the report names the user's function
    assert any(
        c.startswith(f"traced function: eqx_branch ({short_path(__file__)}:")
        for c in report.jax_context
    )


class Gated(eqx.Module):
    w: jax.Array
    flag: bool

    def __call__(self, x):
        if self.flag:  # <- error
            return self.w * x
        return x


@eqx.filter_jit
def eqx_gated(model, x):
    return model(x)


def test_filter_jit_array_in_a_flag_field_suggests_eqx_field_static():
    model = Gated(jnp.ones(3), jnp.array(True))  # an array where a bool belongs
    report = js.explain(raised(eqx_gated, model, jnp.ones(3)))
    assert report.arguments == ("model.flag",)
    assert "flag: bool = eqx.field(static=True)" in report.hint
    assert "class Gated" in report.hint
    assert "static_argnums" not in report.hint


class Activated(eqx.Module):
    w: jax.Array
    activation: Callable

    def __call__(self, x):
        return self.activation(self.w * x)


@jax.jit
def jax_forward(model, x):
    return model(x)


def test_equinox_module_under_jax_jit_suggests_filter_jit_or_a_static_field():
    model = Activated(jnp.ones(3), jax.nn.relu)
    report = js.explain(raised(jax_forward, model, jnp.ones(3)))
    assert "static_argnames='model.activation'" not in report.hint
    assert "eqx.filter_jit(jax_forward)" in report.hint
    assert "activation: Callable = eqx.field(static=True)" in report.hint


class Settings(NamedTuple):
    mode: str
    scale: jax.Array


def test_a_field_path_is_never_offered_as_a_static_argname():
    def forward(cfg, x):
        return x * cfg.scale

    report = js.explain(raised(jax.jit(forward), Settings("fast", 2.0), jnp.ones(3)))
    assert "static_argnames='cfg.mode'" not in report.hint
    assert "static_argnames='cfg'" in report.hint


# ------------------------------------------------------------------- donated buffers


@partial(jax.jit, donate_argnums=0)
def sgd(params, grads):
    return params - 0.1 * grads


def reuse_donated():
    params = jnp.ones(3)
    grads = jnp.ones(3)
    sgd(params, grads)  # <- donor
    return params + 1  # <- error


def test_reusing_a_donated_argument_names_it_and_the_call_that_donated_it(line_of):
    report = js.explain(raised(reuse_donated))
    assert report.category == "donated"
    assert report.user_frame.line == line_of(reuse_donated, "# <- error")
    assert "`params`" in report.message
    assert "sgd(params, grads)" in report.message
    assert "Reshape" not in report.hint
    assert "params = sgd(params, grads)" in report.hint
    assert "donate_argnums" in report.hint
    donor = line_of(reuse_donated, "# <- donor")
    assert any(f":{donor}" in c for c in report.jax_context)


def pass_donated_again():
    params = jnp.ones(3)
    grads = jnp.ones(3)
    new = sgd(params, grads)
    return sgd(params, new)  # <- error


def test_passing_a_donated_array_to_a_jitted_call_again(line_of):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = js.explain(raised(pass_donated_again))
    assert report.category == "donated"
    assert report.user_frame.line == line_of(pass_donated_again, "# <- error")
    assert "`params`" in report.message
    assert "use `new`" in report.hint


@eqx.filter_jit(donate="all")
def eqx_sgd(params, grads):
    return params - 0.1 * grads


def eqx_reuse_donated():
    params = jnp.ones(3)
    eqx_sgd(params, jnp.ones(3))
    return params * 2  # <- error


def test_reusing_an_array_donated_through_filter_jit_names_eqx_donate():
    report = js.explain(raised(eqx_reuse_donated))
    assert report.category == "donated"
    assert "`params`" in report.message
    assert "eqx.filter_jit" in report.hint and "donate=" in report.hint
    assert "donate_argnums" not in report.hint


def deleted_by_hand():
    x = jnp.ones(3)
    x.delete()
    return x + 1  # <- error


def test_an_array_deleted_by_hand_is_not_said_to_be_donated():
    report = js.explain(raised(deleted_by_hand))
    assert report.category == "donated"
    assert "`x`" in report.message
    assert "x.delete()" in report.message
    assert "donated to" not in report.message


# ----------------------------------------------------------------- unbound axis names


class Normed(eqx.Module):
    lin: eqx.nn.Linear
    bn: eqx.nn.BatchNorm

    def __init__(self, key):
        self.lin = eqx.nn.Linear(3, 3, key=key)
        self.bn = eqx.nn.BatchNorm(3, axis_name="batch", mode="batch")

    def __call__(self, x, state):
        x, state = self.bn(self.lin(x), state)  # <- error
        return x, state


def normed():
    return eqx.nn.make_with_state(Normed)(jax.random.PRNGKey(0))


def test_batchnorm_under_vmap_without_axis_name_gets_the_vmap_call_fixed(line_of):
    model, state = normed()

    def batched(xs):
        return jax.vmap(model, in_axes=(0, None), out_axes=(0, None))(xs, state)

    report = js.explain(raised(batched, jnp.ones((2, 3))))
    assert report.category == "unbound_axis"
    assert report.user_frame.line == line_of(Normed.__call__, "# <- error")
    assert "eqx.nn.BatchNorm" in report.message and "'batch'" in report.message
    assert (
        'jax.vmap(model, in_axes=(0, None), out_axes=(0, None), axis_name="batch")'
        in report.hint
    )
    assert "shard_map" not in report.hint


def test_batchnorm_called_on_one_example_without_vmap():
    model, state = normed()
    report = js.explain(raised(model, jnp.ones(3), state))
    assert report.category == "unbound_axis"
    assert (
        'jax.vmap(model, axis_name="batch", in_axes=(0, None), out_axes=(0, None))'
        in (report.hint)
    )


def centred(x):
    return x - jax.lax.pmean(x, "rows")  # <- error


def test_collective_under_vmap_without_axis_name():
    report = js.explain(raised(lambda xs: jax.vmap(centred)(xs), jnp.ones((2, 3))))
    assert report.category == "unbound_axis"
    assert "'rows'" in report.message
    assert 'jax.vmap(centred, axis_name="rows")' in report.hint


# ------------------------------------------------- NNX objects across trace levels


class Counter(nnx.Module):
    def __init__(self):
        self.count = nnx.Variable(jnp.array(0))
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))

    def __call__(self, x):
        self.count[...] += 1  # <- error
        return self.lin(x)


def test_nnx_module_mutated_under_jax_jit_suggests_nnx_jit_or_split_merge(line_of):
    counter = Counter()

    @jax.jit
    def step(x):
        return counter(x)

    exc = raised(step, jnp.ones((1, 2)))
    assert type(exc).__name__ == "TraceContextError"
    report = js.explain(exc)
    assert report.category == "trace_level"
    assert report.user_frame.line == line_of(Counter.__call__, "# <- error")
    assert "`counter`" in report.message and "step" in report.message
    assert "jax.jit" in report.message
    assert "nnx.jit" in report.hint
    assert "nnx.split" in report.hint and "nnx.merge" in report.hint
    assert report.docs.startswith("https://flax.readthedocs.io/")
    assert js.explain(exc).jax_message == (
        "Cannot mutate Variable from a different trace level"
    )


def test_nnx_module_captured_by_an_nnx_jit_function_should_be_an_argument():
    counter = Counter()

    @nnx.jit
    def step(x):
        return counter(x)

    report = js.explain(raised(step, jnp.ones((1, 2))))
    assert report.category == "trace_level"
    assert "nnx.jit" in report.message
    assert "add `counter` as a parameter of step" in report.hint
    assert "step(counter, " in report.hint


def test_graph_node_from_an_outer_trace_passed_to_an_nnx_transform():
    counter = Counter()

    def per_example(x):
        return nnx.grad(lambda m, x: m(x).sum())(counter, x)

    exc = raised(lambda xs: jax.vmap(per_example)(xs), jnp.ones((3, 1, 2)))
    assert str(exc).startswith("Cannot extract graph node from different trace level")
    report = js.explain(exc)
    assert report.category == "trace_level"
    assert "`counter`" in report.message and "per_example" in report.message
    assert "jax.vmap" in report.message
    assert "nnx.vmap" in report.hint


def test_flax_trace_level_error_is_shown_source_mapped_in_a_cell(ip):
    from IPython.utils.capture import capture_output

    ip.run_cell(
        "import jax, jax.numpy as jnp\n"
        "from flax import nnx\n"
        "class M(nnx.Module):\n"
        "    def __init__(self):\n"
        "        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))\n"
        "m = M()\n"
        "def h(x):\n"
        "    m.extra = 1\n"
        "    return x\n"
    )
    with capture_output() as captured:
        ip.run_cell("jax.jit(h)(jnp.ones(2))")
    assert "hint:" in captured.stdout
    assert "nnx.jit" in captured.stdout


def test_pytest_report_explains_a_flax_trace_level_failure(pytester):
    pytester.makepyfile(
        test_nnx="""
import jax
import jax.numpy as jnp
from flax import nnx


class M(nnx.Module):
    def __init__(self):
        self.lin = nnx.Linear(2, 2, rngs=nnx.Rngs(0))


model = M()


def test_mutation_under_jax_jit():
    def step(x):
        model.extra = 1
        return x

    jax.jit(step)(jnp.ones(2))
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "jaxscope: source-mapped JAX error" in out
    assert "`model` (an NNX M) is captured by step" in out


# ------------------------------------------------------ frames: the user's code only


class LinenMLP(linen.Module):
    @linen.compact
    def __call__(self, x):
        return linen.Dense(4)(x)


class EqxBlock(eqx.Module):
    lin: eqx.nn.Linear

    def __call__(self, x):
        return self.lin(x)


def _nnx_wrong_width():
    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))

    @nnx.jit
    def step(model, x):
        return model(x).sum()

    return raised(step, model, jnp.ones((2, 5)))


def _linen_wrong_width():
    model = LinenMLP()
    params = model.init(jax.random.key(0), jnp.ones((1, 3)))
    return raised(jax.jit(model.apply), params, jnp.ones((1, 5)))


def _eqx_wrong_width():
    block = EqxBlock(eqx.nn.Linear(3, 4, key=jax.random.key(0)))
    return raised(eqx.filter_jit(lambda m, x: m(x)), block, jnp.ones(5))


def _optax_wrong_tree():
    optimizer = optax.adam(1e-3)
    state = optimizer.init({"w": jnp.ones(3)})
    return raised(
        jax.jit(optimizer.update), {"w": jnp.ones(3), "b": jnp.ones(2)}, state
    )


@pytest.mark.parametrize(
    "make", [_nnx_wrong_width, _linen_wrong_width, _eqx_wrong_width, _optax_wrong_tree]
)
def test_report_frames_are_the_users_own_code_never_a_librarys(make):
    report = js.explain(make())
    assert report.frames, report
    assert all(
        "site-packages" not in frame.file
        and not frame.file.startswith(("flax", "equinox", "optax", "jax"))
        for frame in report.frames
    ), report.frames
    assert report.frames[-1] == report.user_frame
    assert report.user_frame.file == __file__
