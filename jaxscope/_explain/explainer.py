"""``js.explain(exc)``: a JAX error rewritten around the user's line, with a concrete fix.

The report is built from what the exception already carries: its traceback (the frames
still hold their locals, so the operands of the failing expression have shapes), JAX's
message (which names the traced function and the arguments a value depends on) and the
``__cause__`` JAX chains for errors raised while transforming an equation. Nothing is
re-run. ``explain`` never raises on an exception: a non-JAX error gets a plain report
(Flax's errors about NNX objects across trace levels are explained like JAX's).

The steps, one module each: ``classify`` (from JAX? which ``ErrorKind``?), ``frames``
(the user's frames), ``site`` (the failing expression in the source), ``wrappers``
(``jax.jit``, ``nnx.jit`` or ``eqx.filter_jit``? Equinox's paths in the user's names),
``operands`` (their shapes and origins), ``nan`` (where a NaN came from), ``donation``,
``axes`` and ``capture`` (a deleted array, an unbound axis name, a captured NNX
object), ``context`` (JAX-level facts) and ``hints`` / ``transfer_hints`` (message and
fix, from ``facts``); ``report`` holds the records.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
import types
from dataclasses import dataclass

from jaxscope._exceptions import InvalidCallError, JaxscopeError
from jaxscope._explain.axes import unbound_axis
from jaxscope._explain.capture import captured_object
from jaxscope._explain.classify import error_kind, is_jax_error, raised_by_jax
from jaxscope._explain.context import message_context, probed_context
from jaxscope._explain.donation import deleted_operand
from jaxscope._explain.evaluate import MISSING, eval_callee
from jaxscope._explain.frames import (
    Entry,
    entries,
    loc,
    raw_filename,
    shown_frames,
    traced_code,
    user_entries,
)
from jaxscope._explain.hints import Facts, explanation
from jaxscope._explain.known import untraceable_path
from jaxscope._explain.library_hints import library_facts
from jaxscope._explain.messages import (
    Tracing,
    clean_message,
    docs_link,
    first_line,
    full_traceback,
    safe_str,
    tracing_of,
    without_docs,
)
from jaxscope._explain.nan import NanOrigin, nan_origin
from jaxscope._explain.operands import operand_nodes, operands
from jaxscope._explain.report import ErrorKind, ErrorReport, Operand, relativize
from jaxscope._explain.sharded import NO_SHARDING_FACTS, sharding_facts
from jaxscope._explain.sharding_hints import is_unknown_collective_axis
from jaxscope._explain.site import NO_SITE, Site, site_at, source_lines
from jaxscope._explain.wrappers import (
    FieldFix,
    argument_value,
    equinox_arguments,
    field_fix,
    wrapper_in_frames,
)
from jaxscope._format import short_repr
from jaxscope._records import SourceLoc
from jaxscope._staging import may_be_static, python_values
from jaxscope.compat import errors as _cerrors

__all__ = [
    "ErrorKind",
    "ErrorReport",
    "Operand",
    "explain",
    "is_jax_error",
    "relativize",
]

_USAGE = "pass the caught exception, e.g. `except Exception as e: js.explain(e)`"
# Kinds only a JAX (or XLA) error has, whatever its traceback looks like.
_ALWAYS_JAX = frozenset({ErrorKind.NAN, ErrorKind.OUT_OF_MEMORY, ErrorKind.RUNTIME})
# Kinds read off the message that, raised while transforming, are about the transform.
_TRANSFORM_KINDS = frozenset({ErrorKind.JAX_OTHER, ErrorKind.SHAPE, ErrorKind.DTYPE})
# Kinds whose failing expression's operands are worth showing.
_OPERAND_KINDS = frozenset(
    {
        ErrorKind.SHAPE,
        ErrorKind.DTYPE,
        ErrorKind.TRANSFORMATION,
        ErrorKind.JAX_OTHER,
        ErrorKind.BOOL_INDEX,
        ErrorKind.STRUCTURE,
        ErrorKind.SHARDING,
    }
)
_MAX_CAUSES = 8


def explain(exc: BaseException | None = None) -> ErrorReport:
    """Explain a JAX error: the user's line, what it means and a concrete fix.

    Args:
        exc: the exception (``except Exception as e: js.explain(e)``). Omitted: the
            last exception IPython or the interpreter showed (``sys.last_value``), or
            the one being handled.

    Returns:
        An ``ErrorReport``; for an exception JAX did not raise, a plain report
        (``category == "not_jax"``, no hint). Never raises for an exception.

    Raises:
        InvalidCallError: ``exc`` is not an exception (or omitted with none to explain).

    Example:
        >>> import jax, jaxscope as js
        >>> def relu(x):
        ...     return x if x > 0 else 0.0
        >>> try:
        ...     jax.jit(relu)(1.0)
        ... except Exception as e:
        ...     report = js.explain(e)
        >>> report.kind
        'TracerBoolConversionError'
    """
    exc = _checked(exc)
    if isinstance(exc, JaxscopeError) and exc.__cause__ is not None:
        exc = exc.__cause__
    exc = _jax_error_in_chain(exc)
    try:
        return _explain(exc)
    except Exception:  # explaining must never fail: fall back to a plain report
        return _plain(exc)


def _checked(exc: object) -> BaseException:
    """``exc`` if it is an exception; the last one raised when it is None."""
    if exc is None:
        exc = getattr(sys, "last_value", None) or sys.exc_info()[1]
        if exc is None:
            raise InvalidCallError(
                "js.explain() found no exception to explain; pass one, e.g. "
                "`except Exception as e: js.explain(e)`"
            )
    if isinstance(exc, type) and issubclass(exc, BaseException):
        raise InvalidCallError(
            f"js.explain expects an exception instance, got the class {exc.__name__}; "
            + _USAGE
        )
    if not isinstance(exc, BaseException):
        raise InvalidCallError(
            f"js.explain expects an exception, got {type(exc).__name__} "
            f"{short_repr(exc, 40)}; " + _USAGE
        )
    return exc


def _jax_error_in_chain(exc: BaseException) -> BaseException:
    """``exc``, or the JAX error it was raised from (``raise X from jax_error``)."""
    try:
        if is_jax_error(exc):
            return exc
        seen = {id(exc)}
        # Only explicit chaining: an error raised while *handling* a JAX error is its own.
        cause = exc.__cause__
        while cause is not None and id(cause) not in seen and len(seen) < _MAX_CAUSES:
            seen.add(id(cause))
            if not _cerrors.is_jax_wrapper_exception(cause) and is_jax_error(cause):
                return cause
            cause = cause.__cause__
    except Exception:
        pass
    return exc


def _plain(exc: BaseException) -> ErrorReport:
    """A report of what any exception has: its message and its user frames."""
    try:
        message = first_line(clean_message(exc))
    except Exception:
        message = ""
    user_frame = None
    frames: list[SourceLoc] = []
    try:
        users, inner = user_entries(entries(exc.__traceback__))
        frames = shown_frames(users)
        user_frame = loc(inner) if inner is not None else None
    except Exception:
        pass
    return ErrorReport(
        kind=type(exc).__name__,
        message=message,
        user_frame=user_frame,
        frames=frames,
        traceback=full_traceback(exc),
        original_message=safe_str(exc),
    )


@dataclass(frozen=True, slots=True)
class _Where:
    """The user's line a report points at, and what the source says around it."""

    user_frame: SourceLoc | None
    source_lines: tuple[tuple[int, str], ...]
    span: tuple[int, int] | None
    site: Site


def _where(inner: Entry | None) -> _Where:
    if inner is None:
        return _Where(None, (), None, NO_SITE)
    span = None
    if inner.col is not None and inner.end_col is not None:
        span = (inner.col, inner.end_col)
    return _Where(
        loc(inner),
        source_lines(inner.filename, inner.line),
        span,
        site_at(inner.filename, inner.line, inner.col, inner.end_col),
    )


def _at_nan_origin(where: _Where, origin: NanOrigin, found: list[Entry]) -> _Where:
    """``where`` moved to the line of the equation that produced the NaN."""
    user_frame = origin.source
    raw = raw_filename(user_frame.file, found)
    site = where.site
    if raw is not None and user_frame.column is not None:
        site = site_at(raw, user_frame.line, user_frame.column, None)
    lines = source_lines(raw, user_frame.line) if raw else ()
    return _Where(user_frame, lines, None, site)


def _user_code(
    exc: BaseException, found: list[Entry], kind: ErrorKind
) -> tuple[list[Entry], Entry | None, ErrorKind]:
    """The user entries, the innermost one, and the kind: for an error raised while
    JAX transformed an equation, the user's code is the equation's, and the error is
    about the transformation."""
    before = _cerrors.before_transformation_cause(exc)
    if before is not None and before.__traceback__ is not None:
        users, inner = user_entries(entries(before.__traceback__))
        if inner is not None:
            if kind in _TRANSFORM_KINDS:
                kind = ErrorKind.TRANSFORMATION
            return users, inner, kind
    users, inner = user_entries(found)
    return users, inner, kind


@dataclass(frozen=True, slots=True)
class _Traced:
    """What JAX's message says about the trace, in the user's names, with the code of
    the traced function and the wrapper the user traced it with."""

    tracing: Tracing
    code: types.CodeType | None
    wrapper: str
    fields: tuple[FieldFix, ...]
    statics: tuple[str, ...] = ()
    unhashable: tuple[str, ...] = ()


def _traced(found: list[Entry], text: str) -> _Traced:
    tracing = tracing_of(text)
    code = traced_code(found, tracing.function, tracing.file, tracing.line)
    wrapper = wrapper_in_frames(found, code, tracing.transform)
    frame = next((e.frame for e in reversed(found) if e.frame.f_code is code), None)
    if wrapper == "eqx.filter_jit" and code is not None:
        # JAX names Equinox's inner function and its argument paths.
        tracing = dataclasses.replace(
            tracing,
            file=code.co_filename,
            line=code.co_firstlineno,
            arguments=equinox_arguments(tracing.arguments, code, frame),
        )
    fields: list[FieldFix] = []
    statics: list[str] = []
    unhashable: list[str] = []
    if frame is not None:
        for arg in tracing.arguments:
            base = re.split(r"[\[.]", arg, maxsplit=1)[0]
            value = frame.f_locals.get(base, MISSING)
            fix = field_fix(arg, value)
            if fix is not None:
                fields.append(fix)
            if value is MISSING or base in statics + unhashable:
                continue
            if may_be_static(value):
                statics.append(base)
            elif python_values(value):
                unhashable.append(base)
    return _Traced(
        tracing, code, wrapper, tuple(fields), tuple(statics), tuple(unhashable)
    )


def _untraceable_fields(
    text: str, inner: Entry | None, site: Site
) -> tuple[FieldFix, ...]:
    """The Module field behind the path of an argument jit could not trace, read from
    the failing call's arguments."""
    path = untraceable_path(first_line(text))
    if not path or inner is None or not isinstance(site.node, ast.Call):
        return ()
    callee = eval_callee(site.node.func, inner.frame)
    base = re.split(r"[\[.]", path, maxsplit=1)[0]
    value = argument_value(site.node, inner.frame, callee, base)
    fix = field_fix(path, value) if value is not MISSING else None
    return (fix,) if fix is not None else ()


def _explain(exc: BaseException) -> ErrorReport:
    found = entries(exc.__traceback__)
    is_jax = raised_by_jax(exc, found)
    text = clean_message(exc)
    kind = error_kind(exc, text, is_jax)
    is_jax = is_jax or kind in _ALWAYS_JAX
    users, inner, kind = _user_code(exc, found, kind)
    jax_message = without_docs(first_line(text)) if kind != ErrorKind.NOT_JAX else ""
    where = _where(inner)
    if kind == ErrorKind.JAX_OTHER and is_unknown_collective_axis(exc, where.site):
        kind = ErrorKind.SHARDING
    origin = None
    if kind == ErrorKind.NAN and inner is not None:
        origin = nan_origin(text, inner, where.site)
        if origin is not None:
            where = _at_nan_origin(where, origin, found)
            text = origin.rewrite(text)
    traced = _traced(found, text)
    tracing = traced.tracing
    shown: tuple[Operand, ...] = ()
    if inner is not None and kind in _OPERAND_KINDS:
        shown = operands(inner, where.site)
    context = message_context(text, kind, tracing, shown)
    context += probed_context(exc, kind, is_jax, text, inner, where.site)
    if origin is not None:
        context += origin.context()
    explained = explanation(
        Facts(
            kind=kind,
            text=text,
            site=where.site,
            tracing=tracing,
            code=traced.code,
            operands=shown,
            user_frame=where.user_frame,
            context=context,
            wrapper=traced.wrapper,
            fields=traced.fields + _untraceable_fields(text, inner, where.site),
            deleted=(
                deleted_operand(inner, where.site)
                if kind == ErrorKind.DONATED and inner is not None
                else None
            ),
            axis=(
                unbound_axis(text, found, users)
                if kind == ErrorKind.UNBOUND_AXIS
                else None
            ),
            capture=captured_object(found) if kind == ErrorKind.TRACE_LEVEL else None,
            statics=traced.statics,
            unhashable=traced.unhashable,
            library=library_facts(exc, users, inner, where.site),
            sharding=(
                sharding_facts(inner.frame, where.site, operand_nodes(where.site.node))
                if kind == ErrorKind.SHARDING and inner is not None
                else NO_SHARDING_FACTS
            ),
        )
    )
    frames = shown_frames(users)
    if origin is not None and (not frames or frames[-1] != where.user_frame):
        frames.append(origin.source)
    return ErrorReport(
        kind=type(exc).__name__,
        message=explained.message,
        user_frame=where.user_frame,
        frames=frames,
        hint=explained.hint,
        category=kind,
        is_jax=is_jax,
        traced_function=tracing.function,
        transform=tracing.transform,
        arguments=tracing.arguments,
        operands=shown,
        jax_context=context + explained.extra_context,
        source_lines=where.source_lines,
        span=where.span,
        traceback=full_traceback(exc),
        original_message=safe_str(exc),
        jax_message=jax_message,
        docs=docs_link(safe_str(exc)) if kind != ErrorKind.NOT_JAX else "",
    )
