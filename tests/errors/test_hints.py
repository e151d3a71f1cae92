"""``ErrorKind`` reads as its string; the message/hint builders are pure functions of
the facts they are given (hand-built facts, so no JAX error is needed)."""

from __future__ import annotations

import ast

import pytest

from jaxscope._explain.hints import Facts, explanation
from jaxscope._explain.messages import Tracing
from jaxscope._explain.report import ErrorKind, ErrorReport
from jaxscope._explain.site import NO_SITE, Site


def test_error_kind_is_its_string_everywhere():
    assert ErrorKind.SHAPE == "shape"
    assert str(ErrorKind.SHAPE) == "shape"
    assert f"{ErrorKind.NOT_JAX}" == "not_jax"
    assert {"shape": 1}[ErrorKind.SHAPE] == 1
    assert ErrorKind("leak") is ErrorKind.LEAK
    assert ErrorReport(kind="E", message="", user_frame=None).category == "not_jax"


def facts(kind: ErrorKind, text: str, **overrides) -> Facts:
    fields = {
        "kind": kind,
        "text": text,
        "site": NO_SITE,
        "tracing": Tracing(),
        "code": None,
        "operands": (),
        "user_frame": None,
        "context": (),
    }
    fields.update(overrides)
    return Facts(**fields)


def test_leak_builder_returns_the_holders_as_new_context_lines():
    given = facts(
        ErrorKind.LEAK,
        "Leaked trace ... is referred to by cache[0] and is referred to by cache[0]",
        context=("traced value: f32[]",),
    )
    first = explanation(given)
    assert first == explanation(given)  # same facts, same explanation
    assert given.context == ("traced value: f32[]",)
    assert first.extra_context == ("leaked into: cache[0]",)
    assert "still referenced by cache[0]" in first.message


def test_leak_builder_names_a_holder_already_found():
    given = facts(ErrorKind.LEAK, "", context=("leaked into: global `_STORE`",))
    result = explanation(given)
    assert "still stored in global `_STORE`" in result.message
    assert result.extra_context == ()


@pytest.mark.parametrize(
    ("kind", "text", "extra"),
    [
        (
            ErrorKind.NAN,
            "invalid value (nan) encountered in log",
            ("first nan-producing primitive: log",),
        ),
        (
            ErrorKind.OUT_OF_MEMORY,
            "RESOURCE_EXHAUSTED: Out of memory allocating 1536 bytes.",
            ("requested: 1.5 KiB (1536 bytes)",),
        ),
        (ErrorKind.RUNTIME, "INTERNAL: boom", ()),
        (ErrorKind.NOT_JAX, "division by zero", ()),
    ],
)
def test_builders_add_context_lines_only_through_their_result(kind, text, extra):
    result = explanation(facts(kind, text))
    assert result.extra_context == extra


def test_item_assignment_hint_comes_from_the_statement():
    source = "x[1] += 2.0\n"
    stmt = ast.parse(source).body[0]
    site = Site(source, None, stmt, None)
    result = explanation(facts(ErrorKind.ITEM_ASSIGNMENT, "", site=site))
    assert "x = x.at[1].add(2.0)" in result.hint
    assert "(`x[1] += 2.0`)" in result.message


def test_library_builders_without_findings_name_nothing_they_do_not_know():
    """With nothing found in the frames, the donated, unbound-axis and trace-level
    builders give the general fix and name no variable, call or transform."""
    donated = explanation(facts(ErrorKind.DONATED, "Array has been deleted."))
    assert donated.message.startswith("An array used here was deleted")
    assert "`" not in donated.message
    axis = explanation(
        facts(ErrorKind.UNBOUND_AXIS, "Found an unbound axis name: rows.")
    )
    assert 'jax.vmap(f, axis_name="rows")' in axis.hint
    assert "BatchNorm" not in axis.message
    level = explanation(
        facts(
            ErrorKind.TRACE_LEVEL,
            "Cannot mutate Variable from a different trace level",
        )
    )
    assert level.message.startswith("An NNX object from outside a JAX transform")
    assert "nnx.split" in level.hint and "`" not in level.message
