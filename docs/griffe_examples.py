"""A griffe extension: jaxscope's ``Example:`` docstring sections render as doctests.

The Google style names the section ``Example:`` or ``Examples:``; griffe parses only
the plural as code (the singular is an admonition whose ``['sin', 'mul']`` output
lines would read as Markdown links).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:[ \t]*$", re.M)


class DoctestExamples(griffe.Extension):
    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
