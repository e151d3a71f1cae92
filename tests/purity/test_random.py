"""Random numbers drawn with NumPy or ``random`` while JAX traces: one value is baked
into the compiled function and every later call reuses it."""

from __future__ import annotations

import jax
import pytest

import jaxscope as js

from .helpers import line_of

_DRAWS = {
    "default-rng": ("np.random.default_rng().normal()", "np.random.default_rng"),
    "np-random-normal": ("np.random.normal()", "np.random.normal"),
    "np-random-standard-normal": (
        "np.random.standard_normal()",
        "np.random.standard_normal",
    ),
    "np-random-choice": ("np.random.choice([1.0, 2.0])", "np.random.choice"),
    "generator-method": ("rng.normal()", "rng.normal"),
    "generator-integers": ("rng.integers(0, 5)", "rng.integers"),
    "legacy-random-state": ("rs.uniform()", "rs.uniform"),
    "random-random": ("random.random()", "random.random"),
    "random-betavariate": ("random.betavariate(1.0, 2.0)", "random.betavariate"),
    "random-imported-by-name": ("gauss(0.0, 1.0)", "gauss"),
    "random-instance": ("pyrng.uniform(0.0, 1.0)", "pyrng.uniform"),
}

_PROGRAM = """
import jax, random
import numpy as np
from random import gauss
rng = np.random.default_rng(0)
rs = np.random.RandomState(0)
pyrng = random.Random(0)
@jax.jit
def fn(x):
    noise = {draw}
    return x + noise
"""


@pytest.mark.parametrize("draw", list(_DRAWS), ids=list(_DRAWS))
def test_a_random_draw_during_tracing_is_a_trace_time_side_effect(load, draw):
    expression, name = _DRAWS[draw]
    m = load(_PROGRAM.format(draw=expression))
    with js.watch_purity() as plog:
        first = float(m.fn(0.0))
        assert float(m.fn(0.0)) == first  # the draw was baked in
    (finding,) = plog.findings
    assert finding.kind == "trace_time_side_effect"
    assert finding.name == name
    assert finding.function == "fn"
    assert finding.source.line == line_of(m, "noise = ")
    assert "jax.random" in finding.hint


@pytest.mark.parametrize(
    "body",
    [
        # a seeded generator made inside the function: the same constant every trace
        "np.random.default_rng(0).normal()",
        # jax.random with a key: a fresh value on every call
        "jax.random.normal(jax.random.key(0))",
        # reading a captured generator without drawing from it
        "float(rng is not None)",
    ],
    ids=["seeded-generator", "jax-random", "generator-not-drawn"],
)
def test_deterministic_or_jax_random_code_has_no_findings(load, body):
    m = load(_PROGRAM.format(draw=body))
    with js.watch_purity() as plog:
        jax.block_until_ready(m.fn(0.0))
    assert plog.findings == []


def test_draws_outside_a_trace_are_not_findings(load):
    m = load(_PROGRAM.format(draw="x * 2"))
    with js.watch_purity() as plog:
        m.rng.normal()
        m.rs.uniform()
        m.pyrng.random()
        jax.block_until_ready(m.fn(0.0))
        m.rng.normal()
    assert plog.findings == []
