"""The exception's text: JAX's message cleaned of boilerplate, and the facts JAX's
phrasing carries (the traced function, the transformation, the arguments a value
depends on, the primitive that produced a NaN)."""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass

from jaxscope._format import short_dtype
from jaxscope.compat import errors as _cerrors

TRACING = re.compile(
    r"while tracing the function (?P<fn>\S+) at (?P<file>.+?):(?P<line>\d+) for (?P<tr>\w+)"
)
DEPENDS = re.compile(
    r"depends on the values? of the arguments? (?P<args>.+?)\.(?:\s|$)"
)
LEAKED_IN = re.compile(
    r"The function being traced when the value leaked was (?P<fn>\S+) at "
    r"(?P<file>.+?):(?P<line>\d+) traced for (?P<tr>\w+)"
)
ARISES = re.compile(r"It arose in (?:the )?(?P<what>.+?)\.?$", re.MULTILINE)
# Documentation pages of JAX, Flax and Equinox; a link elsewhere is never shown.
DOCS = re.compile(
    r"https://(?:docs\.jax\.dev|jax\.readthedocs\.io|flax\.readthedocs\.io"
    r"|flax-linen\.readthedocs\.io|docs\.kidger\.site)/[\w./#%~=?&+-]*"
)
NAN_IN = re.compile(
    r"invalid value \((?P<what>nan|inf)\) encountered in (?P<prim>[\w.]+)"
)


@dataclass(frozen=True, slots=True)
class Tracing:
    """What JAX's message says about the trace the error happened in.

    Attributes:
        function: the traced function's name, as JAX prints it.
        transform: what it was traced for ("jit", "scan", "vmap", ...).
        file: the traced function's file.
        line: the traced function's definition line.
        arguments: the traced function's arguments the offending value depends on.
    """

    function: str | None = None
    transform: str | None = None
    file: str | None = None
    line: int | None = None
    arguments: tuple[str, ...] = ()


def tracing_of(text: str) -> Tracing:
    """The trace facts of a (cleaned) JAX message."""
    found = TRACING.search(text) or LEAKED_IN.search(text)
    depends = DEPENDS.search(text)
    arguments = _split_args(depends.group("args")) if depends else ()
    transform = found.group("tr") if found else None
    if transform is None and "BatchTracer" in text:
        transform = "vmap"
    if found is None:
        return Tracing(transform=transform, arguments=arguments)
    return Tracing(
        function=found.group("fn"),
        transform=transform,
        file=found.group("file"),
        line=int(found.group("line")),
        arguments=arguments,
    )


def _split_args(text: str) -> tuple[str, ...]:
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+", text)
    return tuple(p.strip() for p in parts if p.strip())


def clean_message(exc: BaseException) -> str:
    """The exception's message without JAX's "See https://..." and traceback notes."""
    text = safe_str(exc)
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    note = _cerrors.simplified_traceback_note()
    lines = []
    for line in text.splitlines():
        if line.startswith("See https://") or (note and note in line):
            continue
        if line.strip("- ") == "" and line.strip():
            continue
        lines.append(line)
    return "\n".join(lines).strip()


def docs_link(text: str) -> str:
    """The first JAX/Flax/Equinox documentation link in ``text`` ("" if none)."""
    found = DOCS.search(text)
    return found.group().rstrip(".") if found else ""


def without_docs(line: str) -> str:
    """``line`` without a ``(https://...)`` documentation link (Flax ends its
    messages with one), and without the start of a multi-line repr it ends with
    (``..., got Variable(``)."""
    line = re.sub(r"\s*\(" + DOCS.pattern + r"\)", "", line).strip()
    if line.count("(") > line.count(")") and ", got " in line:
        line = line[: line.rindex(", got ")]
    return line


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped ("" if none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def short_aval(text: str) -> str:
    """``float32[3]`` → ``f32[3]``, as jaxprs print it."""
    match = re.fullmatch(r"(~?)(\w+)\[(.*)\]", text)
    if match is None:
        return text
    return f"{match.group(1)}{short_dtype(match.group(2))}[{match.group(3)}]"


def safe_str(exc: BaseException) -> str:
    """``str(exc)``, or a placeholder when its ``__str__`` fails."""
    try:
        return str(exc)
    except Exception:
        return f"<{type(exc).__name__}: message unavailable>"


def full_traceback(exc: BaseException) -> str:
    """The traceback as Python prints it (never raises)."""
    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except Exception:
        return f"{type(exc).__name__}: {safe_str(exc)}"
