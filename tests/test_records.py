"""``fast_init``: records built through their slots behave as dataclass builds them."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from jaxscope._graph.records import GraphNode
from jaxscope._records import SourceLoc, fast_init, fill_in


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


def test_fill_in_sets_fields_of_a_record_not_yet_handed_out():
    node = GraphNode(id="n0", kind="eqn", label="sin", group="g1")
    assert fill_in(node, group="g0", aux=True) is node
    assert (node.group, node.aux, node.label) == ("g0", True, "sin")
    with pytest.raises(AttributeError):
        fill_in(node, colour="red")
