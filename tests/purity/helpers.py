"""Helpers shared by the purity tests."""

from __future__ import annotations


def line_of(module, text: str) -> int:
    """The 1-based line of ``module``'s file that contains ``text``."""
    with open(module.__file__) as f:
        lines = f.read().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def texts(cap) -> str:
    """Everything an IPython ``capture_output`` saw as text."""
    return "\n".join(o.data.get("text/plain", "") for o in cap.outputs) + cap.stdout
