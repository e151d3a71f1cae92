"""check_leaks leaves JAX's caches alone: nothing compiled before a block recompiles
because of it, blocks add no cache entries, memory stays flat, and a block around
warm code costs about what ``jax.checking_leaks()`` costs."""

from __future__ import annotations

import logging
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def counting_jit():
    traces = []

    @jax.jit
    def f(x):
        traces.append(1)
        return jnp.sin(x) * 2

    return f, traces


def test_a_function_compiled_before_an_empty_block_does_not_recompile_after_it():
    f, traces = counting_jit()
    x = jnp.ones(3)
    f(x)
    with js.check_leaks():
        pass
    f(x)
    assert len(traces) == 1
    assert f._cache_size() == 1


def test_a_warm_function_called_in_a_block_is_served_from_the_cache():
    f, traces = counting_jit()
    x = jnp.ones(3)
    f(x)
    with js.check_leaks():
        f(x)
    f(x)
    assert len(traces) == 1 and f._cache_size() == 1


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/statm")
def test_blocks_around_a_warm_function_keep_its_cache_size_and_memory_flat():
    f, traces = counting_jit()
    x = jnp.ones(3)
    f(x)
    with js.check_leaks():  # the first block's one-time costs out of the measure
        f(x)
    before = rss_mb()
    for _ in range(100):
        with js.check_leaks():
            f(x)
    assert f._cache_size() == 1 and len(traces) == 1
    assert rss_mb() - before < 30


def test_eager_ops_compiled_before_a_block_are_not_compiled_again(caplog):
    x = jnp.linspace(0.0, 1.0, 16)
    jnp.tanh(jnp.sin(x) * 2.0).block_until_ready()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        with js.check_leaks():
            jnp.tanh(jnp.sin(x) * 2.0).block_until_ready()
    assert not [r for r in caplog.records if "Compiling" in r.getMessage()]


def _paired_ratio(run, rounds: int = 7) -> float:
    """Median over interleaved rounds of (time under js.check_leaks) / (time under
    jax.checking_leaks), the same warm loop each time."""
    ratios = []
    for i in range(rounds):
        times = {}
        order = ("jax", "js") if i % 2 else ("js", "jax")
        for name in order:
            context = jax.checking_leaks() if name == "jax" else js.check_leaks()
            start = time.perf_counter()
            with context:
                run()
            times[name] = time.perf_counter() - start
        ratios.append(times["js"] / max(times["jax"], 1e-4))
    return statistics.median(ratios)


def test_a_block_around_warm_jitted_steps_costs_about_what_jax_checking_leaks_costs():
    @jax.jit
    def step(w, x):
        g = jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
        return w - 0.1 * g

    w, x = jnp.ones((16, 16)), jnp.ones((8, 16))

    def run():
        v = w
        for _ in range(50):
            v = step(v, x)
        v.block_until_ready()

    run()
    # the budget is 1.5x; the margin absorbs a loaded CI machine
    assert _paired_ratio(run) < 2.5
