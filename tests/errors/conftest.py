"""Fixtures of the error-explainer tests: catching real JAX errors, locating marker lines."""

from __future__ import annotations

import inspect

import pytest


def raised(fn, *args, **kwargs) -> BaseException:
    """Call ``fn`` and return the exception it raised (fail if it raised none)."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # the point of the helper
        return exc
    pytest.fail(f"{fn!r} raised nothing")


def marker_line(fn, marker: str = "# <- error") -> int:
    """The line number of the line of ``fn``'s source that holds ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(f"{marker!r} not in the source of {fn.__name__}")


@pytest.fixture
def catch():
    return raised


@pytest.fixture
def line_of():
    return marker_line
