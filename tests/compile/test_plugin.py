"""@pytest.mark.jax_max_eqns in a real pytest run (pytester)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

PROGRAM = """
import jax, jax.numpy as jnp, pytest

def unrolled(x):
    for _ in range(300):
        x = jnp.sin(x) * 1.01
    return x

def scanned(x):
    return jax.lax.fori_loop(0, 300, lambda i, c: jnp.sin(c) * 1.01, x)

{marker}
def test_program():
    jax.jit({fn})(jnp.ones(3)).block_until_ready()
"""


def run(pytester, marker, fn):
    pytester.makepyfile(PROGRAM.format(marker=marker, fn=fn))
    return pytester.runpytest_subprocess("-q", "-p", "no:randomly")


@pytest.mark.slow
def test_unrolled_loop_over_the_budget_fails_with_its_top_line(pytester):
    result = run(pytester, "@pytest.mark.jax_max_eqns(100)", "unrolled")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "unrolled has 600 jaxpr equations, over the budget of 100" in out
    assert (
        "600 eqns  test_unrolled_loop_over_the_budget_fails_with_its_top_line.py:5"
        in out
    )


@pytest.mark.slow
def test_scanned_loop_within_the_budget_passes(pytester):
    result = run(
        pytester, "@pytest.mark.jax_max_eqns(100, function='scanned')", "scanned"
    )
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_budget_naming_no_compiled_function_fails_clearly(pytester):
    result = run(pytester, "@pytest.mark.jax_max_eqns(100, function='nope')", "scanned")
    result.assert_outcomes(failed=1)
    assert "no function of that name was compiled" in result.stdout.str()
