"""The stepper's plan of a program: every (nested) jaxpr, its equations and names.

A ``Plan`` is built once, parallel to the ``Region`` tree of ``js.jaxpr``'s model, so
that the stepper's equation paths and variable names are those of ``js.jaxpr``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from jaxscope._jaxpr.model import Region
from jaxscope._records import EqnInfo
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import source as _csource
from jaxscope.compat import stepper as _cs


class Node:
    """One equation of one (nested) jaxpr, with its EqnInfo and how to run it.

    ``line_start`` is whether it is the first equation of a run of equations from
    one source line (where line breakpoints stop).
    """

    __slots__ = (
        "_raw_file",
        "_run",
        "eqn",
        "info",
        "invars",
        "line_start",
        "outvars",
        "subs",
    )

    def __init__(
        self, eqn: Any, info: EqnInfo, subs: dict[str, Plan], line_start: bool
    ):
        self.eqn = eqn
        self.info = info
        self.invars = list(eqn.invars)
        self.outvars = list(eqn.outvars)
        self.subs = subs
        self.line_start = line_start
        self._run: Callable[[Sequence[Any]], list[Any]] | None = None
        self._raw_file: str | None = None

    def runner(self) -> Callable[[Sequence[Any]], list[Any]]:
        """The function running this equation on concrete inputs (made at first use)."""
        if self._run is None:
            self._run = _cs.binder(self.eqn)
        return self._run

    def raw_file(self) -> str | None:
        """The file name Python compiled this equation's source line under."""
        if self._raw_file is None:
            raw = _csource.innermost_user_frame(_csource.eqn_traceback(self.eqn))
            self._raw_file = raw.file if raw is not None else ""
        return self._raw_file or None


class Plan:
    """A (nested) jaxpr: binders, consts and nodes, parallel to a ``Region``.

    ``names`` (``{id(var): name}``, shared by the whole program) receives the
    region's names of every variable.
    """

    __slots__ = ("consts", "constvars", "invars", "label", "nodes", "outvars", "region")

    def __init__(
        self, jaxpr: Any, consts: list[Any], region: Region, names: dict[int, str]
    ):
        self.region = region
        self.label = region.label
        self.consts = consts
        self.constvars = list(jaxpr.constvars)
        self.invars = list(jaxpr.invars)
        self.outvars = list(jaxpr.outvars)
        _name(names, self.constvars, region.constvars)
        _name(names, self.invars, region.invars)
        self.nodes: list[Node] = []
        previous: tuple[str, int] | None = None
        for k, (eqn, info) in enumerate(zip(jaxpr.eqns, region.eqns, strict=False)):
            _name(names, eqn.invars, info.inputs, skip=_cj.is_literal)
            _name(names, eqn.outvars, info.outputs, skip=_cj.is_dropvar)
            children = region.children.get(k, [])
            subs: dict[str, Plan] = {}
            for (label, sub), child in zip(_cj.subjaxprs(eqn), children, strict=False):
                sub_jaxpr, sub_consts = _cj.open_jaxpr(sub)
                subs[label] = Plan(sub_jaxpr, sub_consts, child, names)
            key = info.source.key if info.source is not None else None
            self.nodes.append(
                Node(eqn, info, subs, key is not None and key != previous)
            )
            previous = key


def _name(
    names: dict[int, str],
    atoms: Iterable[Any],
    named: Iterable[tuple[str, str]],
    skip: Callable[[Any], bool] | None = None,
) -> None:
    for atom, (name, _) in zip(atoms, named, strict=False):
        if skip is None or not skip(atom):
            names.setdefault(id(atom), name)


def iter_nodes(plan: Plan) -> Iterator[Node]:
    """Every node of ``plan``, nested plans included, depth-first."""
    for node in plan.nodes:
        yield node
        for sub in node.subs.values():
            yield from iter_nodes(sub)


def read(env: dict[Any, Any], atom: Any) -> Any:
    """The value of a variable in ``env``, or of a literal."""
    if _cj.is_literal(atom):
        return _cj.literal_value(atom)
    return env[atom]


def write(env: dict[Any, Any], outvars: Sequence[Any], values: Sequence[Any]) -> None:
    """Bind an equation's results in ``env`` (dropped outputs are not kept)."""
    for var, val in zip(outvars, values, strict=False):
        if not _cj.is_dropvar(var):
            env[var] = val
