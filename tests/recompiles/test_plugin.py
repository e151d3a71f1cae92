"""The pytest plugin's budgets say what they count, and count only the user's compiles."""

from __future__ import annotations

_BUDGETS = """
import jax, jax.numpy as jnp, pytest

def double(x):
    return x * 2

f = jax.jit(double)

@pytest.mark.jax_max_compiles(1)
def test_compiles_over():
    f(jnp.ones(3))
    f(jnp.ones(4))

@pytest.mark.jax_max_recompiles(1)
def test_one_recompile_is_within_budget():
    f(jnp.ones(5))
    f(jnp.ones(6))

@pytest.mark.jax_max_recompiles(1)
def test_recompiles_over():
    f(jnp.ones(7))
    f(jnp.ones(8))
    f(jnp.ones(9))

@pytest.mark.jax_max_recompiles(3, function="dubble")
def test_misspelled_function():
    f(jnp.ones(10))
"""


def test_compiles_and_recompiles_markers_count_what_they_say(pytester):
    pytester.makepyfile(test_budgets=_BUDGETS)
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*_ test_compiles_over _*",
            "jax_max_compiles(1) exceeded: double compiled 2 times "
            "(first compile included)",
            "*_ test_recompiles_over _*",
            "jax_max_recompiles(1) exceeded: double recompiled 2 times "
            "(3 compiles in this test; the first is not a recompile)",
            "*_ test_misspelled_function _*",
            "jax_max_recompiles(3, function='dubble'): no function named 'dubble' "
            "was compiled in this test",
        ]
    )


def test_fixture_under_warn_is_counted_once_in_the_footer(pytester):
    pytester.makepyfile(
        test_fixture="""
        import jax, jax.numpy as jnp

        def counted(x):
            return x + 1

        def test_fixture(jax_recompiles):
            jax.jit(counted)(jnp.ones(1))
            assert len(jax_recompiles.events) == 1
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--jax-recompiles=warn")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["    1 compile   * s  counted (test_fixture.py:3)  ?most in *: 1?"]
    )


def test_two_lambdas_compiled_once_each_are_not_a_recompile(pytester):
    pytester.makepyfile(
        test_lambdas="""
        import jax, jax.numpy as jnp

        def test_two():
            a = jax.jit(lambda x: x + 1)
            b = jax.jit(lambda x: x * 2)
            a(jnp.ones(2)); b(jnp.ones(2))
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--jax-recompiles=fail")
    result.assert_outcomes(passed=1)


def test_a_leak_check_around_a_cached_call_adds_no_recompile(pytester):
    pytester.makepyfile(
        test_leaks="""
        import jax, jax.numpy as jnp
        import jaxscope as js

        f = jax.jit(lambda x: x * 3)

        def test_checked_again():
            f(jnp.ones(2))
            with js.check_leaks():
                f(jnp.ones(2))
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--jax-recompiles=fail", "--jax-check-leaks"
    )
    result.assert_outcomes(passed=1)
