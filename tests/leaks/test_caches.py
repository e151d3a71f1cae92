"""check_leaks leaves JAX's caches alone: nothing compiled before a block recompiles
because of it and blocks add no cache entries. (Memory over many blocks and the cost
of a block around warm code are measured in ``benchmarks/bench_leaks.py``.)"""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp

import jaxscope as js


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


def test_blocks_around_a_warm_function_keep_its_cache_size():
    f, traces = counting_jit()
    x = jnp.ones(3)
    f(x)
    for _ in range(100):
        with js.check_leaks():
            f(x)
    assert f._cache_size() == 1 and len(traces) == 1


def test_eager_ops_compiled_before_a_block_are_not_compiled_again(caplog):
    x = jnp.linspace(0.0, 1.0, 16)
    jnp.tanh(jnp.sin(x) * 2.0).block_until_ready()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        with js.check_leaks():
            jnp.tanh(jnp.sin(x) * 2.0).block_until_ready()
    assert not [r for r in caplog.records if "Compiling" in r.getMessage()]
