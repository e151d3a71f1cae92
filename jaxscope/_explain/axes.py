"""A collective over an axis name nothing binds ("unbound axis name: batch"): the name,
whether Equinox's ``BatchNorm`` asked for it, and the user's ``vmap`` call that should
bind it, rewritten with ``axis_name=``."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

from jaxscope._explain.frames import Entry, is_own_code, loc
from jaxscope._explain.site import site_at

UNBOUND = re.compile(r"unbound axis name:? '?(?P<name>[^\s'.,:;]+)")
_VMAPS = ("vmap", "filter_vmap")
_BATCH_NORM = "/equinox/nn/_batch_norm.py"


@dataclass(frozen=True, slots=True, kw_only=True)
class UnboundAxis:
    """The unbound axis name and the ``vmap`` that should bind it.

    Attributes:
        name: the axis name.
        batch_norm: whether ``eqx.nn.BatchNorm`` used it.
        vmap: the user's enclosing vmap call as written (``jax.vmap(model, ...)``),
            "" when none was found.
        fixed: that call with ``axis_name=`` added ("" when it binds a name already).
        binds: the axis name that call binds already ("" if none).
        where: the vmap call's place (``file:line``).
    """

    name: str
    batch_norm: bool = False
    vmap: str = ""
    fixed: str = ""
    binds: str = ""
    where: str = ""


def unbound_axis(text: str, found: list[Entry], users: list[Entry]) -> UnboundAxis:
    """What is known about the unbound axis of the message ``text``."""
    match = UNBOUND.search(text)
    name = match.group("name") if match else ""
    batch_norm = any(_BATCH_NORM in e.filename.replace(os.sep, "/") for e in found)
    for entry in reversed(users):
        if not is_own_code(entry):
            continue
        site = site_at(entry.filename, entry.line, entry.col, entry.end_col)
        node = site.node
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Call)):
            continue
        vmap = node.func
        if site.text(vmap.func).rsplit(".", 1)[-1] not in _VMAPS:
            continue
        written = " ".join(site.text(vmap).split())
        bound = next((k for k in vmap.keywords if k.arg == "axis_name"), None)
        binds = site.text(bound.value) if bound is not None else ""
        fixed = "" if bound else written[:-1].rstrip().rstrip(",")
        if fixed:
            fixed += f', axis_name="{name}")'
        return UnboundAxis(
            name=name,
            batch_norm=batch_norm,
            vmap=written,
            fixed=fixed,
            binds=binds,
            where=str(loc(entry)),
        )
    return UnboundAxis(name=name, batch_norm=batch_norm)
