"""JAX's exception plumbing: traceback filtering, chained causes, JAX's own files.

Relies on ``jax._src.traceback_util`` (``UnfilteredStackTrace``, ``_simplified_tb_msg``,
``_filtering_mode``) and ``jax._src.source_info_util.JaxStackTraceBeforeTransformation``;
all present, unchanged, in jax 0.9.0 and 0.10.2. Each function degrades to "not found"
rather than failing when a symbol is missing, except where ``require`` says otherwise.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxscope.compat import private, require
from jaxscope.compat.source import is_jax_file as is_jax_file


def _siu() -> Any:
    return private("jax._src.source_info_util", "compat.errors")


def _tbu() -> Any:
    return private("jax._src.traceback_util", "compat.errors")


def before_transformation_cause(exc: BaseException) -> BaseException | None:
    """The ``JaxStackTraceBeforeTransformation`` chained to ``exc``, or None.

    JAX chains it as ``__cause__`` when a transformation (grad of ``while_loop``, ...)
    fails on an equation; its traceback ends at the user's line that made the equation.

    Relies on: ``source_info_util.JaxStackTraceBeforeTransformation``.
    """
    cls = getattr(_siu(), "JaxStackTraceBeforeTransformation", None)
    seen = 0
    cause = exc.__cause__
    while cause is not None and seen < 8:
        if cls is not None and isinstance(cause, cls):
            return cause
        cause = cause.__cause__
        seen += 1
    return None


def unfiltered_cause(exc: BaseException) -> BaseException | None:
    """The ``UnfilteredStackTrace`` JAX chains under ``remove_frames`` filtering, or None.

    Its traceback still holds the frames JAX removed from ``exc``'s own.

    Relies on: ``traceback_util.UnfilteredStackTrace``.
    """
    cls = getattr(_tbu(), "UnfilteredStackTrace", None)
    cause = exc.__cause__
    if cls is not None and isinstance(cause, cls):
        return cause
    return None


def full_tracebacks(exc: BaseException) -> list[Any]:
    """``exc``'s traceback, then that of the ``UnfilteredStackTrace`` JAX chained
    under it (``unfiltered_cause``), which still holds the frames JAX removed."""
    tracebacks: list[Any] = [exc.__traceback__]
    unfiltered = unfiltered_cause(exc)
    if unfiltered is not None:
        tracebacks.append(unfiltered.__traceback__)
    return tracebacks


def is_jax_wrapper_exception(exc: BaseException) -> bool:
    """Whether ``exc`` is one of JAX's traceback carriers rather than a real error.

    Relies on: ``traceback_util.UnfilteredStackTrace`` and
    ``source_info_util.JaxStackTraceBeforeTransformation``.
    """
    classes = tuple(
        c
        for c in (
            getattr(_tbu(), "UnfilteredStackTrace", None),
            getattr(_siu(), "JaxStackTraceBeforeTransformation", None),
        )
        if c is not None
    )
    return bool(classes) and isinstance(exc, classes)


def simplified_traceback_note() -> str:
    """The note JAX adds to an exception whose traceback it filtered ("" if unknown).

    Relies on: ``traceback_util._simplified_tb_msg``.
    """
    return str(getattr(_tbu(), "_simplified_tb_msg", ""))


def jax_notes(exc: BaseException) -> list[str]:
    """The notes JAX added to ``exc`` (``__notes__``) about traceback filtering."""
    note = simplified_traceback_note()
    notes = getattr(exc, "__notes__", None) or []
    return [n for n in notes if isinstance(n, str) and note and note in n]


def filtering_mode() -> str:
    """The effective ``jax_traceback_filtering`` mode ("tracebackhide", "off", ...).

    Relies on: ``traceback_util._filtering_mode``.
    """
    return str(require(_tbu(), "_filtering_mode", "compat.errors.filtering_mode")())


def jax_error_types() -> tuple[type[BaseException], ...]:
    """The typed errors JAX raises (``jax.errors.*`` and the runtime error class).

    Relies on: ``jax.errors`` (public) and ``jaxlib``'s ``XlaRuntimeError`` where
    ``jax.errors.JaxRuntimeError`` is missing.
    """
    names = (
        "JAXTypeError",
        "JAXIndexError",
        "ConcretizationTypeError",
        "NonConcreteBooleanIndexError",
        "TracerArrayConversionError",
        "TracerBoolConversionError",
        "TracerIntegerConversionError",
        "UnexpectedTracerError",
        "KeyReuseError",
        "JaxRuntimeError",
        "InconclusiveDimensionOperation",
    )
    found: list[type[BaseException]] = []
    for name in names:
        cls = getattr(jax.errors, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)
