"""The pytest plugin is active in every pytest run of the environment, so it must cost
nothing to projects that do not use JAX: JAX (and jaxscope's features) load only
when a test asks for a jaxscope fixture, marker or option."""

from __future__ import annotations

import textwrap


def test_a_project_without_jax_never_imports_jax(pytester):
    pytester.makepyfile(
        test_plain=textwrap.dedent(
            """
            import sys

            def test_jax_was_not_imported_by_the_plugin():
                assert "jax" not in sys.modules
                assert "jaxscope._recompiles.watcher" not in sys.modules
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)


def test_the_fixture_still_loads_the_watcher_when_used(pytester):
    pytester.makepyfile(
        test_jaxcode=textwrap.dedent(
            """
            import jax, jax.numpy as jnp

            def test_uses_fixture(jax_recompiles):
                jax.jit(lambda x: x + 1)(jnp.ones(2))
                assert len(jax_recompiles.events) == 1
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)
