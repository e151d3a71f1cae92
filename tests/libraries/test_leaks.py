"""check_leaks on Flax (NNX, Linen), Equinox and Optax programs written the way their
docs write them: no false alarm (first trace in a block, warm steps, several
blocks), agreement with ``jax.checking_leaks()`` and a leak into an NNX module found
with its attribute. (The cost of warm NNX steps in a block is measured in
``benchmarks/bench_leaks.py``.)"""

from __future__ import annotations

import inspect

import equinox as eqx
import flax.linen as linen
import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

import jaxscope as js

from .programs import PROGRAMS


def run_steps(step, args, n: int) -> None:
    out = None
    for _ in range(n):
        out = step(*args)
    jax.block_until_ready(out)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_correct_programs_leak_nothing_first_traced_in_a_block_then_warm(name):
    step, args = PROGRAMS[name]()
    with js.check_leaks(raise_on_leak=False) as first:
        run_steps(step, args, 2)  # traced and compiled inside the block
    assert first.leaks == [], first.message()
    for _ in range(3):
        with js.check_leaks(raise_on_leak=False) as warm:
            run_steps(step, args, 2)
        assert warm.leaks == [], warm.message()
    with jax.checking_leaks():  # JAX agrees
        run_steps(step, args, 1)


# NNX, Linen with BatchNorm, Equinox with scan: a block tracing a step that ran
# before (each recompiles everything, so not every program)
@pytest.mark.parametrize("name", ["nnx_cnn", "linen_resnet", "eqx_gru"])
def test_correct_programs_leak_nothing_when_a_block_traces_them_again(name):
    step, args = PROGRAMS[name]()
    run_steps(step, args, 2)
    jax.clear_caches()
    with js.check_leaks(raise_on_leak=False) as report:
        run_steps(step, args, 2)
    assert report.leaks == [], report.message()


# ------------------------------------------- NNX: scanned layers (nnx.vmap + nnx.scan)


class Stack(nnx.Module):
    """Layers created with ``nnx.vmap`` and applied with ``nnx.scan`` (the NNX
    "scan over layers" guide)."""

    def __init__(self, rngs: nnx.Rngs):
        @nnx.split_rngs(splits=3)
        @nnx.vmap
        def make(rngs):
            return nnx.Linear(4, 4, rngs=rngs)

        self.layers = make(rngs)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def body(x, layer):
            return jnp.tanh(layer(x))

        return body(x, self.layers)


def test_nnx_scan_over_layers_training_leaks_nothing():
    model = Stack(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
    x = jnp.ones((2, 4))

    @nnx.jit
    def step(model, optimizer, x):
        loss, grads = nnx.value_and_grad(lambda m: (m(x) ** 2).mean())(model)
        optimizer.update(model, grads)
        return loss

    with js.check_leaks(raise_on_leak=False) as first:
        run_steps(step, (model, optimizer, x), 2)
    assert first.leaks == [], first.message()
    for _ in range(2):  # the step has run: each block traces it again
        jax.clear_caches()
        with js.check_leaks(raise_on_leak=False) as report:
            run_steps(step, (model, optimizer, x), 2)
        assert report.leaks == [], report.message()


# ---------------------------------------------- NNX: a tracer stored on a module


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(3, 3, rngs=rngs)
        self.last_h = None

    def __call__(self, x):
        h = jnp.tanh(self.linear(x))
        self.last_h = h  # a leak: h is a tracer under nnx.jit
        return h.sum()


class Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.block = Block(rngs)

    def __call__(self, x):
        return self.block(x)


nets: dict = {}


def test_a_tracer_stored_on_an_nnx_module_attribute_is_reported_with_its_path():
    nets["net"] = Net(nnx.Rngs(0))

    @nnx.jit
    def forward(model, x):
        return model(x)

    with js.check_leaks(raise_on_leak=False) as report:
        forward(nets["net"], jnp.ones(3))
    assert len(report) == 1, report.message()
    (leak,) = report.leaks
    assert leak.found_in == (
        "attribute `self.last_h` of a `Block` object (attribute `self.block` of a "
        "`Net` object (global dict `nets`['net']))"
    )
    assert leak.transformation == "jit" and leak.aval == "f32[3]"
    assert leak.created_at is not None and leak.created_at.function == "Block.__call__"
    nets.clear()


# ------------------------------- state written during an nnx.jit / eqx.filter_jit step


class Tracked(nnx.Module):
    """An MLP that keeps its hidden activations on a plain attribute (a leak)."""

    def __init__(self, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(4, 8, rngs=rngs)
        self.linear2 = nnx.Linear(8, 1, rngs=rngs)
        self.last_hidden = None

    def __call__(self, x):
        h = nnx.relu(self.linear1(x))
        self.last_hidden = h  # a tracer under nnx.jit
        return self.linear2(h)


@nnx.jit
def tracked_train_step(model, optimizer, x, y):
    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


TRACKED_LINE = Tracked.__call__.__code__.co_firstlineno + 1


@pytest.fixture
def fresh_caches():
    """The leaking steps below leave their tracers in JAX's caches (that is the
    leak): each test starts and ends with the caches empty."""
    jax.clear_caches()
    yield
    jax.clear_caches()


def train_tracked_once():
    """The step as a test runs it: the model is a local, gone when the block ends."""
    model = Tracked(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    tracked_train_step(model, optimizer, jnp.ones((2, 4)), jnp.ones((2, 1)))


def test_a_tracer_stored_on_an_nnx_module_in_a_grad_step_is_found_after_the_model_is_gone(
    fresh_caches,
):
    with js.check_leaks(raise_on_leak=False) as report:
        train_tracked_once()
    assert len(report) == 1, report.message()
    (leak,) = report.leaks
    assert leak.found_in == (
        "attribute `self.last_hidden` of a `Tracked` object "
        "(static (non-array) data of a pytree, kept in JAX's caches)"
    )
    assert leak.transformation == "grad" and leak.aval == "f32[2,8]"
    assert leak.created_at is not None
    assert (leak.created_at.function, leak.created_at.line) == (
        "Tracked.__call__",
        TRACKED_LINE,
    )


def test_a_tracer_stored_on_an_nnx_module_names_the_local_that_holds_the_model(
    fresh_caches,
):
    model = Tracked(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    with js.check_leaks(raise_on_leak=False) as report:
        tracked_train_step(model, optimizer, jnp.ones((2, 4)), jnp.ones((2, 1)))
    assert [leak.found_in for leak in report.leaks] == [
        "attribute `self.last_hidden` of a `Tracked` object (local variable `model` "
        "of `test_a_tracer_stored_on_an_nnx_module_names_the_local_that_holds_the_model`)"
    ]


class Box:
    """A plain mutable object, as a cache of activations."""

    def __init__(self):
        self.value = None


class Cached(eqx.Module):
    linear: eqx.nn.Linear
    cache: Box

    def __init__(self, key):
        self.linear = eqx.nn.Linear(4, 4, key=key)
        self.cache = Box()

    def __call__(self, x):
        h = jnp.tanh(self.linear(x))
        self.cache.value = h  # a tracer under eqx.filter_jit
        return h.sum()


CACHED_LINE = Cached.__call__.__code__.co_firstlineno + 1


@eqx.filter_jit
def cached_grad_step(model, x):
    return eqx.filter_value_and_grad(lambda m: m(x))(model)


def cached_step_once():
    cached_grad_step(Cached(jax.random.key(0)), jnp.ones(4))


def test_a_tracer_written_into_an_object_held_by_an_equinox_field_is_found(
    fresh_caches,
):
    model = Cached(jax.random.key(0))
    with js.check_leaks(raise_on_leak=False) as report:
        cached_grad_step(model, jnp.ones(4))
    assert len(report) == 1, report.message()
    (leak,) = report.leaks
    assert leak.found_in == (
        "attribute `self.value` of a `Box` object (attribute `self.cache` of a "
        "`Cached` object (local variable `model` of "
        "`test_a_tracer_written_into_an_object_held_by_an_equinox_field_is_found`))"
    )
    assert leak.created_at is not None
    assert (leak.created_at.function, leak.created_at.line) == (
        "Cached.__call__",
        CACHED_LINE,
    )
    # the module gone by the end of the block: the static argument JAX keeps
    with js.check_leaks(raise_on_leak=False) as report:
        cached_step_once()
    assert [leak.found_in for leak in report.leaks] == [
        "attribute `self.value` of a `Box` object "
        "(static (non-array) data of a pytree, kept in JAX's caches)"
    ]


_LIBRARY_TESTS = """
import equinox as eqx, jax, jax.numpy as jnp, optax
from flax import nnx

class MLP(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 2, rngs=rngs)
        self.last_hidden = None
    def __call__(self, x):
        h = jnp.tanh(self.linear(x))
        self.last_hidden = h
        return h.sum()

@nnx.jit
def train_step(model, optimizer, x):
    loss, grads = nnx.value_and_grad(lambda m: m(x))(model)
    optimizer.update(model, grads)
    return loss

def test_nnx():
    model = MLP(nnx.Rngs(0))
    train_step(model, nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param), jnp.ones(4))

class Box:
    value = None

class Cached(eqx.Module):
    linear: eqx.nn.Linear
    cache: Box
    def __call__(self, x):
        h = jnp.tanh(self.linear(x))
        self.cache.value = h
        return h.sum()

def test_equinox():
    model = Cached(eqx.nn.Linear(4, 4, key=jax.random.key(0)), Box())
    eqx.filter_jit(lambda m, x: m(x))(model, jnp.ones(4))
"""


@pytest.mark.slow
def test_pytest_option_fails_tests_that_leak_into_nnx_and_equinox_state(pytester):
    pytester.makepyfile(test_state=_LIBRARY_TESTS)
    result = pytester.runpytest_subprocess("--jax-check-leaks", "-p", "no:randomly")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert (
        "jaxscope: 1 leaked tracer: f32[2] tracer from grad, created at "
        "test_state.py:9 (MLP.__call__), stored in attribute `self.last_hidden` of a "
        "`MLP` object"
    ) in out
    assert (
        "jaxscope: 1 leaked tracer: f32[4] tracer from jit, created at "
        "test_state.py:30 (Cached.__call__), stored in attribute `self.value` of a "
        "`Box` object (attribute `self.cache` of a `Cached` object (local variable "
        "`model` of `test_equinox`))"
    ) in out


# ----------------------------------------------------------- Linen: inside nn.scan

scan_outputs: list = []


class RecurrentCell(linen.Module):
    @linen.compact
    def __call__(self, carry, x):
        h = jnp.tanh(linen.Dense(4)(carry) + x)
        scan_outputs.append(h)  # a leak, from each of nn.scan's two passes
        return h, h


class Recurrent(linen.Module):
    @linen.compact
    def __call__(self, xs):
        scan = linen.scan(
            RecurrentCell,
            variable_broadcast="params",
            split_rngs={"params": False},
        )
        return scan()(jnp.zeros(4), xs)


CELL_LINE = inspect.unwrap(RecurrentCell.__call__).__code__.co_firstlineno + 2


def test_leaks_inside_a_linen_scan_body_name_the_users_line_and_the_scan():
    xs = jnp.ones((3, 4))
    with js.check_leaks(raise_on_leak=False) as report:
        params = Recurrent().init(jax.random.key(0), xs)
        jax.jit(Recurrent().apply)(params, xs)
    scan_outputs.clear()
    # init and apply: nn.scan's pass that finds the loop-invariant values, then
    # lax.scan's own trace
    assert len(report) == 4, report.message()
    for leak in report.leaks:
        assert leak.transformation == "scan", leak.describe()
        assert leak.created_at is not None and not leak.argument
        assert (leak.created_at.function, leak.created_at.line) == (
            "RecurrentCell.__call__",
            CELL_LINE,
        )


# ------------------------------------------------- negative twins: state done right


class Classifier(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.linear2 = nnx.Linear(8, 3, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.dropout(self.bn(self.linear1(x))))
        return self.linear2(x)


@nnx.jit
def classifier_train_step(model, optimizer, metrics, x, y):
    def loss_fn(model):
        logits = model(x)
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return loss, logits

    (loss, logits), grads = nnx.value_and_grad(loss_fn, has_aux=True)(model)
    metrics.update(loss=loss, logits=logits, labels=y)
    optimizer.update(model, grads)
    return loss


class EqxBatchNormNet(eqx.Module):
    linear: eqx.nn.Linear
    norm: eqx.nn.BatchNorm

    def __init__(self, key):
        self.linear = eqx.nn.Linear(4, 4, key=key)
        self.norm = eqx.nn.BatchNorm(4, axis_name="batch", mode="batch")

    def __call__(self, x, state):
        x, state = self.norm(self.linear(x), state)
        return x, state


@eqx.filter_jit
def eqx_state_step(model, state, opt_state, x):
    def loss(model, state):
        out, state = jax.vmap(
            model, axis_name="batch", in_axes=(0, None), out_axes=(0, None)
        )(x, state)
        return (out**2).mean(), state

    (value, state), grads = eqx.filter_value_and_grad(loss, has_aux=True)(model, state)
    updates, opt_state = optax.sgd(0.1).update(grads, opt_state)
    return eqx.apply_updates(model, updates), state, opt_state, value


def test_correct_steps_with_optimizer_batchnorm_dropout_and_state_leak_nothing():
    model = Classifier(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    metrics = nnx.MultiMetric(
        accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss")
    )
    x, y = jnp.ones((4, 4)), jnp.array([0, 1, 2, 0])
    eqx_model, state = eqx.nn.make_with_state(EqxBatchNormNet)(jax.random.key(0))
    opt_state = optax.sgd(0.1).init(eqx.filter(eqx_model, eqx.is_array))
    with js.check_leaks(raise_on_leak=False) as report:
        for _ in range(2):
            model.train()
            classifier_train_step(model, optimizer, metrics, x, y)
            model.eval()
            model(x)
            eqx_model, state, opt_state, _ = eqx_state_step(
                eqx_model, state, opt_state, x
            )
    assert report.leaks == [], report.message()
    with js.check_leaks(raise_on_leak=False) as report:
        train_once_more = classifier_train_step(model, optimizer, metrics, x, y)
    assert report.leaks == [] and train_once_more.shape == ()


_scan_leaks: list = []


class _LeakyCell(linen.Module):
    @linen.compact
    def __call__(self, carry, x):
        h = linen.Dense(4)(x) + carry  # L:leak
        _scan_leaks.append(h)
        return h, h


class _ScannedRNN(linen.Module):
    @linen.compact
    def __call__(self, xs):
        scan = linen.scan(
            _LeakyCell,
            variable_broadcast="params",
            split_rngs={"params": False},
            in_axes=0,
            out_axes=0,
        )
        return scan()(jnp.zeros(4), xs)


def test_leaks_in_a_linen_scan_body_are_created_at_the_users_line(line_of):
    model, xs = _ScannedRNN(), jnp.ones((5, 3))
    params = model.init(jax.random.key(0), xs)
    _scan_leaks.clear()
    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(model.apply)(params, xs)
    _scan_leaks.clear()
    line = line_of(_LeakyCell.__call__, "L:leak")
    assert len(report.leaks) >= 2
    assert [(leak.created_at.file, leak.created_at.line) for leak in report.leaks] == [
        (__file__, line)
    ] * len(report.leaks)
