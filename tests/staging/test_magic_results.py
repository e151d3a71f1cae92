"""``v = %magic ...`` keeps the view object; a view magic is displayed exactly once."""

from __future__ import annotations

import pytest
from IPython.utils.capture import capture_output

from jaxscope._graph.view import GraphView
from jaxscope._hlo.view import HloView
from jaxscope._jaxpr.view import JaxprView
from jaxscope._profile.memory import MemoryView
from jaxscope._profile.profile import ProfileView
from jaxscope._purity.watcher import PurityLog
from jaxscope._recompiles.records import RecompileSummary
from jaxscope._sharding.array import ShardingView
from jaxscope._sharding.program import ProgramShardingView
from jaxscope._stepper.widget import StepperWidget

SETUP = """\
import jax, jax.numpy as jnp
def f(x):
    return jnp.sin(x) * 2.0
x = jnp.arange(4.0)
"""

# (magic line, the view's type, a text only its display contains)
VIEWS = [
    ("jaxpr f(x)", JaxprView, "sin"),
    ("jaxpr --graph f(x)", GraphView, "graph of f"),
    ("hlo f(x)", HloView, "HLO of f"),
    ("jaxgraph f(x)", GraphView, "graph of f"),
    ("sharding x", ShardingView, "float32[4]"),
    ("sharding f(x)", ProgramShardingView, "f"),
    ("jaxmem f(x)", MemoryView, "f"),
    ("recompiles report", RecompileSummary, ""),
    ("purity report", PurityLog, ""),
    ("jaxstep --widget f(x)", StepperWidget, "sin"),
]


@pytest.fixture
def shell(ip):
    ip.run_cell(SETUP).raise_error()
    return ip


def _shown(captured) -> list[str]:
    """Everything displayed: display() outputs and the displayhook's printed result."""
    texts = [out.data.get("text/plain", "") for out in captured.outputs]
    if captured.stdout.strip():
        texts.append(captured.stdout)
    return texts


@pytest.mark.parametrize(("line", "kind", "marker"), VIEWS, ids=[v[0] for v in VIEWS])
def test_assigned_magic_returns_its_view_and_shows_nothing(shell, line, kind, marker):
    with capture_output() as captured:
        shell.run_cell(f"v = %{line}").raise_error()
    assert isinstance(shell.user_ns["v"], kind)
    assert _shown(captured) == []


@pytest.mark.parametrize(("line", "kind", "marker"), VIEWS, ids=[v[0] for v in VIEWS])
def test_unassigned_magic_is_displayed_once(shell, line, kind, marker):
    with capture_output() as captured:
        shell.run_cell(f"%{line}").raise_error()
    shown = _shown(captured)
    assert len(shown) == 1, shown
    assert marker in shown[0]
    with capture_output() as captured:
        shell.run_cell(f"%{line};", store_history=True).raise_error()
    assert _shown(captured) == [], "a trailing ; must hide the result"


def test_magic_mid_cell_is_displayed_once(shell):
    with capture_output() as captured:
        shell.run_cell("%jaxpr f(x)\ny = 1\n").raise_error()
    shown = _shown(captured)
    assert len(shown) == 1 and "sin" in shown[0], shown


def test_profile_magic_returns_its_view(shell):
    with capture_output() as captured:
        shell.run_cell("p = %jaxprof --repeat 1 --warmup 0 f(x)").raise_error()
    assert isinstance(shell.user_ns["p"], ProfileView)
    assert _shown(captured) == []
