"""``js.diff`` on the programs Flax, Equinox and Optax users write: the same call
traced twice, or rebuilt from scratch and traced again, differs in nothing."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

import jaxscope as js

from .programs import PROGRAMS

NAMES = sorted(PROGRAMS)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_two_traces_of_the_same_call_differ_in_nothing(name):
    step, args = PROGRAMS[name]()
    first = js.jaxpr(step)(*args)
    again = js.jaxpr(step)(*args)
    fresh_step, fresh_args = PROGRAMS[name]()  # new objects: a trace with new variables
    fresh = js.jaxpr(fresh_step)(*fresh_args)
    assert first.closed_jaxpr is not fresh.closed_jaxpr
    for other in (again, fresh):
        d = js.diff(first, other)
        assert d.empty, d.summary()
        assert d.summary() == ["no differences"]
    assert any(line.before.where for line in js.diff(first, fresh).lines)


def test_the_optimized_programs_of_two_builds_differ_in_nothing():
    step, args = PROGRAMS["eqx_mlp"]()
    fresh_step, fresh_args = PROGRAMS["eqx_mlp"]()
    d = js.diff(step, fresh_step)(*args) if step is fresh_step else None
    if d is None:  # a new closure per build: compare the two calls' programs
        a = js.hlo(step, stage="optimized")(*args)
        b = js.hlo(fresh_step, stage="optimized")(*fresh_args)
        d = js.diff(a, b)
    assert d.empty, d.summary()


def test_a_changed_batch_in_a_library_program_shows_at_the_users_lines():
    step, (model, optimizer, batch) = PROGRAMS["nnx_cnn"]()
    bigger = {
        "image": jnp.ones((4, 8, 8, 1), jnp.float32),
        "label": jnp.array([1, 3, 0, 2], jnp.int32),
    }
    a = js.jaxpr(step)(model, optimizer, batch)
    b = js.jaxpr(step)(model, optimizer, bigger)
    d = js.diff(a, b)
    assert {c.kind for c in d.causes} == {"shape"}
    assert d.changed_lines
    # user lines of the program, not Flax's or Optax's files
    assert all(
        "site-packages" not in line.where for line in d.changed_lines if line.where
    )
    assert all(c.kind == "changed" for line in d.changed_lines for c in line.changes)
