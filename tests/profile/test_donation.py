"""Donation findings of js.memory: a train step's state returned updated but not
donated (the fix applied frees the copy), and donations XLA cannot use, named by
argument (JAX's own warning names none)."""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import pytest

from jaxscope._profile.memory import MemoryView, memory

from . import programs


def test_a_train_step_that_returns_its_state_without_donating_it(
    optax_memory: MemoryView,
):
    found = {
        f.fix.split("donate_argnames=(")[1].split(",")[0]: f
        for f in optax_memory.findings
    }
    assert set(found) == {"'params'", "'opt_state'"}
    params = found["'params'"]
    assert (
        params.kind == "not_donated"
        and params.bytes == (16 * 32 + 32 + 32 * 10 + 10) * 4
    )
    assert params.source is not None and params.source.function == "optax_step"
    assert "@functools.partial(jax.jit, donate_argnames=('params',))" in params.fix
    # the fix, applied: the copies are gone from the peak
    _, args = programs.optax_mlp()
    donated = functools.partial(jax.jit, donate_argnames=("params", "opt_state"))(
        programs.optax_step
    )
    fixed = memory(donated)(*args)
    assert fixed.findings == []
    assert fixed.alias_bytes == params.bytes + found["'opt_state'"].bytes
    assert fixed.peak_bytes < optax_memory.peak_bytes
    assert "finding: params is returned updated" in str(optax_memory)


def test_no_donation_finding_on_steps_that_donate_or_return_other_things(
    mlp_memory: MemoryView,
):
    assert mlp_memory.findings == []  # donate_argnums=0 already
    fn, args = programs.transformer()  # returns one array shaped like x
    assert memory(fn)(*args).findings == []

    def predict(params, x):
        return {"w": params["w"] @ x, "b": params["b"]}  # same keys, other shapes

    params = {"w": jnp.ones((4, 4)), "b": jnp.ones(4)}
    assert memory(predict)(params, jnp.ones((4, 3))).findings == []


def test_donated_buffers_that_were_not_usable_are_named():
    def step(params, batch):
        return jax.tree.map(lambda p: p * 2, params), batch.sum()

    params = {"w": jnp.ones((8, 8)), "b": jnp.ones(8)}
    bad = jax.jit(step, donate_argnums=(0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JAX's own "were not usable" warning
        view = memory(bad)(params, jnp.ones((16, 3)))
    assert [f.kind for f in view.findings] == ["donation_unusable"]
    finding = view.findings[0]
    assert finding.message.startswith("batch (float32[16,3]) is donated")
    assert "Some donated buffers were not usable" in finding.message
    assert finding.bytes == 16 * 3 * 4
    # the fix, applied: only params donated, no warning, no finding
    good = jax.jit(step, donate_argnums=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert memory(good)(params, jnp.ones((16, 3))).findings == []


@pytest.mark.parametrize("kind", ["not_donated", "donation_unusable"])
def test_finding_kinds_are_documented(kind: str):
    from jaxscope._profile.records import MemoryFinding

    assert kind in (MemoryFinding.__doc__ or "")
