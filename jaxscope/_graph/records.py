"""The graph's records: ``GraphNode``, ``GraphEdge``, ``GraphGroup`` and ``GraphModel``.

What they stand for and how a jaxpr becomes one: ``model``; what the browser reads of
them: ``payload``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jaxscope._records import SourceLoc, fast_init

# Distinct consuming groups from which a node is auxiliary (see ``model``'s docstring).
AUX_MIN_GROUPS = 4


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class GraphNode:
    """One node: an equation (``kind="eqn"``), an ``"input"``, ``"output"`` or ``"const"``."""

    id: str
    kind: str
    label: str
    group: str | None
    primitive: str = ""
    path: tuple[int, ...] = ()
    inputs: tuple[tuple[str, str], ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()
    params: dict[str, str] = field(default_factory=dict)
    source: SourceLoc | None = None
    scope: str = ""
    aux: bool = False
    frames: tuple[SourceLoc, ...] = field(default=(), compare=False)
    """An equation's call stack, innermost first, libraries' frames included (the
    ``EqnInfo``'s own tuple, shared by the equations of one traceback)."""


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class GraphEdge:
    """A variable flowing from node ``src`` to ``dst`` (``var`` named, of ``type``).

    ``dst`` is a node id, or a group id for an operand that the group's equation
    consumes itself rather than passing to a nested jaxpr (cond's branch index).
    """

    src: str
    dst: str
    var: str
    type: str


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class GraphGroup:
    """A group: an equation with nested jaxprs (``kind`` = its primitive), one nested
    jaxpr of such an equation (``kind="region"``), a name scope (``kind="scope"``) or
    a call of the user's (``kind="call"``, ``source`` its call site).

    ``size`` counts the leaf nodes inside, at any depth. ``backward`` marks a scope
    of the backward pass (under a ``transpose`` transform), nested scopes included.
    ``lines`` is ``(file, first, last)``: the source lines of the equations inside,
    in the file that holds most of them (None when none has a source line).
    ``function`` names the Python function traced into the group's nested jaxpr(s).
    ``origin`` says whose code the group is: ``ORIGIN_USER`` (0), the user's own;
    ``ORIGIN_LIBRARY_CALL`` (1), a library function the user's code calls
    (``self.head``, ``optimizer.update``); ``ORIGIN_LIBRARY`` (2), inside a library
    or JAX itself (``jit _where``, the ``jit _take`` under optax's loss).
    """

    id: str
    kind: str
    label: str
    parent: str | None
    size: int
    primitive: str = ""
    path: tuple[int, ...] = ()
    inputs: tuple[tuple[str, str], ...] = ()
    outputs: tuple[tuple[str, str], ...] = ()
    params: dict[str, str] = field(default_factory=dict)
    source: SourceLoc | None = None
    scope: str = ""
    backward: bool = False
    lines: tuple[str, int, int] | None = None
    function: str = ""
    origin: int = 0


ORIGIN_USER = 0
ORIGIN_LIBRARY_CALL = 1
ORIGIN_LIBRARY = 2


@dataclass(frozen=True, slots=True)
class GraphModel:
    """The graph of one jaxpr: ``nodes``, ``edges`` and ``groups`` (parents before children)."""

    title: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    groups: list[GraphGroup]
    # shown file ("In [3]") -> the file name Python compiled it under (JaxprModel's)
    raw_files: dict[str, str] = field(default_factory=dict)
