"""Recompiles of Flax NNX, Linen and Equinox programs, in the user's terms: their
argument names and module paths, their own lines, and hints for the API they used."""

from __future__ import annotations

from pathlib import Path

import equinox as eqx
import flax.linen as linen
import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

import jaxscope as js

from .programs import PROGRAMS

PROGRAMS_FILE = str(Path(__file__).with_name("programs.py"))
HERE = str(Path(__file__))

# How each program's outputs feed its next step, as its train loop does.
_NEXT = {
    "nnx_cnn": lambda out, args: args,  # NNX updates model and optimizer in place
    "linen_resnet": lambda out, args: (*out[:3], *args[3:]),
    "linen_lm": lambda out, args: (*out[:2], args[2]),
    "eqx_cnn": lambda out, args: (*out[:2], *args[2:]),
    "eqx_gru": lambda out, args: (out[1], args[1], args[2], out[2]),
    "eqx_mlp": lambda out, args: args,
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_warm_train_loop_reports_no_recompile(name):
    step, args = PROGRAMS[name]()
    args = _NEXT[name](step(*args), args)
    with js.watch_recompiles() as log:
        for _ in range(3):
            args = _NEXT[name](step(*args), args)
    assert log.events == []


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_first_compile_is_the_users_function_and_lines(name):
    step, args = PROGRAMS[name]()
    with js.watch_recompiles() as log:
        step(*args)
    (ev,) = log.events
    if name != "nnx_cnn":  # its step is module-level: compiled by earlier tests too
        assert ev.kinds == ["first_call"]
    assert ev.defined_at is not None and ev.defined_at.file == PROGRAMS_FILE
    assert ev.call_site is not None and ev.call_site.file == HERE
    assert "site-packages" not in str(ev)


def _bigger(x, n):
    return jnp.concatenate([x, x[:1].repeat(n - x.shape[0], axis=0)])


# Each program's arguments with one more example in the batch, and the paths that
# this changes.
_BIGGER_BATCH = {
    "nnx_cnn": (
        lambda a: (a[0], a[1], {k: _bigger(v, 3) for k, v in a[2].items()}),
        {"batch['image']", "batch['label']"},
    ),
    "linen_resnet": (
        lambda a: (*a[:3], _bigger(a[3], 3), _bigger(a[4], 3)),
        {"x", "labels"},
    ),
    "linen_lm": (lambda a: (a[0], a[1], _bigger(a[2], 3)), {"tokens"}),
    "eqx_cnn": (lambda a: (a[0], a[1], _bigger(a[2], 3), _bigger(a[3], 3)), {"x", "y"}),
    "eqx_gru": (
        lambda a: (a[0], _bigger(a[1], 4), _bigger(a[2], 4), a[3]),
        {"x", "y"},
    ),
    "eqx_mlp": (lambda a: (a[0], _bigger(a[1], 5)), {"x"}),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_new_batch_size_is_a_shape_cause_in_the_users_names(name):
    step, args = PROGRAMS[name]()
    bigger, paths = _BIGGER_BATCH[name]
    with js.watch_recompiles() as log:
        args = _NEXT[name](step(*args), args)
        args = _NEXT[name](step(*args), args)
        step(*bigger(args))
    _, again = log.events
    assert {(c.kind, c.path) for c in again.causes} == {("shape", p) for p in paths}
    assert again.call_site.file == HERE and again.defined_at.file == PROGRAMS_FILE


@pytest.mark.parametrize("name", ["linen_lm", "eqx_mlp", "nnx_cnn"])
def test_compiled_before_the_watcher_is_never_called_a_first_call(name):
    step, args = PROGRAMS[name]()
    args = _NEXT[name](step(*args), args)
    bigger, _ = _BIGGER_BATCH[name]
    with js.watch_recompiles() as log:
        step(*bigger(args))
    (ev,) = log.events
    assert "first_call" not in ev.kinds and "redefined_function" not in ev.kinds
    if name == "linen_lm":  # jax.jit: JAX's trace cache names what changed
        assert [(c.kind, c.path) for c in ev.causes] == [("shape", "tokens")]


# ------------------------------------------------------------------ Equinox


def test_equinox_model_leaf_paths_and_static_field():
    step, (mlp, x) = PROGRAMS["eqx_mlp"]()
    tanh_mlp = eqx.tree_at(lambda m: m.activation, mlp, jax.nn.tanh)
    bf16 = eqx.tree_at(
        lambda m: m.layers[0].weight, mlp, mlp.layers[0].weight.astype(jnp.bfloat16)
    )
    with js.watch_recompiles() as log:
        step(mlp, x)
        step(tanh_mlp, x)
        step(bf16, x)
    _, activation, weight = log.events
    (cause,) = activation.causes
    assert (cause.kind, cause.path) == ("static_arg", "model.activation")
    assert cause.before != cause.after
    assert "relu" in cause.before and "tanh" in cause.after
    assert "eqx.filter_jit" in cause.hint and "eqx.field(static=True)" in cause.hint
    assert "static_argnames" not in cause.hint
    assert [(c.kind, c.path) for c in weight.causes] == [
        ("dtype", "model.layers[0].weight")
    ]


class _Scaled(eqx.Module):
    weight: jax.Array
    mode: str = eqx.field(static=True)

    def __call__(self, x):
        return x * self.weight


def test_equinox_static_field_change_names_the_field():
    @eqx.filter_jit
    def apply(model, x):
        return model(x)

    x = jnp.ones(3)
    with js.watch_recompiles() as log:
        apply(_Scaled(jnp.ones(3), "train"), x)
        apply(_Scaled(jnp.ones(3), "eval"), x)
    (cause,) = log.events[-1].causes
    assert cause.path == "model.mode"
    assert (cause.before, cause.after) == ("'train'", "'eval'")
    assert "eqx.field(static=True)" in cause.hint


def test_equinox_python_scalar_argument_is_a_static_value():
    @eqx.filter_jit
    def scale(x, factor):
        return x * factor

    x = jnp.ones(3)
    with js.watch_recompiles() as log:
        scale(x, 2.0)
        scale(x, 3.0)
    (cause,) = log.events[-1].causes
    assert (cause.kind, cause.path, cause.before, cause.after) == (
        "static_arg",
        "factor",
        "2.0",
        "3.0",
    )
    assert "jnp.asarray" in cause.hint


# ------------------------------------------------------------------ Flax NNX


def test_nnx_fresh_optimizer_names_the_optimizer_field():
    step, (model, optimizer, batch) = PROGRAMS["nnx_cnn"]()
    with js.watch_recompiles() as log:
        step(model, optimizer, batch)
        fresh = nnx.Optimizer(model, optax.adamw(1e-3, 0.9), wrt=nnx.Param)
        step(model, fresh, batch)
    ev = log.events[-1]
    (cause,) = ev.causes
    assert cause.kind == "tree_structure"
    assert cause.path.startswith("optimizer.tx")
    assert "new object" in cause.after
    assert "nnx.jit" in cause.hint
    assert "jax.jit(" not in cause.hint and "static_argnums" not in cause.hint


def test_nnx_changed_module_attribute_names_it():
    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs)
            self.mode = "train"

        def __call__(self, x):
            return self.linear(x)

    @nnx.jit
    def forward(model, x):
        return model(x)

    model = Block(nnx.Rngs(0))
    x = jnp.ones((2, 3))
    with js.watch_recompiles() as log:
        forward(model, x)
        model.mode = "eval"
        forward(model, x)
    (cause,) = log.events[-1].causes
    assert (cause.path, cause.before, cause.after) == (
        "model.mode",
        "'train'",
        "'eval'",
    )
    assert "nnx.jit" in cause.hint and "nnx.Variable" in cause.hint


def test_nnx_parameter_paths_are_graph_paths():
    class Net(nnx.Module):
        def __init__(self, n, rngs):
            self.linear1 = nnx.Linear(3, n, rngs=rngs)

        def __call__(self, x):
            return self.linear1(x)

    @nnx.jit
    def forward(model, x):
        return model(x)

    x = jnp.ones((2, 3))
    with js.watch_recompiles() as log:
        forward(Net(4, nnx.Rngs(0)), x)
        forward(Net(5, nnx.Rngs(0)), x)
    paths = {(c.kind, c.path) for c in log.events[-1].causes}
    assert ("shape", "model.linear1.kernel") in paths
    assert ("shape", "model.linear1.bias") in paths


# ------------------------------------------------------------------ Linen


class _ScaledDense(linen.Module):
    features: int = 4
    scale: float = 1.0

    @linen.compact
    def __call__(self, x):
        return linen.Dense(self.features)(x) * self.scale


def test_linen_changed_config_names_the_field():
    x = jnp.ones((2, 3))
    params = _ScaledDense().init(jax.random.key(0), x)["params"]
    apply = jax.jit(
        lambda model, params, x: model.apply({"params": params}, x),
        static_argnums=0,
    )
    apply(_ScaledDense(), params, x)
    with js.watch_recompiles() as log:
        apply(_ScaledDense(scale=2.0), params, x)
    (cause,) = log.events[0].causes
    assert (cause.kind, cause.path, cause.before, cause.after) == (
        "static_arg",
        "model.scale",
        "1.0",
        "2.0",
    )
