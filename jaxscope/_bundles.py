"""The browser code that ``extension/build.mjs`` builds into ``_static/`` (committed).

Widgets load their bundle as an ES module (``_static/<name>.js`` as ``_esm``). A static
HTML display whose behaviour is a few event handlers (the jaxpr and HLO views linking
their lines to the source) inlines a classic script instead, built from
``extension/src/<name>/`` as an IIFE that exports ``wire(root_id)``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "_static"


@functools.cache
def _script_source(name: str) -> str:
    source = (STATIC / f"{name}.js").read_text("utf-8").strip()
    # The bundle goes inside <script>: nothing in it may end the element early.
    if "</script" in source.lower() or "<!--" in source:
        raise ValueError(f"_static/{name}.js cannot be inlined in a <script> element")
    return source


def inline_script(name: str, root_id: str) -> str:
    """The body of a ``<script>`` that wires the display whose element id is
    ``root_id`` with ``_static/<name>.js``; it leaves no global behind."""
    call = f"jaxscope_{name}.wire({json.dumps(root_id)});"
    return f"(function(){{{_script_source(name)}\n{call}}})();"
