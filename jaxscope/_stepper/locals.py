# pyright: strict
"""The user's variables as the traced Python bound them, read while the program traces.

While ``js.step`` traces the function, a line tracer (``sys.settrace``, only where no
other tracer is set) takes, at each line and return of every frame of the user's
own files, the pytree structure of each local variable and the jaxpr variable each
array leaf stands for, with where the trace was then (``trace_epoch``: the last
equations traced). Nothing of the user's program changes: the tracer reads locals
and returns.

At a pause, the names of a Python frame are those of its latest snapshot taken
before the paused equation (its epoch equations have run), each leaf read from the
interpreter's values: ``logits`` after ``logits = predict(params, x)``, ``grads`` a
pytree after ``loss, grads = jax.value_and_grad(...)(...)``, as pdb would show them.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import jax

from jaxscope._source import is_library_file, is_user_file
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import stepper as _cs

#: Locals never read: functions, modules, classes.
_SKIPPED = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type)
#: Leaves kept as they are (a Python scalar an argument or loop counter holds).
_SCALARS = (bool, int, float, complex, str)


@dataclass(frozen=True, slots=True)
class Binding:
    """One local variable: its pytree structure and, per leaf, a jaxpr variable (or
    literal) or a Python scalar (``const``)."""

    treedef: Any
    atoms: tuple[Any, ...]
    consts: tuple[Any, ...]


@dataclass(slots=True)
class Snapshot:
    """The locals of one Python frame at one line (before it ran) or at its return."""

    order: int
    line: int
    event: str
    epoch: tuple[Any, ...]
    names: dict[str, Binding]


@dataclass(slots=True)
class LocalsLog:
    """Every snapshot, by frame: ``{(raw file, qualified name): [snapshots]}``."""

    frames: dict[tuple[str, str], list[Snapshot]] = field(default_factory=lambda: {})
    count: int = 0
    #: ``{id(value): (value, its binding)}`` while tracing: a local unchanged since
    #: the last line is not flattened again (the value is held so its id stays its)
    seen: dict[int, tuple[Any, Binding | None]] = field(default_factory=lambda: {})

    def add(self, key: tuple[str, str], snapshot: Snapshot) -> None:
        self.frames.setdefault(key, []).append(snapshot)
        self.count += 1


@functools.lru_cache(maxsize=4096)
def _records(filename: str) -> bool:
    # "<frozen abc>", "<string>" (dataclass methods) are Python's; a terminal
    # IPython cell is "<ipython-input-3-...>"
    if filename.startswith("<") and not filename.startswith("<ipython-input"):
        return False
    return is_user_file(filename) and not is_library_file(filename)


def _binding(value: Any) -> Binding | None:
    treedef: Any
    try:
        leaves, treedef = jax.tree_util.tree_flatten(value)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    except Exception:
        return None
    atoms: list[Any] = []
    consts: list[Any] = []
    for leaf in leaves:
        atom = _cs.traced_atom(leaf)
        if atom is not None:
            atoms.append(atom)
            consts.append(None)
        elif isinstance(leaf, _SCALARS):
            atoms.append(None)
            consts.append(leaf)
        else:
            return None  # a concrete array: not the program's, and not kept alive
    return Binding(treedef, tuple(atoms), tuple(consts))


def _snapshot(log: LocalsLog, frame: FrameType, event: str) -> None:
    names: dict[str, Binding] = {}
    for name, value in frame.f_locals.items():
        if name.startswith("__") or isinstance(value, _SKIPPED):
            continue
        known = log.seen.get(id(value))
        if known is not None and known[0] is value:
            binding = known[1]
        else:
            binding = _binding(value)
            log.seen[id(value)] = (value, binding)
        if binding is not None:
            names[name] = binding
    code = frame.f_code
    key = (code.co_filename, getattr(code, "co_qualname", code.co_name))
    log.add(key, Snapshot(log.count, frame.f_lineno, event, _cs.trace_epoch(2), names))


@contextmanager
def record_locals(log: LocalsLog) -> Iterator[LocalsLog]:
    """Record the user's locals into ``log`` while the body traces (see the module
    docstring); records nothing where another tracer (a debugger, coverage) is set."""
    if sys.gettrace() is not None:
        yield log
        return
    records: dict[CodeType, bool] = {}

    def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event in ("line", "return"):
            # a snapshot less, never a failure of the user's program
            with contextlib.suppress(Exception):
                _snapshot(log, frame, event)
        return local

    def on_call(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        # called at every Python call while tracing (sys.settrace is per thread):
        # one dict look-up decides
        code: CodeType = frame.f_code
        wanted = records.get(code)
        if wanted is None:
            wanted = records[code] = _records(code.co_filename)
        return local if wanted else None

    sys.settrace(on_call)
    try:
        yield log
    finally:
        sys.settrace(None)
        log.seen.clear()  # the tracers: nothing of the trace is kept


def is_defined(atom: Any, env: Callable[[Any], bool]) -> bool:
    """Whether ``atom`` (a variable) has a value now, or is a literal."""
    return _cj.is_literal(atom) or env(atom)


def latest(
    snapshots: list[Snapshot],
    ran: Callable[[Any], bool],
    exists: Callable[[Any], bool],
) -> Snapshot | None:
    """The latest snapshot taken before the paused equation: the newest whose epoch
    equation (the last one traced before it that the program kept, ``exists``) has
    run (``ran(var)``), or, with no epoch, whose variables all have values."""
    for snapshot in reversed(snapshots):
        epoch = [var for var in snapshot.epoch if exists(var)]
        if epoch:
            if ran(epoch[0]):
                return snapshot
            continue
        atoms = [a for b in snapshot.names.values() for a in b.atoms if a is not None]
        if all(ran(a) or _cj.is_literal(a) for a in atoms):
            return snapshot
    return None


def value_of(binding: Binding, read: Callable[[Any], Any]) -> Any:
    """The binding's value with its leaves read (``read(atom)``); raises KeyError
    when a leaf has no value now."""
    leaves = [
        const if atom is None else read(atom)
        for atom, const in zip(binding.atoms, binding.consts, strict=True)
    ]
    return jax.tree_util.tree_unflatten(binding.treedef, leaves)  # pyright: ignore[reportUnknownMemberType]


def leaf_names(name: str, binding: Binding) -> list[str]:
    """The user's name of each leaf: ``grads[0]['b']``; ``name`` for a bare array."""
    n = len(binding.atoms)
    if n == 1 and binding.treedef.num_nodes == 1:
        return [name]
    skeleton = jax.tree_util.tree_unflatten(binding.treedef, list(range(n)))  # pyright: ignore[reportUnknownMemberType]
    paths = jax.tree_util.tree_flatten_with_path(skeleton)[0]  # pyright: ignore
    return [name + jax.tree_util.keystr(path) for path, _ in paths]  # pyright: ignore


class _Mismatch(Exception):
    """Two traces of one call that are not the same program."""


def same_vars(first: Any, second: Any) -> dict[Any, Any] | None:
    """``{variable of second: variable of first}`` for two traces of one call (two
    ``ClosedJaxpr``s), walked side by side, nested jaxprs included; None where the
    two programs differ (a trace that depends on state that changed between them)."""
    mapping: dict[Any, Any] = {}

    def pair(a: list[Any], b: list[Any]) -> None:
        if len(a) != len(b):
            raise _Mismatch
        for va, vb in zip(a, b, strict=True):
            if not _cj.is_literal(vb):
                mapping[vb] = va

    def walk(a: Any, b: Any) -> None:
        ja, jb = _cj.open_jaxpr(a)[0], _cj.open_jaxpr(b)[0]
        if len(ja.eqns) != len(jb.eqns):
            raise _Mismatch
        pair([*ja.constvars, *ja.invars], [*jb.constvars, *jb.invars])
        for ea, eb in zip(ja.eqns, jb.eqns, strict=True):
            if _cj.primitive_name(ea) != _cj.primitive_name(eb):
                raise _Mismatch
            pair(list(ea.outvars), list(eb.outvars))
            subs_a, subs_b = _cj.subjaxprs(ea), _cj.subjaxprs(eb)
            if len(subs_a) != len(subs_b):
                raise _Mismatch
            for (_, sa), (_, sb) in zip(subs_a, subs_b, strict=True):
                walk(sa, sb)

    try:
        walk(first, second)
    except _Mismatch:
        return None
    return mapping


def renamed(log: LocalsLog, mapping: dict[Any, Any]) -> LocalsLog:
    """``log`` with its jaxpr variables replaced by ``mapping``'s (see ``same_vars``);
    a variable it lacks (of a trace the program dropped) stays, and reads as unset."""

    def var(atom: Any) -> Any:
        if atom is None or _cj.is_literal(atom):
            return atom
        return mapping.get(atom, atom)

    out = LocalsLog(count=log.count)
    for key, snapshots in log.frames.items():
        out.frames[key] = [
            Snapshot(
                s.order,
                s.line,
                s.event,
                tuple(var(v) for v in s.epoch),
                {
                    name: Binding(b.treedef, tuple(var(a) for a in b.atoms), b.consts)
                    for name, b in s.names.items()
                },
            )
            for s in snapshots
        ]
    return out
