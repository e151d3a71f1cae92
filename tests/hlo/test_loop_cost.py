"""``--cost`` on loops: XLA counts a loop body once; the view says so and, for a
static trip count, estimates the flops with the body counted per iteration."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from IPython.utils.capture import capture_output
from jax import lax

import jaxscope as js
from jaxscope._display import to_html

X = jnp.ones((32, 32))


def square(c, _):
    return c @ c, None


def scanned(x):
    c, _ = lax.scan(square, x, None, length=10)
    return c


def unrolled(x):
    for _ in range(10):
        x = x @ x
    return x


def nested(x):
    def outer(c, _):
        c, _ = lax.scan(square, c, None, length=3)
        return c, None

    c, _ = lax.scan(outer, x, None, length=4)
    return c


def fori(x):
    return lax.fori_loop(0, 10, lambda i, c: c @ c, x)


def until(x):
    return lax.while_loop(lambda c: c[0, 0] < 1e6, lambda c: c @ c, x)


def _xla_flops(fn) -> float:
    cost = jax.jit(fn).lower(X).compile().cost_analysis()
    assert cost is not None
    return cost["flops"]


def test_scan_estimate_matches_xla_on_the_unrolled_program():
    view = js.hlo(scanned)(X)
    # XLA itself counts the scan body once
    cost = view.cost
    assert cost is not None
    assert cost["flops"] < _xla_flops(unrolled) / 5
    assert [(loop.primitive, loop.trip_count) for loop in view.loops] == [("scan", 10)]
    estimate = view.flops_estimate
    assert estimate is not None
    assert abs(estimate - _xla_flops(unrolled)) / _xla_flops(unrolled) < 0.01


def test_nested_scans_multiply_out_and_fori_loop_counts_as_a_scan():
    estimate = js.hlo(nested)(X).flops_estimate
    twelve = 12 * 2 * 32**3
    assert estimate is not None and abs(estimate - twelve) / twelve < 0.01
    assert js.hlo(fori)(X).loops[0].trip_count == 10


def test_cost_table_says_a_body_is_counted_once_and_labels_the_estimate():
    view = js.hlo(scanned, stage="optimized")(X)
    view.show_cost = True
    text, html = str(view), to_html(view)
    assert "XLA counts each loop body once: 1 loop (scan x10)" in text
    assert "(estimate)" in text and "flops x trip counts" in text
    assert "XLA counts each loop body once" in html and "(estimate)" in html


def test_while_loop_gets_the_caveat_and_no_estimate():
    view = js.hlo(until)(X)
    view.show_cost = True
    assert view.flops_estimate is None
    assert "while with no static trip count" in str(view)
    assert "(estimate)" not in str(view)


def test_a_program_without_loops_has_no_note():
    view = js.hlo(unrolled)(X)
    view.show_cost = True
    assert view.loops == [] and view.flops_estimate is None
    assert "loop" not in str(view).split("cost and memory")[-1]


def test_hlo_magic_cost_shows_the_estimate(ip):
    ip.user_ns.update(scanned=scanned, X=X)
    with capture_output() as captured:
        ip.run_cell("%hlo --cost scanned(X)").raise_error()
    assert "scan x10" in captured.stdout and "(estimate)" in captured.stdout


def test_the_installed_xla_counts_a_loop_body_once():
    # the premise of the caveat, checked on the installed XLA
    from jaxscope._hlo.loops import xla_counts_bodies_once

    assert xla_counts_bodies_once()
    assert _xla_flops(scanned) < 2 * 2 * 32**3
