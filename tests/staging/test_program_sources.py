"""A view maps sources within the program it shows: never to the frames of the
call JAX traced and cached first (an earlier cell, another view's line), nor to
the line that asked for the view. Ops JAX makes for a transform (a hessian's
identity, its final reshape) have no source in the program: they show none."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from IPython.utils.capture import capture_output

import jaxscope as js

DEFINE = (
    "import jax, jax.numpy as jnp\n"
    "@jax.jit\n"
    "def step(w, x, lr):\n"
    "    loss, g = jax.value_and_grad(lambda w: jnp.mean(jnp.maximum(x @ w, 0.0)))(w)\n"
    "    return w - lr * g, loss\n"
    "hess = jax.jit(jax.hessian(lambda W: jnp.sum(jnp.tanh(W) ** 2)))\n"
    "w, x = jnp.ones((4, 3)), jnp.ones((2, 4))\n"
)


def run(ip, source: str):
    result = ip.run_cell(source, store_history=True)
    assert result.success, result.error_in_exec
    return result


def sources(view) -> set[str]:
    items = view.ops if hasattr(view, "ops") else view.eqns
    return {item.source.file for item in items if item.source is not None}


@pytest.mark.parametrize("stage", ["stablehlo", "hlo"])
def test_a_cached_trace_from_an_earlier_cell_never_maps_ops_to_that_cell(ip, stage):
    defined = run(ip, DEFINE).execution_count
    earlier = run(ip, "h = %hlo --cost step(w, x, 0.1)").execution_count
    now = run(ip, f"v = %hlo --stage {stage} step(w, x, 0.1)").execution_count
    view = ip.user_ns["v"]
    assert sources(view) == {f"In [{defined}]"}
    assert f"In [{earlier}]" not in view.text + str(view)
    assert f"In [{now}]" not in str(view)


def test_hessian_helpers_are_not_put_on_the_line_that_asked_for_the_view(ip):
    defined = run(ip, DEFINE).execution_count
    now = run(ip, "v = %hlo hess(w)\nj = %jaxpr hess(w)").execution_count
    hlo, jaxpr = ip.user_ns["v"], ip.user_ns["j"]
    # jax 0.9 writes a one-frame location for these ops in the HLO: the caller's line
    # cannot be told from a program line there, so only the jaxpr is checked
    views = (hlo, jaxpr) if jax.__version_info__ >= (0, 10) else (jaxpr,)
    for view in views:
        assert sources(view) == {f"In [{defined}]"}
    iotas = [e for e in jaxpr.eqns if e.primitive == "iota"]
    assert iotas and all(e.source is None for e in iotas)  # no line of the program
    tanh = [e for e in jaxpr.eqns if e.primitive == "tanh"]
    assert tanh and all(e.source.file == f"In [{defined}]" for e in tanh)
    with capture_output() as cap:
        ip.run_line_magic("hlo", "hess(w)")
    assert f"In [{now}]" not in cap.stdout


def mse(w, x):
    return jnp.mean((x @ w) ** 2)  # L:mse


train = jax.jit(jax.grad(mse))
W, X = jnp.ones((4, 3)), jnp.ones((2, 4))


def warm_up():
    return train(W, X)  # L:warm


def test_views_after_a_call_elsewhere_map_only_to_the_function(line_of):
    warm_up()  # JAX traces and caches `train` here, inside warm_up
    mse_line, warm_line = line_of(mse, "L:mse"), line_of(warm_up, "L:warm")
    views = [
        js.jaxpr(train)(W, X),
        js.hlo(train, stage="stablehlo")(W, X),
        js.hlo(train, stage="optimized")(W, X),
    ]
    for view in views:
        lines = {
            (item.source.function, item.source.line)
            for item in (view.eqns if hasattr(view, "eqns") else view.ops)
            if item.source is not None
        }
        assert ("mse", mse_line) in lines
        assert ("warm_up", warm_line) not in lines
        assert all(function == "mse" for function, _ in lines), lines
    tree = js.profile(train, repeat=1)(W, X).functions
    assert [child.function for child in tree.children] == ["mse"]
