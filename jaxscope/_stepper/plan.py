"""The stepper's plan of a program: every (nested) jaxpr, its equations and names.

Built lazily so that ``js.step(f)(x).run()`` costs little more than running: a
``Plan`` makes its ``Node`` list on first use, a node its ``EqnInfo`` (source line,
params, names) only when something shows or checks it, and nested plans only when
the interpreter enters them. Paths, variable names and ``EqnInfo`` records are those
of ``js.jaxpr`` on the same call (a test checks every equation of every program).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from jaxscope._jaxpr.builder import EqnBuilder, letter_name
from jaxscope._jaxpr.builder import arg_names as jaxpr_arg_names
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import source as _csource
from jaxscope.compat import stepper as _cs


class Program:
    """What every plan of one program shares: its variable names (``{id(var):
    name}``, made on first use in ``js.jaxpr``'s order) and the ``EqnInfo`` builder."""

    def __init__(
        self, defined_at: SourceLoc | None = None, input_names: Sequence[str] = ()
    ) -> None:
        self.top: Plan | None = None
        self.defined_at = defined_at
        #: the user's name of each top-level input (``Staged.input_names``)
        self.input_names = tuple(input_names)
        #: ``{id(plan): PlanNames}``, filled by ``names.user_names_of``.
        self.user_names: dict[int, Any] = {}
        self._names: dict[int, str] | None = None
        self._builder: EqnBuilder | None = None
        self._primitives: dict[Any, str] = {}
        self._eqns: list[EqnInfo] | None = None
        self._present: list[str] | None = None
        self._context: Any = None

    @property
    def context(self) -> Any:
        """The default equation context, made once (see ``compat.stepper.binder``)."""
        if self._context is None:
            self._context = (_cs.default_context(),)
        return self._context[0]

    @property
    def eqns(self) -> list[EqnInfo]:
        """Every equation, depth-first (``js.jaxpr(f)(...).eqns``), made at first use."""
        if self._eqns is None:
            assert self.top is not None
            self._eqns = [node.info for node in iter_nodes(self.top)]
        return self._eqns

    @property
    def primitives(self) -> list[str]:
        """The primitives the program holds, sorted (no ``EqnInfo`` needed)."""
        if self._present is None:
            assert self.top is not None
            self._present = sorted({node.primitive for node in iter_nodes(self.top)})
        return self._present

    @property
    def names(self) -> dict[int, str]:
        if self._names is None:
            assert self.top is not None
            self._names = _name_program(self.top.jaxpr)
        return self._names

    @property
    def builder(self) -> EqnBuilder:
        if self._builder is None:
            self._builder = EqnBuilder(self.names)
        return self._builder

    def primitive(self, eqn: Any) -> str:
        prim = eqn.primitive
        name = self._primitives.get(prim)
        if name is None:
            name = self._primitives[prim] = _cj.primitive_name(eqn)
        return name


def _name_program(jaxpr: Any) -> dict[int, str]:
    """``{id(var): name}``: ``a, b, ...`` in order of first appearance, depth-first,
    as ``js.jaxpr``'s model names them (outputs nothing reads are not named)."""
    names: dict[int, str] = {}
    is_literal, is_dropvar = _cj.is_literal, _cj.is_dropvar

    def name(var: Any) -> None:
        if id(var) not in names:
            names[id(var)] = letter_name(len(names))

    def walk(jaxpr: Any) -> None:
        for var in (*jaxpr.constvars, *jaxpr.invars):
            name(var)
        used = {id(v) for v in jaxpr.outvars}
        for eqn in jaxpr.eqns:
            used.update(map(id, eqn.invars))
        for eqn in jaxpr.eqns:
            for var in eqn.invars:
                if not is_literal(var):
                    name(var)
            for var in eqn.outvars:
                if id(var) in used and not is_dropvar(var):
                    name(var)
            for _, sub in _cj.subjaxprs(eqn):
                walk(_cj.open_jaxpr(sub)[0])
        for var in jaxpr.outvars:
            if not is_literal(var):
                name(var)

    walk(jaxpr)
    return names


class Node:
    """One equation of one (nested) jaxpr: how to run it, and its ``EqnInfo``.

    ``line_start`` is whether it is the first equation of a run of equations from
    one source line (where line breakpoints stop).
    """

    __slots__ = (
        "_info",
        "_line_start",
        "_raw_file",
        "_run",
        "_subs",
        "eqn",
        "index",
        "invars",
        "outvars",
        "plan",
        "primitive",
    )

    def __init__(self, eqn: Any, plan: Plan, index: int, primitive: str):
        self.eqn = eqn
        self.plan = plan
        self.index = index
        self.primitive = primitive
        self.invars = eqn.invars
        self.outvars = eqn.outvars
        self._info: EqnInfo | None = None
        self._subs: dict[str, Plan] | None = None
        self._line_start: bool | None = None
        self._run: Callable[[Sequence[Any]], list[Any]] | None = None
        self._raw_file: str | None = None

    @property
    def path(self) -> tuple[int, ...]:
        return (*self.plan.path, self.index)

    @property
    def subs(self) -> dict[str, Plan]:
        """The nested jaxprs, by param label (``"jaxpr"``, ``"branches[1]"``)."""
        if self._subs is None:
            subs: dict[str, Plan] = {}
            for j, (label, sub) in enumerate(_cj.subjaxprs(self.eqn)):
                jaxpr, consts = _cj.open_jaxpr(sub)
                subs[label] = Plan(
                    jaxpr, consts, self.plan.program, (*self.path, j), label, self
                )
            self._subs = subs
        return self._subs

    @property
    def info(self) -> EqnInfo:
        """The equation as ``js.jaxpr`` describes it (made at first use)."""
        if self._info is None:
            self._info = self.plan.eqn_info(self)
        return self._info

    @property
    def line_start(self) -> bool:
        """Whether this equation starts a run of its source line: the equation
        before it (or, first in a nested jaxpr, the equation holding it) is on
        another line. A library's jit on the line is part of the line's run; each
        iteration of a loop whose body is the user's function (a lambda on the
        line too) is a run of its own."""
        if self._line_start is None:
            source = self.info.source
            call = self.plan.call
            if self.index:
                previous = self.plan.nodes[self.index - 1].info.source
            else:
                previous = call.info.source if call is not None else None
            self._line_start = source is not None and (
                previous is None
                or previous.key != source.key
                or (
                    not self.index
                    and call is not None
                    and call.primitive in _LOOPS
                    and _runs_own_function(self, call)
                )
            )
        return self._line_start

    def runner(self) -> Callable[[Sequence[Any]], list[Any]]:
        """The function running this equation on concrete inputs (made at first use)."""
        if self._run is None:
            self._run = _cs.binder(self.eqn, self.plan.program.context)
        return self._run

    def raw_file(self) -> str | None:
        """The file name Python compiled this equation's source line under."""
        if self._raw_file is None:
            raw = _csource.innermost_user_frame(_csource.eqn_traceback(self.eqn))
            self._raw_file = raw.file if raw is not None else ""
        return self._raw_file or None


_LOOPS = frozenset(("scan", "while"))


def _innermost_frame(node: Node) -> _csource.RawFrame | None:
    frames = _csource.frames_of(_csource.eqn_traceback(node.eqn))
    return frames[0] if frames else None


def _runs_own_function(node: Node, call: Node) -> bool:
    """Whether ``node`` (first in a loop body) runs in a function of the user's own
    other than the one making the loop: the body is the user's, not a library's."""
    inner, outer = _innermost_frame(node), _innermost_frame(call)
    if inner is None or _csource.is_library_file(inner.file):
        return False
    return outer is None or (inner.file, inner.function) != (outer.file, outer.function)


def arg_names(plan: Plan) -> tuple[str, ...]:
    """The names of ``plan``'s inputs: the staged call's for the top jaxpr (where
    there is one per input), else JAX's own."""
    staged = plan.program.input_names if plan is plan.program.top else ()
    return jaxpr_arg_names(plan.jaxpr, staged) or ()


class Plan:
    """A (nested) jaxpr: binders, consts and (made at first use) its nodes.

    ``path`` is the prefix of its equations' paths, ``label`` the param holding it
    (``""`` for the top jaxpr), ``call`` the node whose equation holds it.
    """

    __slots__ = (
        "_nodes",
        "_used",
        "call",
        "consts",
        "constvars",
        "invars",
        "jaxpr",
        "label",
        "outvars",
        "path",
        "program",
    )

    def __init__(
        self,
        jaxpr: Any,
        consts: list[Any],
        program: Program,
        path: tuple[int, ...] = (),
        label: str = "",
        call: Node | None = None,
    ):
        self.jaxpr = jaxpr
        self.consts = consts
        self.program = program
        self.path = path
        self.label = label
        self.call = call
        self.constvars = jaxpr.constvars
        self.invars = jaxpr.invars
        self.outvars = jaxpr.outvars
        self._nodes: list[Node] | None = None
        self._used: set[int] | None = None
        if program.top is None:
            program.top = self

    @property
    def depth(self) -> int:
        return len(self.path) // 2

    @property
    def nodes(self) -> list[Node]:
        if self._nodes is None:
            primitive = self.program.primitive
            self._nodes = [
                Node(eqn, self, k, primitive(eqn))
                for k, eqn in enumerate(self.jaxpr.eqns)
            ]
        return self._nodes

    def eqn_info(self, node: Node) -> EqnInfo:
        """``node``'s ``EqnInfo``, equal to the one ``js.jaxpr``'s model makes."""
        b = self.program.builder
        used = self._used
        if used is None:
            used = {id(v) for v in self.outvars}
            for other in self.jaxpr.eqns:
                used.update(map(id, other.invars))
            self._used = used
        enclosing = self.call.info.source if self.call is not None else None
        subs = b.subjaxprs(node.eqn)
        return b.eqn_info(node.eqn, node.path, self.label, used, enclosing, subs)

    def name(self, var: Any) -> str:
        """The variable's name in ``js.jaxpr``'s listing (``_`` when nothing reads it)."""
        return self.program.names.get(id(var), "_")


def first_source(plan: Plan) -> SourceLoc | None:
    """The source line of the first equation (depth-first) that has one."""
    for node in iter_nodes(plan):
        if node.info.source is not None:
            return node.info.source
    return None


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
