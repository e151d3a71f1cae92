"""A block reports the leaks of the code run on its own thread, with blocks open on
several threads at once, and ends cleanly whichever thread exits it."""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp

import jaxscope as js
from jaxscope._leaks.checker import hooks_installed

kept: list = []


def leak_n(n: int) -> None:
    """Trace ``n`` fresh functions under jit, each leaking one tracer into ``kept``."""
    for i in range(n):

        def f(x):
            kept.append(jnp.sin(x) * 2)
            return x

        jax.jit(f)(float(i))


def run_threads(*targets) -> None:
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)


def test_a_clean_block_does_not_report_another_threads_leaks():
    both_open, done = threading.Barrier(2), threading.Barrier(2)
    reports = {}

    def worker():
        with js.check_leaks(raise_on_leak=False) as reports["worker"]:
            both_open.wait()
            leak_n(4)
            done.wait()

    def main():
        with js.check_leaks(raise_on_leak=False) as reports["main"]:
            both_open.wait()
            jax.jit(lambda x: x + 1)(1.0)
            done.wait()

    run_threads(worker, main)
    assert len(reports["worker"]) == 4
    assert reports["main"].leaks == []
    kept.clear()


def test_blocks_on_several_threads_each_report_exactly_their_own_leaks():
    barrier = threading.Barrier(4)
    reports: dict[int, js.LeakReport] = {}

    def worker(n: int):
        def run():
            with js.check_leaks(raise_on_leak=False) as reports[n]:
                barrier.wait()
                leak_n(n)
                barrier.wait()

        return run

    run_threads(*(worker(n) for n in range(4)))
    assert {n: len(r) for n, r in reports.items()} == {0: 0, 1: 1, 2: 2, 3: 3}
    assert not hooks_installed()
    kept.clear()


def test_a_block_leaves_code_run_on_an_unchecked_thread_to_that_thread():
    """Documented semantics: like JAX's thread-local leak checking, a block checks
    its own thread; the worker here checks nothing, so nothing is reported."""
    with js.check_leaks(raise_on_leak=False) as report:
        run_threads(lambda: leak_n(2))
        leak_n(1)
    assert len(report) == 1
    kept.clear()


def test_a_block_exited_on_another_thread_ends_for_the_thread_that_entered_it():
    report = js.check_leaks(raise_on_leak=False)
    before = jax.config.jax_check_tracer_leaks
    report.__enter__()
    run_threads(lambda: report.__exit__(None, None, None))
    assert not report.active and not hooks_installed()
    assert jax.config.jax_check_tracer_leaks == before
    leak_n(1)  # after the block: neither checked nor raising
    assert report.leaks == []
    kept.clear()
