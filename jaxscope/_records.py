"""Records shared by every feature: plain, frozen data that never holds a live array."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from jaxscope._paths import short_path

_Record = TypeVar("_Record")
_NO_DEFAULT: Any = dataclasses.MISSING


def fast_init(cls: type[_Record]) -> type[_Record]:
    """Give a frozen, slotted, keyword-only dataclass an ``__init__`` that sets each
    slot through its own descriptor: the one ``dataclass`` writes goes through
    ``object.__setattr__`` per field, about 3x slower, and views build one record
    per equation. Signature, defaults and behaviour are unchanged."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if not (all(f.kw_only for f in fields) and cls.__dataclass_params__.frozen):  # type: ignore[attr-defined]
        raise TypeError(f"fast_init: {cls.__name__} is not a frozen kw_only dataclass")
    namespace: dict[str, Any] = {"_NO_DEFAULT": _NO_DEFAULT}
    params, body = [], []
    for f in fields:
        namespace[f"_set_{f.name}"] = getattr(cls, f.name).__set__
        value = f.name
        if f.default is not _NO_DEFAULT:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not _NO_DEFAULT:
            namespace[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NO_DEFAULT")
            value = f"_factory_{f.name}() if {f.name} is _NO_DEFAULT else {f.name}"
        else:
            params.append(f.name)
        body.append(f"    _set_{f.name}(self, {value})")
    source = f"def __init__(self, *, {', '.join(params)}):\n" + "\n".join(body)
    exec(source, namespace)  # source generated from the class's own fields
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[misc]
    return cls


def fill_in(record: _Record, **values: Any) -> _Record:
    """Set fields of a frozen, slotted record in place and return it.

    Only for a record its builder made and has not handed out yet (nothing holds
    it, nor its hash): ``dataclasses.replace`` copies every field (~5 us), and
    builders finish one record per group or node this way."""
    cls = type(record)
    for name, value in values.items():
        getattr(cls, name).__set__(record, value)
    return record


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class SourceLoc:
    """A place in the user's source code.

    ``file`` is the path, or ``"In [N]"`` for code typed in IPython cell N.
    ``str(loc)`` is ``"file:line"`` as every view and message shows it: the file
    shortened by ``jaxscope._paths.short_path`` (relative to the working directory,
    an installed library's from its package); ``file`` keeps the full path.
    """

    file: str
    line: int
    column: int | None = None
    function: str | None = None

    def __str__(self) -> str:
        return f"{short_path(self.file)}:{self.line}"

    @property
    def key(self) -> tuple[str, int]:
        """``(file, line)``: the key of ``by_line`` tables."""
        return (self.file, self.line)


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class EqnInfo:
    """One jaxpr equation, at any nesting level.

    ``path`` locates it: ``(i,)`` is equation ``i`` of the top jaxpr; a nested equation
    appends ``(j, k)``: sub-jaxpr ``j`` of that equation (see ``region``), equation ``k``
    in it. So ``depth == (len(path) - 1) // 2``.
    """

    path: tuple[int, ...]
    depth: int
    primitive: str
    inputs: list[tuple[str, str]]
    outputs: list[tuple[str, str]]
    params: dict[str, str]
    source: SourceLoc | None
    scope: str = ""
    region: str = ""
    n_subjaxprs: int = 0
    # Not compared: the same equation traced from two call sites is the same equation.
    frames: tuple[SourceLoc, ...] = field(default=(), compare=False)
    """Every frame of the call stack that traced it, innermost first, installed
    libraries' included (``source`` is the innermost one in the user's own code)."""
    name_stack: tuple[tuple[str, str], ...] = field(default=(), compare=False)
    """``scope`` as ``("scope" | "transform", name)`` pairs, outermost first (a
    transform applies to the scopes after it): ``transpose(jvp(layer0))`` is
    ``(("transform", "transpose"), ("transform", "jvp"), ("scope", "layer0"))``."""
    printed_params: dict[str, str] | None = field(default=None, compare=False)
    """The params as JAX's own printer shows them (its per-primitive rules: defaults
    dropped, ``name`` first), nested jaxprs as in ``params``; None where JAX's form
    could not be read (displays then show ``params``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OpInfo:
    """One HLO / StableHLO operation; ops inside fusions are listed too."""

    name: str
    opcode: str
    shape: str
    source: SourceLoc | None
    fusion: str | None = None
    op_name: str = ""
    computation: str = ""
    frames: tuple[SourceLoc, ...] = field(default=(), compare=False)
    """The call stack recorded for the op, innermost first, libraries' frames
    included (``source`` is the innermost one in the user's own code)."""
