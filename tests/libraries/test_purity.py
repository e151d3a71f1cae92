"""Purity checks on the programs Flax, Equinox and Optax users write: nothing is
reported on correct code, and globals read inside ``eqx.filter_jit`` functions and NNX
module code are watched like those of ``jax.jit`` functions."""

from __future__ import annotations

import functools
import importlib.util
import textwrap
import uuid

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js

from .programs import PROGRAMS

NAMES = sorted(PROGRAMS)


def _outputs_as_next_args(name, args, out):
    """A second step the way a training loop makes it (same shapes, new values)."""
    if name in ("linen_resnet",):
        return (out[0], out[1], out[2], *args[3:])
    if name == "linen_lm":
        return (out[0], out[1], args[2])
    if name == "eqx_cnn":
        return (out[0], out[1], *args[2:])
    if name == "eqx_gru":
        return (out[1], args[1], args[2], out[2])
    return args  # nnx updates model and optimizer in place; eqx_mlp is inference


@pytest.mark.parametrize("name", NAMES)
def test_correct_programs_have_no_findings_traced_while_watching(name):
    step, args = PROGRAMS[name]()
    with js.watch_purity() as plog:
        out = jax.block_until_ready(step(*args))
        jax.block_until_ready(step(*_outputs_as_next_args(name, args, out)))
    assert plog.findings == []
    assert js.stale(step) == []


@pytest.mark.parametrize("name", NAMES)
def test_correct_programs_have_no_findings_when_compiled_before_watching(name):
    step, args = PROGRAMS[name]()
    out = jax.block_until_ready(step(*args))
    with js.watch_purity() as plog:
        jax.block_until_ready(step(*_outputs_as_next_args(name, args, out)))
    assert plog.findings == []


_LM1B_STEP = """
import functools
import jax, jax.numpy as jnp
import flax.linen as nn
import optax

class Tiny(nn.Module):
    @nn.compact
    def __call__(self, inputs, *, train):
        x = nn.Embed(16, 8)(inputs)
        x = nn.Dropout(0.1, deterministic=not train)(x)
        return nn.Dense(16)(x)

def train_step(state, batch, config, learning_rate_fn, label_smoothing=0.0, dropout_rng=None):
    # As flax/examples/lm1b/train.py writes it: loss_fn reads train_step's locals.
    train_keys = ["inputs", "targets"]
    (inputs, targets) = (batch.get(k, None) for k in train_keys)
    weights = jnp.where(inputs > 0, 1, 0).astype(jnp.float32)
    dropout_rng = jax.random.fold_in(dropout_rng, state["step"])

    def loss_fn(params):
        logits = Tiny().apply(
            {"params": params}, inputs, train=True, rngs={"dropout": dropout_rng}
        )
        onehot = jax.nn.one_hot(targets, logits.shape[-1])
        onehot = onehot * (1.0 - label_smoothing) + label_smoothing / logits.shape[-1]
        loss = -jnp.sum(onehot * jax.nn.log_softmax(logits), axis=-1)
        return (loss * weights).sum() / weights.sum(), logits

    lr = learning_rate_fn(state["step"])
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (_, logits), grads = grad_fn(state["params"])
    tx = optax.adamw(lr)
    updates, opt_state = tx.update(grads, state["opt_state"], state["params"])
    new_state = {
        "step": state["step"] + 1,
        "params": optax.apply_updates(state["params"], updates),
        "opt_state": opt_state,
    }
    metrics = {"loss": jnp.mean(logits), "learning_rate": lr}
    return new_state, metrics

def build():
    inputs = jnp.ones((2, 6), jnp.int32)
    params = Tiny().init(jax.random.key(0), inputs, train=False)["params"]
    state = {"step": 0, "params": params, "opt_state": optax.adamw(1e-3).init(params)}
    p_train_step = jax.jit(
        functools.partial(
            train_step, config=None, learning_rate_fn=lambda step: 1e-3
        ),
        donate_argnums=(0,),
    )
    batch = {"inputs": inputs, "targets": inputs}
    return p_train_step, state, batch
"""


@pytest.fixture
def load(tmp_path):
    def _load(source: str):
        name = f"purity_lib_{uuid.uuid4().hex[:8]}"
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return _load


def test_flax_lm1b_train_step_reading_its_own_locals_in_loss_fn_has_no_findings(load):
    m = load(_LM1B_STEP)
    step, state, batch = m.build()
    with js.watch_purity() as plog:
        state, _ = step(state, batch, dropout_rng=jax.random.key(1))
        state, _ = step(state, batch, dropout_rng=jax.random.key(2))
    assert plog.findings == []
    assert js.stale(step) == []


def test_library_code_is_out_of_scope(load, tmp_path, monkeypatch):
    monkeypatch.setenv("JAXSCOPE_LIBRARY_PATHS", str(tmp_path))
    m = load(
        "import jax\nlog = []\nshift = 1.0\n@jax.jit\ndef fn(x):\n"
        "    log.append(x)\n    print('tracing')\n    return x + shift\n"
    )
    with js.watch_purity() as plog:
        m.fn(1.0)
    m.shift = 2.0
    assert plog.findings == []


_EQX = """
import equinox as eqx, jax, jax.numpy as jnp
SCALE = 2.0
BIAS = 0.5
class Affine(eqx.Module):
    weight: jax.Array
    def __call__(self, x):
        return self.weight * x + BIAS
@eqx.filter_jit
def forward(model, x):
    return model(x) * SCALE
model = Affine(jnp.ones(3))
"""


def test_globals_read_inside_equinox_filter_jit_are_watched(load):
    m = load(_EQX)
    with js.watch_purity() as plog:
        assert float(m.forward(m.model, jnp.ones(3))[0]) == 3.0
    assert js.stale(m.forward) == []
    m.SCALE = 3.0
    m.BIAS = 0.0
    assert float(m.forward(m.model, jnp.ones(3))[0]) == 3.0  # still the traced values
    assert sorted(f.name for f in js.stale(m.forward)) == ["BIAS", "SCALE"]
    assert sorted(f.name for f in plog.findings) == ["BIAS", "SCALE"]


_NNX = """
import jax, jax.numpy as jnp
from flax import nnx
TEMPERATURE = 2.0
class Head(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(3, 2, rngs=rngs)
    def __call__(self, x):
        return self.linear(x) / TEMPERATURE
class Model(nnx.Module):
    def __init__(self, rngs):
        self.head = Head(rngs)
    def __call__(self, x):
        return self.head(x)
@nnx.jit
def predict(model, x):
    return model(x)
model = Model(nnx.Rngs(0))
"""


def test_globals_read_in_nnx_module_code_under_nnx_jit_are_watched(load):
    m = load(_NNX)
    with js.watch_purity() as plog:
        before = m.predict(m.model, jnp.ones((1, 3)))
    assert js.stale(m.predict) == []
    m.TEMPERATURE = 1.0
    assert jnp.allclose(m.predict(m.model, jnp.ones((1, 3))), before)  # baked in
    (finding,) = js.stale(m.predict)
    assert (finding.name, finding.captured, finding.current) == (
        "TEMPERATURE",
        "2.0",
        "1.0",
    )
    assert [f.name for f in plog.findings] == ["TEMPERATURE"]


def test_stale_accepts_library_jit_wrappers_never_traced_while_watching():
    @functools.partial(jax.jit)
    def plain(x):
        return x

    import equinox as eqx
    from flax import nnx

    for fn in (eqx.filter_jit(lambda x: x), nnx.jit(lambda x: x)):
        with pytest.raises(js.InvalidCallError, match=r"start js\.watch_purity"):
            js.stale(fn)


def test_percent_purity_reports_nothing_on_the_programs_cold_or_warm(ip):
    from IPython.utils.capture import capture_output

    def run(cell: str) -> None:
        with capture_output() as cap:
            result = ip.run_cell(cell)
        assert result.success, result.error_in_exec
        shown = cap.stdout + "".join(o.data.get("text/plain", "") for o in cap.outputs)
        assert "jaxscope purity" not in shown, (cell, shown)

    jax.clear_caches()  # library helpers (optax's) are traced again, while watching
    ip.user_ns.update(PROGRAMS=PROGRAMS, next_args=_outputs_as_next_args, jax=jax)
    ip.run_line_magic("purity", "on")
    for name in NAMES:  # cold: traced while watching, then a second training step
        run(
            f"s, a = PROGRAMS[{name!r}]()\no = jax.block_until_ready(s(*a))\n"
            f"jax.block_until_ready(s(*next_args({name!r}, a, o)))"
        )
    ip.run_line_magic("purity", "off")
    for name in NAMES:  # warm: compiled before watching
        run(
            f"step_{name}, args_{name} = PROGRAMS[{name!r}]()\n"
            f"out_{name} = jax.block_until_ready(step_{name}(*args_{name}))"
        )
    ip.run_line_magic("purity", "on")
    for name in NAMES:
        run(
            f"jax.block_until_ready(step_{name}("
            f"*next_args({name!r}, args_{name}, out_{name})))"
        )
    run("x = 1")
    ip.run_line_magic("purity", "off")


# ------------------------------------------------- modules a jitted function closes over

_NNX_AUTOENCODER = """
import jax, jax.numpy as jnp, optax
from flax import nnx
class AutoEncoder(nnx.Module):
    def __init__(self, rngs):
        self.encoder = nnx.Linear(3, 2, rngs=rngs)
        self.decoder = nnx.Linear(2, 3, rngs=rngs)
    def __call__(self, x):
        return self.decoder(self.encoder(x))
model = AutoEncoder(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.sgd(0.5), wrt=nnx.Param)
offset = jnp.zeros(3)
@nnx.jit
def train_step(model, optimizer, x):
    loss_fn = lambda model: ((model(x) - x) ** 2).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss
@nnx.jit
def encode_decode(x):
    return model(x) + offset
@nnx.jit
def reconstruct(model, x):
    return model(x) + offset
"""


def test_a_module_an_nnx_jit_function_closes_over_is_stale_after_training(load):
    m = load(_NNX_AUTOENCODER)
    x = jnp.ones((1, 3))
    with js.watch_purity() as plog:
        m.encode_decode(x)
        m.reconstruct(m.model, x)
        assert js.stale(m.encode_decode) == []  # nothing trained yet
        for _ in range(2):
            m.train_step(m.model, m.optimizer, x)
    # the compiled function still uses the weights of its trace
    assert not jnp.allclose(m.encode_decode(x), m.model(x))
    (finding,) = js.stale(m.encode_decode)
    assert (finding.name, finding.captured, finding.current) == (
        "model",
        "AutoEncoder (4 arrays)",
        "AutoEncoder (4 of 4 arrays changed)",
    )
    assert finding.source is not None and finding.source.function == "encode_decode"
    assert "pass model to encode_decode as an argument" in finding.hint
    assert [f.name for f in plog.findings] == ["model"]
    # the twin that takes the module as an argument follows the training
    assert js.stale(m.reconstruct) == []
    assert jnp.allclose(m.reconstruct(m.model, x), m.model(x))


def test_a_module_or_array_closed_over_that_does_not_change_is_not_stale(load):
    m = load(_NNX_AUTOENCODER)
    x = jnp.ones((1, 3))
    with js.watch_purity() as plog:
        m.encode_decode(x)
        m.encode_decode(x + 1)
        m.model.eval()  # a flag, not an array
    assert plog.findings == [] and js.stale(m.encode_decode) == []


_EQX_CLOSURES = """
import equinox as eqx, jax, jax.numpy as jnp, optax
model = eqx.nn.Linear(3, 3, key=jax.random.key(0))
predict = eqx.filter_jit(lambda x: model(x))
def make_predict(model):
    return eqx.filter_jit(lambda x: model(x))
frozen_predict = make_predict(model)
def train(model, x):
    grads = eqx.filter_grad(lambda m: (m(x) ** 2).sum())(model)
    optim = optax.sgd(0.5)
    updates, _ = optim.update(grads, optim.init(eqx.filter(model, eqx.is_array)))
    return eqx.apply_updates(model, updates)
"""


def test_an_equinox_module_global_replaced_by_apply_updates_is_stale(load):
    m = load(_EQX_CLOSURES)
    x = jnp.ones(3)
    with js.watch_purity():
        m.predict(x)
        m.frozen_predict(x)
    m.model = m.train(m.model, x)  # the global now names the trained module
    assert not jnp.allclose(m.predict(x), m.model(x))  # the old weights, baked in
    (finding,) = js.stale(m.predict)
    assert (finding.name, finding.current) == ("model", "another Linear (2 arrays)")
    # a closure cell holding the old module: Python itself would use that object
    # on every call, and so does the compiled function
    assert js.stale(m.frozen_predict) == []
