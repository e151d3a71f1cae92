"""The records of ``js.explain``: ``ErrorKind``, ``Operand`` and ``ErrorReport``.

Plain frozen data built from an exception (strings, numbers and ``SourceLoc``; never a
live array or frame), so a report can be kept, compared and rendered later.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from enum import StrEnum

from jaxscope._display import Renderable
from jaxscope._records import SourceLoc

__all__ = ["ErrorKind", "ErrorReport", "Operand", "relativize"]


class ErrorKind(StrEnum):
    """What kind of error a report explains; each member equals its string value
    (``ErrorKind.SHAPE == "shape"``)."""

    BOOL_CONVERSION = "bool_conversion"
    INT_CONVERSION = "int_conversion"
    ARRAY_CONVERSION = "array_conversion"
    CONCRETIZATION = "concretization"
    BOOL_INDEX = "bool_index"
    SHAPE = "shape"
    DTYPE = "dtype"
    ITEM_ASSIGNMENT = "item_assignment"
    LEAK = "leak"
    NAN = "nan"
    OUT_OF_MEMORY = "out_of_memory"
    RUNTIME = "runtime"
    TRANSFORMATION = "transformation"
    STRUCTURE = "structure"
    STATIC_ARG = "static_arg"
    DONATED = "donated"
    UNBOUND_AXIS = "unbound_axis"
    TRACE_LEVEL = "trace_level"
    SHARDING = "sharding"
    JAX_OTHER = "jax_other"
    NOT_JAX = "not_jax"


@dataclass(frozen=True, slots=True, kw_only=True)
class Operand:
    """One operand of the failing expression: its text, its type and where it came from."""

    expr: str
    aval: str = ""
    origin: str = ""
    origin_loc: SourceLoc | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorReport(Renderable):
    """A JAX error explained: where in the user's code, what it means, how to fix it.

    Attributes:
        kind: the exception class name (``"TracerBoolConversionError"``).
        message: a short plain-text statement of what went wrong.
        user_frame: the innermost user frame (not JAX's, not jaxscope's); ``In [N]``
            for notebook cells. None only when the exception has no user frame.
        frames: the user frames, outermost first.
        hint: a concrete fix in the user's own names ("" when none is known).
        category: a finer kind, an ``ErrorKind`` (equal to its string value,
            e.g. ``"shape"``).
        is_jax: whether the error came from JAX.
        traced_function: the function JAX was tracing, if the message says.
        transform: what it was traced for ("jit", "scan", "vmap", ...), if known.
        arguments: the traced function's arguments the offending value depends on.
        operands: the failing expression's operands, with shapes and origins.
        jax_context: the JAX-level facts (traced value, shapes, primitive), one per line.
        source_lines: ``(line number, text)`` around ``user_frame``.
        span: the failing expression's columns on the user line (0-based, end
            exclusive), or None.
        traceback: the full traceback text.
        original_message: the exception's message as JAX wrote it.
        jax_message: the first line of that message, as the library wrote it (shown
            above ``message`` when that rewrites it); "" for a non-JAX error.
        docs: the documentation link the message gives (docs.jax.dev, Flax's or
            Equinox's documentation), or "".
    """

    kind: str
    message: str
    user_frame: SourceLoc | None
    frames: list[SourceLoc] = field(default_factory=list)
    hint: str = ""
    category: ErrorKind = ErrorKind.NOT_JAX
    is_jax: bool = False
    traced_function: str | None = None
    transform: str | None = None
    arguments: tuple[str, ...] = ()
    operands: tuple[Operand, ...] = ()
    jax_context: tuple[str, ...] = ()
    source_lines: tuple[tuple[int, str], ...] = ()
    span: tuple[int, int] | None = None
    traceback: str = ""
    original_message: str = ""
    jax_message: str = ""
    docs: str = ""

    @property
    def line_text(self) -> str:
        """The text of the user's line ("" if unknown)."""
        if self.user_frame is None:
            return ""
        for number, text in self.source_lines:
            if number == self.user_frame.line:
                return text
        return ""


def relativize(report: ErrorReport, root: str) -> ErrorReport:
    """``report`` with file paths under ``root`` shown relative to it (as pytest does)."""
    prefix = os.path.join(os.path.abspath(root), "")

    def path(text: str) -> str:
        return text.replace(prefix, "")

    def loc(value: SourceLoc | None) -> SourceLoc | None:
        if value is None:
            return None
        return dataclasses.replace(value, file=path(value.file))

    return dataclasses.replace(
        report,
        message=path(report.message),
        hint=path(report.hint),
        user_frame=loc(report.user_frame),
        frames=[loc(f) or f for f in report.frames],
        operands=tuple(
            dataclasses.replace(o, origin=path(o.origin), origin_loc=loc(o.origin_loc))
            for o in report.operands
        ),
        jax_context=tuple(path(c) for c in report.jax_context),
    )
