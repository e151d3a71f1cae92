"""Fixtures of the HLO view tests."""

from __future__ import annotations

import inspect

import pytest


def line_of(fn, marker: str) -> int:
    """The file line number of the first line of ``fn``'s source containing ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(f"{marker!r} not in the source of {fn.__name__}")


@pytest.fixture
def line_in():
    """``line_in(fn, marker)``: the line of ``fn`` holding ``marker``."""
    return line_of
