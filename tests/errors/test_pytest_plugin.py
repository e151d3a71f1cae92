"""The pytest plugin adds the source-mapped report to tests failing with a JAX error."""

from __future__ import annotations

TEST_FILE = """
import jax
import jax.numpy as jnp


def model(x, w):
    h = jnp.tanh(x)
    return h @ w


def clip_if(x, limit):
    if limit > 0:
        return jnp.minimum(x, limit)
    return x


def test_shapes():
    jax.jit(model)(jnp.ones((4, 3)), jnp.ones((4, 5)))


def test_branch():
    jax.jit(clip_if)(jnp.ones(3), 2.0)


def test_plain_failure():
    assert 1 + 1 == 3


def test_passes():
    assert jax.jit(model)(jnp.ones((2, 3)), jnp.ones((3, 4))).shape == (2, 4)
"""


def test_failing_jax_tests_get_the_report(pytester):
    pytester.makepyfile(test_jaxcode=TEST_FILE)
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    assert out.count("jaxscope: source-mapped JAX error") == 2
    result.stdout.fnmatch_lines(
        [
            "*jaxscope: source-mapped JAX error*",
            "TypeError  at test_jaxcode.py:7 in model",
        ]
    )
    assert (
        "h is f32[4,3] and w is f32[4,5]: the inner dimensions differ (3 vs 4); did you mean h.T @ w?"
        in out
    )
    result.stdout.fnmatch_lines(
        [
            "TracerBoolConversionError  at test_jaxcode.py:11 in clip_if",
        ]
    )
    assert (
        "mark it static: `jax.jit(clip_if, static_argnums=(1,))` (or static_argnames='limit')"
        in out
    )
    result.stdout.fnmatch_lines(
        ["frames: test_jaxcode.py:21 (test_branch) → test_jaxcode.py:11 (clip_if)"]
    )
    assert "pytest_playwright" not in out.split("jaxscope: source-mapped")[1]
    # the plain assertion failure is left alone
    plain = out.split("test_plain_failure")[1].split("short test summary")[0]
    assert "jaxscope" not in plain


def test_report_can_be_turned_off(pytester):
    pytester.makepyfile(test_jaxcode=TEST_FILE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--jax-explain=off")
    result.assert_outcomes(passed=1, failed=3)
    assert "jaxscope: source-mapped JAX error" not in result.stdout.str()


def test_bad_ini_value_is_a_clear_usage_error(pytester):
    pytester.makepyfile(test_jaxcode=TEST_FILE)
    pytester.makeini("[pytest]\njax_explain = loud\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    assert result.ret != 0
    assert (
        "ini option jax_explain must be 'on' or 'off', got 'loud'"
        in result.stderr.str() + result.stdout.str()
    )


BRANCH_FILE = """
import jax
import jax.numpy as jnp


@jax.jit
def f(x):
    if x.sum() > 0:
        return x
    return -x


def test_sum_branch():
    f(jnp.ones(3))
"""


def test_report_on_a_branch_over_an_array_leads_with_the_array_form(pytester):
    pytester.makepyfile(test_branch=BRANCH_FILE)
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    hint = out.split("hint: ", 1)[1]
    assert hint.startswith("Under jit, x holds arrays")
    assert "`return jnp.where(x.sum() > 0, x, -x)`" in hint
    assert "static_argnums=(" not in hint
