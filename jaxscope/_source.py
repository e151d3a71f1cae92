"""Frames → ``SourceLoc``: the user's line, with notebook cells shown as ``In [N]``."""

from __future__ import annotations

import contextlib
import re
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from jaxscope._format import unwrap
from jaxscope._paths import (
    display_filename,
    running_shell,
    short_path,
)
from jaxscope._records import SourceLoc
from jaxscope.compat import source as _csource


def running_cell_number() -> int | None:
    """The number of the IPython cell whose code is running now (on the stack), or
    None outside IPython. IPython 9 counts ``execution_count`` up before a cell runs
    and 8 after, so the number is read from the running cell's own frame."""
    shell = running_shell()
    filename_map = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if not filename_map:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        number = filename_map.get(frame.f_code.co_filename)
        if number is not None:
            return int(number)
        frame = frame.f_back
    return None


def short_place(text: str) -> str:
    """A ``file:line[:column]`` written by JAX or Python (in a message) with its file
    shortened by ``short_path``; other text unchanged.

    Example:
        >>> short_place("<ipython-input-45-80b4c3dd3c15>:5:8")
        'In [45]:5:8'
    """
    match = _PLACE.match(text)
    if match is None:
        return text
    return short_path(match.group("file")) + text[match.end("file") :]


_PLACE = re.compile(r"^(?P<file>.+?)(?::\d+){1,2}$")


def short_loc(loc: SourceLoc) -> str:
    """``file:line`` with the file shortened by ``short_path`` (``str(loc)``)."""
    return f"{short_path(loc.file)}:{loc.line}"


def full_loc(loc: SourceLoc) -> str:
    """``file:line`` with the full path: for a tooltip over the short form."""
    return f"{loc.file}:{loc.line}"


def loc_from_raw(raw: _csource.RawFrame) -> SourceLoc:
    """A ``SourceLoc`` from a compat ``RawFrame``."""
    return SourceLoc(
        file=display_filename(raw.file),
        line=raw.line,
        column=raw.column if raw.column >= 0 else None,
        function=raw.function,
    )


def loc_of_traceback(traceback: Any) -> SourceLoc | None:
    """The innermost user line of a JAX ``Traceback`` (equation source info)."""
    raw = _csource.innermost_user_frame(traceback)
    return loc_from_raw(raw) if raw is not None else None


def loc_of_code(code: types.CodeType, line: int | None = None) -> SourceLoc:
    """A ``SourceLoc`` for a code object (a function's definition line by default)."""
    return SourceLoc(
        file=display_filename(code.co_filename),
        line=line if line is not None else code.co_firstlineno,
        function=getattr(code, "co_qualname", code.co_name),  # co_qualname: 3.11+
    )


def loc_of_function(fn: Any) -> SourceLoc | None:
    """Where a Python callable is defined, unwrapping ``jax.jit`` and functools wrappers."""
    seen = 0
    while seen < 20:
        code = getattr(fn, "__code__", None)
        if isinstance(code, types.CodeType):
            return loc_of_code(code)
        inner = getattr(fn, "__wrapped__", None) or getattr(fn, "func", None)
        if inner is None:
            return None
        fn = inner
        seen += 1
    return None


def is_library_file(filename: str) -> bool:
    """Whether ``filename`` is an installed library's (site-packages, or a path in
    ``$JAXSCOPE_LIBRARY_PATHS``), not the user's own project."""
    return _csource.is_library_file(filename)


def is_user_file(filename: str) -> bool:
    """Whether ``filename`` is the user's (not JAX's, not the stdlib's, not jaxscope's)."""
    return _csource.is_user_file(filename)


def user_frame_of_stack(skip: int = 1) -> SourceLoc | None:
    """The innermost user frame on the current Python stack, or None."""
    frame = sys._getframe(skip)
    while frame is not None:
        code = frame.f_code
        if _csource.is_user_file(code.co_filename):
            return loc_of_code(code, frame.f_lineno)
        frame = frame.f_back
    return None


def user_frames_of_exception(exc: BaseException) -> list[SourceLoc]:
    """User frames of an exception's own traceback, outermost first."""
    locs: list[SourceLoc] = []
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if _csource.is_user_file(code.co_filename):
            locs.append(loc_of_code(code, tb.tb_lineno))
        tb = tb.tb_next
    return locs


_Frame = TypeVar("_Frame")


@dataclass(frozen=True, slots=True)
class ProgramScope:
    """Where the function whose program a view shows is defined.

    A traced equation records the whole Python stack: the function's frames and,
    outside them, its caller's. JAX caches traces and lowerings, so the caller's
    frames are those of whichever call traced it first (an earlier cell, the
    ``%hlo`` line of another view); they are never the program's (see
    ``ProgramCut``).
    """

    file: str  # as Python compiled it (``co_filename``)
    name: str  # ``co_name``
    first: int
    last: int

    def holds(self, file: str, line: int, function: str | None) -> bool:
        """Whether a frame at ``file:line`` in ``function`` runs this function."""
        return (
            file == self.file
            and self.first <= line <= self.last
            and (function or "").rsplit(".", 1)[-1] == self.name
        )

    def index(
        self, frames: Sequence[_Frame], where: Callable[[_Frame], tuple[str, int, str]]
    ) -> int | None:
        """The index of the outermost of ``frames`` (innermost first) that runs this
        function, or None. ``where`` gives a frame's ``(file, line, function)``."""
        for index in range(len(frames) - 1, -1, -1):
            if self.holds(*where(frames[index])):
                return index
        return None


class ProgramCut(Generic[_Frame]):
    """One view's stacks cut to its program (``ProgramScope``).

    A stack through the program's function keeps its frames from that function
    inwards. A stack without it (JAX made the op for a transform: a hessian's
    identity, a constant) loses the caller's frames, learnt from the stacks that
    go through the function (``learn``), and is left with no source where the rest
    is not the user's own code. A stack JAX recorded short (a loop body's, where
    the function's frame is missing) keeps its frames of the user's own code.
    """

    def __init__(
        self,
        scope: ProgramScope | None,
        where: Callable[[_Frame], tuple[str, int, str]],
    ) -> None:
        self.scope = scope
        self.where = where
        self.callers: frozenset[tuple[str, int, str]] | None = None

    def learn(self, stacks: Iterable[Sequence[_Frame]]) -> None:
        """Take the caller's frames from the first stack that runs the program."""
        if self.scope is None or self.callers is not None:
            return
        for frames in stacks:
            index = self.scope.index(frames, self.where)
            if index is not None:
                self.callers = frozenset(map(self.where, frames[index + 1 :]))
                return

    def __call__(self, frames: Sequence[_Frame]) -> Sequence[_Frame]:
        if self.scope is None:
            return frames
        index = self.scope.index(frames, self.where)
        if index is not None:
            return frames[: index + 1]
        kept = [f for f in frames if self.where(f) not in (self.callers or ())]
        if all(is_library_file(self.where(f)[0]) for f in kept):
            return []  # a transform's helper (numpy's reshape), not the program
        return kept


def program_scope(fn: Any) -> ProgramScope | None:
    """The ``ProgramScope`` of the Python function ``fn`` stages, seen through
    ``jax.jit``, ``nnx.jit``, ``eqx.filter_jit``, transforms and ``partial``; None
    where it has no Python code of its own outside JAX (``jnp.reshape``), whose
    equations' frames are all the caller's."""
    target = unwrap(fn)
    code = getattr(getattr(target, "__func__", target), "__code__", None)
    if not isinstance(code, types.CodeType):
        code = getattr(type(target).__call__, "__code__", None)  # a Module
    if not isinstance(code, types.CodeType) or not is_user_file(code.co_filename):
        return None
    lines = [line for _, _, line in code.co_lines() if line is not None]
    return ProgramScope(
        file=code.co_filename,
        name=code.co_name,
        first=min(lines, default=code.co_firstlineno),
        last=max(lines, default=code.co_firstlineno),
    )


_PROGRAM: ContextVar[ProgramScope | None] = ContextVar("jaxscope_program", default=None)


def current_program() -> ProgramScope | None:
    """The ``ProgramScope`` of the view being built (see ``program``), or None."""
    return _PROGRAM.get()


@contextlib.contextmanager
def program(scope: ProgramScope | None) -> Iterator[None]:
    """Within: views map sources inside ``scope`` (None: no scope)."""
    token = _PROGRAM.set(scope)
    try:
        yield
    finally:
        _PROGRAM.reset(token)


_CELL_NAME = re.compile(r"^In \[(\d+)\]$")


def typed_lines(
    file: str | None, lines: Sequence[tuple[int, str]]
) -> list[tuple[int, str]]:
    """``lines`` of ``file`` as the user typed them: IPython compiles a cell's magics
    as rewritten code (``%jaxstep f(x)`` runs as ``get_ipython().run_line_magic(...)``),
    which is what ``linecache`` holds; in a cell ``In [N]`` whose typed input has as many
    lines as its compiled code, each line is the typed one. Other files are unchanged."""
    cell = _CELL_NAME.match(file or "")
    history = getattr(running_shell(), "history_manager", None)
    typed_cells = getattr(history, "input_hist_raw", None)
    compiled_cells = getattr(history, "input_hist_parsed", None)
    if cell is None or not typed_cells or not compiled_cells:
        return list(lines)
    number = int(cell.group(1))
    if not 0 < number < min(len(typed_cells), len(compiled_cells)):
        return list(lines)
    typed = str(typed_cells[number]).splitlines()
    if len(typed) != len(str(compiled_cells[number]).splitlines()):
        return list(lines)
    return [(n, typed[n - 1] if 0 < n <= len(typed) else text) for n, text in lines]
