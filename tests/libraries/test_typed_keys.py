"""Every capability on programs that take typed PRNG keys: a ``jax.random.key``
argument, and a Flax NNX model whose Dropout draws from ``nnx.Rngs``. NumPy cannot
hold a key: jaxscope shows it as ``key<fry>[...]`` and reads its key data."""

from __future__ import annotations

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jaxscope as js


@jax.jit
def noisy_loss(key, x):
    noise = jax.random.normal(key, x.shape)
    return jnp.log(x + noise).sum()


class DropoutNet(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(3, 4, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)

    def __call__(self, x):
        return self.dropout(self.linear(x))


@nnx.jit
def dropout_step(model, x):
    def loss_fn(model):
        return jnp.log(model(x) ** 2 + 1.0).mean()

    return nnx.value_and_grad(loss_fn)(model)


def key_program():
    return noisy_loss, (jax.random.key(0), jnp.full((3,), 10.0)), "key"


def rngs_program():
    model = DropoutNet(nnx.Rngs(0, dropout=1))
    return dropout_step, (model, jnp.ones((2, 3))), "model.dropout.rngs"


PROGRAMS = {"jax_random_key": key_program, "nnx_rngs_dropout": rngs_program}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_capability_takes_a_typed_key(name):
    fn, args, key_name = PROGRAMS[name]()

    view = js.jaxpr(fn)(*args)
    assert "key<fry>[]" in view.text
    assert any(n.startswith(key_name) for n in view.arg_names or ())
    assert js.hlo(fn)(*args).ops
    assert js.graph(fn)(*args).nodes

    stepper = js.step(fn)(*args)
    keys = [s for s in stepper.summaries() if s.dtype == "key<fry>"]
    # named as the paused frame binds it: `model.dropout.rngs...` in the step,
    # `self.dropout.rngs...` once inside the model's __call__, as pdb would
    _, _, attribute = key_name.rpartition("model.")
    assert keys and keys[0].aval == "key<fry>[]" and attribute in keys[0].user_name
    assert "key<fry>[]" in str(stepper)
    stepper.run()
    assert stepper.done
    assert js.find_nan(fn)(*args) is None

    assert js.profile(fn, repeat=1)(*args).by_line
    assert js.memory(fn)(*args).peak_bytes > 0

    program = js.shardings(fn)(*args)
    assert any(path.startswith(key_name) for path, _ in program.inputs)
    key_leaves = [
        leaf
        for leaf in jax.tree_util.tree_leaves(
            args[0] if name == "jax_random_key" else nnx.state(args[0])
        )
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
    ]
    layout = js.sharding(key_leaves[0])
    assert layout.dtype == "key<fry>" and layout.total_bytes == 8

    with js.watch_recompiles() as log:
        fn(*args)
    assert all(c.kind != "other" or c.path for e in log.events for c in e.causes)

    with js.check_leaks(raise_on_leak=False) as report, js.watch_purity() as purity:
        fn(*args)
    assert report.leaks == [] and purity.findings == []


def test_find_nan_with_a_typed_key_finds_the_log_of_a_negative_input():
    fn, (key, x), _ = key_program()
    assert js.find_nan(fn)(key, -x).primitive == "log"


def test_a_key_captured_by_a_jitted_function_is_compared_by_its_key_data():
    cfg = types.SimpleNamespace(key=jax.random.key(0))

    @jax.jit
    def sample(x):
        return x + jax.random.normal(cfg.key, x.shape)

    with js.watch_purity():
        sample(jnp.ones(3))
    cfg.key = jax.random.key(0)  # an equal key: the compiled code is still right
    assert js.stale(sample) == []
    cfg.key = jax.random.key(1)
    (finding,) = js.stale(sample)
    assert finding.name == "cfg.key"
    assert finding.captured == "key<fry>[] [0, 0]"
    assert finding.current.startswith("key<fry>[] [0, 1]")


def test_a_leaked_key_tracer_and_an_error_on_a_key_are_reported():
    leaked = []

    @jax.jit
    def leak(key, x):
        leaked.append(key)
        return x

    with js.check_leaks(raise_on_leak=False) as report:
        leak(jax.random.key(0), jnp.ones(2))
    leaked.clear()
    assert [leak.aval for leak in report.leaks] == ["key<fry>[]"]

    @jax.jit
    def log_of_key(key, x):
        return jnp.log(key) + x

    with pytest.raises(TypeError) as info:
        log_of_key(jax.random.key(0), jnp.ones(2))
    report = js.explain(info.value)
    assert report.user_frame is not None
    assert report.user_frame.function.endswith("log_of_key")


def test_split_keys_sharded_over_devices_lay_out_by_key():
    mesh = jax.make_mesh((8,), ("d",))
    keys = jax.device_put(
        jax.random.split(jax.random.key(0), 8),
        jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d")),
    )
    view = js.sharding(keys)
    assert view.shape == (8,) and view.spec == "P('d')"
    assert [s.bytes for s in view.shards] == [8] * 8
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(keys)).shape, (8, 2))
