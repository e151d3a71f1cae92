"""Whether an exception came from JAX, and which ``ErrorKind`` it is."""

from __future__ import annotations

import jax

from jaxscope._explain.axes import UNBOUND
from jaxscope._explain.capture import is_trace_level_error
from jaxscope._explain.frames import Entry, entries, raises_here
from jaxscope._explain.known import known_message
from jaxscope._explain.messages import DEPENDS, NAN_IN, first_line, safe_str
from jaxscope._explain.report import ErrorKind
from jaxscope._explain.sharding_hints import SHARDING_ERRORS, is_sharding_message
from jaxscope.compat import errors as _cerrors
from jaxscope.compat.source import is_jax_file

# First lines of errors JAX raises from C++ or before any JAX frame is on the stack.
_JAX_MESSAGES = (
    "Non-hashable static arguments are not supported",
    "Error interpreting argument to",
)
# Phrases of the errors of a deleted (donated) array: Python's and the runtime's.
_DELETED = ("Array has been deleted", "Buffer has been deleted or donated")
# jax.errors classes, by name (not every JAX release has all of them), most specific
# first: TracerBoolConversionError is a ConcretizationTypeError.
_TYPED_KINDS = (
    ("TracerBoolConversionError", ErrorKind.BOOL_CONVERSION),
    ("TracerIntegerConversionError", ErrorKind.INT_CONVERSION),
    ("TracerArrayConversionError", ErrorKind.ARRAY_CONVERSION),
    ("NonConcreteBooleanIndexError", ErrorKind.BOOL_INDEX),
    ("UnexpectedTracerError", ErrorKind.LEAK),
    ("ConcretizationTypeError", ErrorKind.CONCRETIZATION),
)
_RUNTIME_ERRORS = ("XlaRuntimeError", "JaxRuntimeError", "EquinoxRuntimeError")
_OUT_OF_MEMORY = ("RESOURCE_EXHAUSTED", "Out of memory", "out of memory")
# Kinds read off the message text alone, which a well-known message refines.
_REFINABLE = frozenset(
    {ErrorKind.SHAPE, ErrorKind.DTYPE, ErrorKind.TRANSFORMATION, ErrorKind.JAX_OTHER}
)


def is_jax_error(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by JAX (typed JAX error, or raised inside JAX)."""
    try:
        return raised_by_jax(exc, entries(exc.__traceback__))
    except Exception:
        return False


def explainable(exc: BaseException) -> bool:
    """Whether ``explain`` has more to say about ``exc`` than Python's traceback: a JAX
    error, or a Flax error about an NNX object used across JAX trace levels."""
    try:
        return is_jax_error(exc) or is_trace_level_error(exc, first_line(safe_str(exc)))
    except Exception:
        return False


def raised_by_jax(exc: BaseException, found: list[Entry]) -> bool:
    """``is_jax_error``, given the entries of ``exc``'s traceback."""
    if isinstance(exc, _cerrors.jax_error_types()):
        return True
    if _cerrors.before_transformation_cause(exc) is not None:
        return True
    unfiltered = _cerrors.unfiltered_cause(exc)
    if unfiltered is not None:
        full = entries(unfiltered.__traceback__)
        if full and is_jax_file(full[-1].filename):
            return True
    if found and is_jax_file(found[-1].filename):
        return True
    first = first_line(safe_str(exc))
    if first.startswith(_JAX_MESSAGES) or any(p in first for p in _DELETED):
        return True
    if _cerrors.jax_notes(exc) or unfiltered is not None:
        # JAX removed its own frames: the error came from below the innermost
        # remaining frame unless that frame raised it itself.
        return bool(found) and not raises_here(found[-1])
    return False


def error_kind(exc: BaseException, text: str, is_jax: bool) -> ErrorKind:
    """The kind of ``exc`` (``text``: its cleaned message), a well-known message's
    kind where it has one."""
    kind = _kind_of(exc, text, is_jax)
    if kind in _REFINABLE:
        known = known_message(first_line(text), text, ())
        if known is not None:
            return known.kind
    return kind


def _kind_of(exc: BaseException, text: str, is_jax: bool) -> ErrorKind:
    for name, kind in _TYPED_KINDS:
        cls = getattr(jax.errors, name, None)
        if isinstance(cls, type) and isinstance(exc, cls):
            return kind
    if type(exc).__name__ in SHARDING_ERRORS:
        return ErrorKind.SHARDING
    if isinstance(exc, FloatingPointError) and NAN_IN.search(text):
        return ErrorKind.NAN
    runtime = getattr(jax.errors, "JaxRuntimeError", None)
    if (isinstance(runtime, type) and isinstance(exc, runtime)) or type(
        exc
    ).__name__ in _RUNTIME_ERRORS:
        if any(phrase in text for phrase in _OUT_OF_MEMORY):
            return ErrorKind.OUT_OF_MEMORY
        return ErrorKind.RUNTIME
    if is_trace_level_error(exc, first_line(text)):
        return ErrorKind.TRACE_LEVEL
    if not is_jax:
        return ErrorKind.NOT_JAX
    return _kind_of_jax_message(exc, text)


def _kind_of_jax_message(exc: BaseException, text: str) -> ErrorKind:
    if any(phrase in first_line(text) for phrase in _DELETED):
        return ErrorKind.DONATED
    if UNBOUND.search(first_line(text)):
        return ErrorKind.UNBOUND_AXIS
    if text.startswith("Leaked trace"):
        return ErrorKind.LEAK
    if "in-place item assignment" in text or "does not support item assignment" in text:
        return ErrorKind.ITEM_ASSIGNMENT
    if DEPENDS.search(text) or "concrete value" in text:
        return ErrorKind.CONCRETIZATION
    if is_sharding_message(text):
        return ErrorKind.SHARDING
    low = text.lower()
    if "dtype" in low and ("same dtype" in low or "requires" in low or "got" in low):
        return ErrorKind.DTYPE
    if any(w in low for w in ("shape", "dimension", "broadcast", "inconsistent sizes")):
        return ErrorKind.SHAPE
    if isinstance(exc, FloatingPointError):
        return ErrorKind.NAN
    return ErrorKind.JAX_OTHER
