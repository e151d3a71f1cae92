"""Text rendering of ``JaxprView``: the jaxpr with source lines, coloured by role."""

from __future__ import annotations

import re
from typing import Any

from .._views import JaxprView
from . import rich_renderable

_EQN = re.compile(r"^(\s*)(.*?) = ([\w.]+)(\[.*?\])?( .*?)?(  # .*)?$")

# Displays fold long programs; `.text` always has everything.
DISPLAY_MAX_EQNS_PER_REGION = 200


def display_text(view: JaxprView) -> str:
    """The text a display shows: folded at ``view.depth``, long regions elided."""
    return view.text_at(
        depth=view.depth,
        max_eqns=DISPLAY_MAX_EQNS_PER_REGION,
        source=view.show_source,
    )


@rich_renderable.register
def _(view: JaxprView) -> Any:
    from rich.text import Text

    out = Text()
    for line in display_text(view).splitlines():
        match = _EQN.match(line)
        if match is None:
            out.append(line + "\n", style="dim" if "..." in line else "")
            continue
        indent, outs, prim, params, ins, src = match.groups()
        out.append(indent)
        out.append(outs, style="cyan")
        out.append(" = ")
        out.append(prim, style="bold magenta")
        if params:
            out.append(params, style="dim")
        if ins:
            out.append(ins, style="green")
        if src:
            out.append(src, style="yellow")
        out.append("\n")
    out.rstrip()
    return out
