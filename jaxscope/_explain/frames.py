"""Traceback entries → the user's frames: which entries are the user's own code.

An entry keeps its live frame, so the failing expression's operands can be read from
its locals. The user's frames are neither JAX's, jaxscope's, the standard library's
nor a tool's (IPython, pytest, ...); the innermost of them prefers the user's own code
over installed libraries.
"""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
import traceback
import types
from dataclasses import dataclass

from jaxscope._records import SourceLoc
from jaxscope._source import display_filename, is_user_file
from jaxscope.compat.source import is_jax_file

_TOOL_PACKAGES = (
    "IPython",
    "ipykernel",
    "_pytest",
    "pytest",
    "pluggy",
    "traitlets",
    "tornado",
    "jupyter_client",
    "nbclient",
    "zmq",
    "numpy",
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One traceback entry: the live frame (for locals) and its position.

    ``col``/``end_col`` are the failing expression's columns on ``line``; ``end_col``
    is None when the expression spans several lines.
    """

    frame: types.FrameType
    filename: str
    line: int
    col: int | None
    end_col: int | None


def entries(tb: types.TracebackType | None) -> list[Entry]:
    """The entries of a traceback, outermost first."""
    pairs = list(traceback.walk_tb(tb))
    summaries = traceback.extract_tb(tb)
    out = []
    for (frame, lineno), summary in zip(pairs, summaries, strict=False):
        col = getattr(summary, "colno", None)
        end_col = getattr(summary, "end_colno", None)
        if getattr(summary, "end_lineno", lineno) != lineno:
            end_col = None
        out.append(Entry(frame, frame.f_code.co_filename, lineno, col, end_col))
    return out


def code_name(code: types.CodeType) -> str:
    """The qualified name of the function a code object runs (its name before 3.11)."""
    return getattr(code, "co_qualname", code.co_name)


def loc(entry: Entry) -> SourceLoc:
    """The entry's place in the user's source, with its column."""
    return SourceLoc(
        file=display_filename(entry.filename),
        line=entry.line,
        column=entry.col,
        function=code_name(entry.frame.f_code),
    )


def _tool_dirs() -> tuple[str, ...]:
    dirs = []
    for name in _TOOL_PACKAGES:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(os.path.join(os.path.dirname(os.path.abspath(path)), ""))
    return tuple(dirs)


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths.get("purelib"), paths.get("platlib")}
    return tuple(os.path.join(d, "") for d in dirs if d)


def _is_user_entry(entry: Entry, tools: tuple[str, ...]) -> bool:
    name = entry.filename
    if name.startswith("<frozen"):
        return False
    if not is_user_file(name) or is_jax_file(name):
        return False
    return not (tools and os.path.abspath(name).startswith(tools))


def _is_library(filename: str, libs: tuple[str, ...]) -> bool:
    path = os.path.abspath(filename)
    return (
        path.startswith(libs) or "/site-packages/" in path or "/dist-packages/" in path
    )


def is_own_code(entry: Entry) -> bool:
    """Whether the entry runs the user's own code (not JAX, a tool or a library)."""
    return _is_user_entry(entry, _tool_dirs()) and not _is_library(
        entry.filename, _library_dirs()
    )


def user_entries(found: list[Entry]) -> tuple[list[Entry], Entry | None]:
    """User entries outermost first, and the innermost one (own code before libraries)."""
    tools = _tool_dirs()
    users = [e for e in found if _is_user_entry(e, tools)]
    if not users:
        return [], None
    libs = _library_dirs()
    own = [e for e in users if not _is_library(e.filename, libs)]
    if own:
        # Library frames outside the user's outermost own frame belong to the harness
        # (pytest plugins, runners), not to the user's program.
        first = users.index(own[0])
        users = users[first:]
    return users, (own or users)[-1]


def shown_frames(users: list[Entry]) -> list[SourceLoc]:
    """The frames a report lists: the user's own code only, outermost first (an
    installed library's frames between them left out); a library's where the
    stack has no frame of the user's own code."""
    libs = _library_dirs()
    own = [e for e in users if not _is_library(e.filename, libs)]
    return [loc(e) for e in own or users]


def raises_here(entry: Entry) -> bool:
    """Whether the entry's own line raises (``raise ...``, ``assert ...``)."""
    text = linecache.getline(entry.filename, entry.line).strip()
    return text.startswith(("raise ", "raise(", "assert ")) or text == "raise"


def raw_filename(display: str, found: list[Entry]) -> str | None:
    """The file name behind a displayed one (``In [3]`` → the cell's file), if known."""
    for entry in found:
        if display_filename(entry.filename) == display:
            return entry.filename
    for name in list(linecache.cache):
        if display_filename(name) == display:
            return name
    return display if os.path.exists(display) else None


def traced_code(
    found: list[Entry], fn: str | None, file: str | None, line: int | None
) -> types.CodeType | None:
    """The code object of the function JAX was tracing (named in its message), found
    among the traceback's frames; its definition line decides between namesakes."""
    if fn is None:
        return None
    short = fn.rsplit(".", 1)[-1]
    fallback = None
    for entry in reversed(found):
        code = entry.frame.f_code
        if code.co_name != short:
            continue
        if (
            line is not None
            and code.co_firstlineno == line
            and (file is None or entry.filename == file)
        ):
            return code
        fallback = fallback or code
    return fallback
