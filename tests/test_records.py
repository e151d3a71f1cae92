"""``fast_init``: records built through their slots behave as dataclass builds them."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from jaxscope._graph.model import GraphNode
from jaxscope._records import SourceLoc, fast_init


def test_fast_init_keeps_defaults_factories_and_frozenness():
    a, b = (
        GraphNode(id="n0", kind="eqn", label="sin", group=None),
        GraphNode(id="n1", kind="eqn", label="cos", group=None),
    )
    assert a.params == {} and a.params is not b.params  # a fresh default per record
    assert a.path == () and a.source is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.label = "tan"  # type: ignore[misc]
    loc = SourceLoc(file="m.py", line=3)
    assert loc == SourceLoc(file="m.py", line=3, column=None) and hash(loc)
    assert dataclasses.replace(loc, line=4).line == 4
    assert str(inspect.signature(SourceLoc)) == (
        "(*, file, line, column=None, function=None)"
    )
    with pytest.raises(TypeError, match="line"):
        SourceLoc(file="m.py")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        SourceLoc("m.py", 3)  # type: ignore[misc]


def test_fast_init_refuses_a_record_it_was_not_written_for():
    @dataclasses.dataclass(slots=True)
    class Mutable:
        x: int

    with pytest.raises(TypeError, match="frozen kw_only"):
        fast_init(Mutable)
