"""Helpers for the staging tests: where a marked line of a function is."""

from __future__ import annotations

import inspect

import pytest


def line_of(fn, marker: str) -> int:
    """The line number of the first source line of ``fn`` containing ``marker``."""
    fn = inspect.unwrap(fn)
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(f"{marker!r} not in the source of {fn.__name__}")


@pytest.fixture
def line():
    return line_of
