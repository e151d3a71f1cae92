"""Fixtures of the error-explainer tests: catching real JAX errors, locating marker lines."""

from __future__ import annotations

import pytest


def raised(fn, *args, **kwargs) -> BaseException:
    """Call ``fn`` and return the exception it raised (fail if it raised none)."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # the point of the helper
        return exc
    pytest.fail(f"{fn!r} raised nothing")


@pytest.fixture
def catch():
    return raised


@pytest.fixture
def line_of(line_of):
    """The root ``line_of``, with this directory's marker as the default."""
    return lambda fn, marker="# <- error": line_of(fn, marker)
