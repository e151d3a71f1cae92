"""The ``jax_snapshot`` fixture in a pytest run of its own: missing, written, equal,
within tolerance, and failing with the program diff."""

from __future__ import annotations

import json

import pytest

# each test runs pytest in subprocesses that import JAX and compile
pytestmark = pytest.mark.slow

_TEST = """
import jax.numpy as jnp

def model(w, x):
    h = jnp.tanh(x @ w)
    return h.sum()

def test_model(jax_snapshot):
    jax_snapshot(model, flops=0.02)(jnp.ones((16, 16)), jnp.ones((4, 16)))
"""


def test_a_snapshot_is_missing_then_written_then_equal(pytester):
    pytester.makepyfile(test_snap=_TEST)
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*jax_snapshot: no snapshot __jax_snapshots__/test_snap/test_model.json yet; "
            "run pytest --jax-snapshot-update to write it*"
        ]
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--jax-snapshot-update")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*jaxscope: IR snapshots written*",
            "__jax_snapshots__/test_snap/test_model.json",
        ]
    )
    path = pytester.path / "__jax_snapshots__" / "test_snap" / "test_model.json"
    stored = json.loads(path.read_text())
    text = path.read_text()
    assert str(pytester.path) not in text  # no absolute path
    assert "0x" not in text
    lines = {item["line"]: item for item in stored["lines"]}
    assert lines["test_snap.py:4"]["eqns"] == [
        "dot_general[dimension_numbers=(((1,), (0,)), ((), ())) "
        "preferred_element_type=float32] f32[4,16], f32[16,16] -> f32[4,16]",
        "tanh f32[4,16] -> f32[4,16]",
    ]
    assert stored["totals"]["flops"] > 0
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert path.read_text() == text  # stable across runs


def test_a_changed_program_fails_with_the_diff_by_line(pytester):
    pytester.makepyfile(test_snap=_TEST)
    pytester.runpytest_subprocess("-p", "no:randomly", "--jax-snapshot-update")
    pytester.makepyfile(
        test_snap=_TEST.replace("jnp.tanh(x @ w)", "jnp.tanh(x @ w) * 2")
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*jax_snapshot: the program differs from "
            "__jax_snapshots__/test_snap/test_model.json (run pytest --jax-snapshot-update "
            "to accept it)",
            "ProgramDiff of snapshot → model (jaxpr, optimized HLO)",
            "*line test_snap.py:4: code was `h = jnp.tanh(x @ w)`; +1 equation (mul)*",
            "@@ test_snap.py:4  h = jnp.tanh(x @ w) * 2  (was: h = jnp.tanh(x @ w))*",
        ]
    )
    assert "  + mul f32[4,16], 2.0:f32[] -> f32[4,16]\n" in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_moved_lines_and_small_flop_changes_within_tolerance_pass(pytester):
    pytester.makepyfile(test_snap=_TEST)
    pytester.runpytest_subprocess("-p", "no:randomly", "--jax-snapshot-update")
    path = pytester.path / "__jax_snapshots__" / "test_snap" / "test_model.json"
    stored = json.loads(path.read_text())
    stored["totals"]["flops"] *= 1.01  # within flops=0.02
    path.write_text(json.dumps(stored))
    pytester.makepyfile(test_snap="# a comment moves every line down\n" + _TEST)
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    stored["totals"]["flops"] *= 1.05  # past it
    path.write_text(json.dumps(stored))
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*in total: flops*"])


def test_a_bad_tolerance_fails_in_one_line(pytester):
    pytester.makepyfile(test_snap=_TEST.replace("flops=0.02", "flop=0.02"))
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*jax_snapshot: no number named 'flop' to give a tolerance; use equations*"]
    )


def test_a_recompile_budget_failure_says_what_changed_in_the_program(pytester):
    pytester.makepyfile(
        test_budget="""
import jax, jax.numpy as jnp, pytest

@jax.jit
def step(p, lr):
    return p - lr * jnp.sin(p)

@pytest.mark.jax_max_recompiles(0)
def test_step():
    step(jnp.ones(3), 0.1)
    step(jnp.ones(3), jnp.asarray(0.1, jnp.float32))
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*step at test_budget.py:10: weak_type lr: *",
            "*hint: lr is a Python scalar on one call*",
            "      changed: line test_budget.py:5: -1 equation (convert_element_type)",
            "      changed: in total: equations 4 → 3 (-25%)",
        ]
    )
