"""The inputs and output of the message/hint builders: ``Facts`` (what is known about
the error) and ``Explanation`` (its message, its hint, and new context lines)."""

from __future__ import annotations

import types
from dataclasses import dataclass

from jaxscope._explain.axes import UnboundAxis
from jaxscope._explain.capture import Capture
from jaxscope._explain.donation import Deleted
from jaxscope._explain.library_hints import NO_LIBRARY_FACTS, LibraryFacts
from jaxscope._explain.messages import Tracing
from jaxscope._explain.report import ErrorKind, Operand
from jaxscope._explain.sharded import NO_SHARDING_FACTS, ShardingFacts
from jaxscope._explain.site import Site
from jaxscope._explain.wrappers import FieldFix
from jaxscope._records import SourceLoc


@dataclass(frozen=True, slots=True, kw_only=True)
class Facts:
    """What is known about the error when its message and hint are written.

    Attributes:
        kind: the error's kind.
        text: JAX's message, cleaned (rewritten for a NaN found by stepping).
        site: the failing expression in the user's source.
        tracing: what JAX's message says about the trace.
        code: the code object of the traced function, if found on the stack.
        operands: the failing expression's operands.
        user_frame: the user's line the report points at.
        context: the JAX-level facts gathered so far.
        wrapper: the library wrapper the traced function went through
            (``"nnx.jit"``, ``"eqx.filter_jit"``; "" for JAX's own).
        fields: the Module fields behind the arguments a value depends on.
        deleted: the deleted array the failing line uses, and where it went.
        axis: the unbound axis name of a collective and the vmap that should bind it.
        capture: the NNX object a traced function captured from outside its trace.
        library: what the library and parallel-code hints need.
        sharding: the operands' layouts over the mesh, for a sharding error.
        statics: the arguments (their top-level names) that were Python values at the
            call, which ``static_argnums`` could take.
        unhashable: those that were Python values in a container static arguments
            cannot hash (a dict, a list); any other argument is an array.
    """

    kind: ErrorKind
    text: str
    site: Site
    tracing: Tracing
    code: types.CodeType | None
    operands: tuple[Operand, ...]
    user_frame: SourceLoc | None
    context: tuple[str, ...]
    wrapper: str = ""
    fields: tuple[FieldFix, ...] = ()
    deleted: Deleted | None = None
    axis: UnboundAxis | None = None
    capture: Capture | None = None
    statics: tuple[str, ...] = ()
    unhashable: tuple[str, ...] = ()
    library: LibraryFacts = NO_LIBRARY_FACTS
    sharding: ShardingFacts = NO_SHARDING_FACTS


@dataclass(frozen=True, slots=True)
class Explanation:
    """A report's message and hint, and the JAX-level facts found while writing them
    (to add after ``Facts.context``)."""

    message: str
    hint: str
    extra_context: tuple[str, ...] = ()


def sentence(text: str) -> str:
    """``text`` with its first letter upper-cased."""
    return text[:1].upper() + text[1:]
