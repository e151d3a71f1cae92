"""Search finds an equation by the functions and library modules on its whole call
stack: a Flax NNX training step with ``optax.adamw`` is found by ``adam``,
``scale_by_adam`` and ``optax``. ``adamw`` itself appears nowhere in the traced step
(``optax.adamw`` only builds the transformations the step runs), so that search
says what it looked at and offers terms that find something."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import optax
import pytest
from flax import nnx

import jaxscope as js

API = "document.querySelector('.jaxscope-graph-mount').__jaxscopeGraph"


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(4, 8, rngs=rngs)
        self.fc2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.fc2(nnx.relu(self.fc1(x)))


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return ((model(x) - y) ** 2).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


@pytest.fixture(scope="module")
def adamw_step():
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)
    return js.graph(train_step)(model, optimizer, jnp.ones((3, 4)), jnp.ones((3, 2)))


def _stack_texts(payload: dict) -> list[list[str]]:
    strings = payload["strings"]
    return [[strings[k] for k in row] for row in payload["stacks"]]


def test_the_payload_holds_each_equations_call_stack_once(adamw_step):
    payload = adamw_step.payload()
    stacks = _stack_texts(payload)
    runs = payload["nodeStacks"]
    assert sum(runs[1::2]) == len(payload["nodes"])
    assert all(-1 <= k < len(stacks) for k in runs[0::2])
    frames = {f for row in stacks for f in row}
    assert "optax/_src/transform.py:scale_by_adam.<locals>.update_fn" in frames
    assert "flax/nnx/training/optimizer.py:Optimizer.update" in frames
    # the user's own frames by function name alone, no path
    assert "train_step" in frames and "MLP.__call__" in frames
    assert len({tuple(row) for row in stacks}) == len(stacks)
    # inputs and outputs have no stack
    kinds = [n.kind for n in adamw_step.nodes]
    expanded = [
        k for k, n in zip(runs[0::2], runs[1::2], strict=True) for _ in range(n)
    ]
    assert all(
        s == -1 for s, kind in zip(expanded, kinds, strict=True) if kind != "eqn"
    )


def test_a_program_without_libraries_has_only_its_own_functions_on_stacks():
    def loss(w, x):
        return jnp.sum(jnp.tanh(x @ w))

    payload = js.graph(jax.grad(loss))(jnp.ones((4, 4)), jnp.ones((2, 4))).payload()
    frames = {f for row in _stack_texts(payload) for f in row}
    assert frames and all(":" not in f for f in frames), frames


@pytest.mark.browser
def test_search_finds_the_optimizer_by_its_library_functions(
    adamw_step, graph_browser, tmp_path, open_static
):
    page = graph_browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        open_static(page, tmp_path, adamw_step)

        def results(query):
            page.evaluate(f"{API}.search({json.dumps(query)})")
            return page.evaluate(f"{API}.results()")

        adam = results("adam")
        assert adam and all(r["id"][0] == "n" for r in adam)
        # every hit is inside the user's call of the optimizer
        assert all("optimizer.update" in r["path"] for r in adam), adam[:3]
        assert [r["id"] for r in results("scale_by_adam")] == [r["id"] for r in adam]
        optax_hits = {r["id"] for r in results("optax")}
        assert optax_hits >= {r["id"] for r in adam}
        # a hit's panel shows the call stack that matched
        page.evaluate(f"{API}.select({int(adam[0]['id'][1:])})")
        page.wait_for_selector(".jaxscope-graph:not([data-busy])", timeout=30000)
        stack = page.locator(".jsg-panel .jsg-stack").inner_text()
        assert "optax/_src/transform.py:scale_by_adam.<locals>.update_fn" in stack

        # adamw: nothing in the trace says it; the panel says what was searched
        # and offers terms of this graph that find something
        assert results("adamw") == []
        panel = page.locator(".jsg-panel")
        assert "Nothing matches \u201cadamw\u201d" in panel.inner_text()
        assert "library modules on each equation's call stack" in panel.inner_text()
        tries = [
            " ".join(t.split())
            for t in panel.locator(".jsg-suggest .jsg-result").all_inner_texts()
        ]
        assert tries[0] == f"adam ({len(adam)} matches)"
        assert any(t.startswith("optax (") for t in tries), tries
        panel.locator(".jsg-suggest .jsg-result").first.click()
        assert page.locator(".jsg-search").input_value() == "adam"
        assert page.locator(".jsg-results .jsg-result").count() == min(len(adam), 100)
        assert not errors, errors
    finally:
        page.close()
