"""Source information of traced equations: tracebacks → user frames.

Relies on ``jax._src.source_info_util`` (``is_user_filename``,
``register_exclusion``) and ``jax._src.traceback_util.register_exclusion``; all present,
unchanged, from jax 0.4.35 to 0.10.2.
"""

from __future__ import annotations

import bisect
import functools
import operator
import os
import sys
import sysconfig
import types
import weakref
from typing import Any, NamedTuple

import jax

from jaxscope._exceptions import JaxscopeCompatError
from jaxscope.compat import call_private, changed, private, require

_SIU = "jax._src.source_info_util"
_TBU = "jax._src.traceback_util"


def _package_dirs() -> tuple[str, ...]:
    dirs = [os.path.dirname(os.path.abspath(jax.__file__))]
    try:
        import jaxlib

        dirs.append(os.path.dirname(os.path.abspath(jaxlib.__file__)))
    except ImportError:  # pragma: no cover - jaxlib always comes with jax
        pass
    return tuple(os.path.join(d, "") for d in dirs)


_JAX_DIRS = _package_dirs()


def is_jax_file(filename: str) -> bool:
    """Whether ``filename`` is part of JAX or jaxlib itself.

    Relies on: the installed location of the ``jax`` and ``jaxlib`` packages.
    """
    try:
        path = os.path.abspath(filename)
    except (TypeError, ValueError):
        return False
    return path.startswith(_JAX_DIRS)


class RawFrame(NamedTuple):
    """A frame as jaxscope needs it: file, 1-based line, 0-based column, function."""

    file: str
    line: int
    column: int
    function: str


def register_own_frames(path: str) -> None:
    """Hide ``path`` (a directory) from JAX's source attribution and tracebacks.

    Without it the "user line" of every equation traced through jaxscope points into
    jaxscope. JAX keeps two separate registries; both are needed.

    Relies on: ``source_info_util.register_exclusion`` (public via jax.extend) and
    ``traceback_util.register_exclusion`` (private).
    """
    needed_by = "compat.source.register_own_frames"
    path = os.path.join(os.path.abspath(path), "")
    for name in (_SIU, _TBU):
        module = private(name, needed_by)
        excluded = require(module, "_exclude_paths", needed_by)
        if not isinstance(excluded, (list, tuple, set, frozenset)):
            raise changed(
                f"{name}._exclude_paths",
                needed_by,
                TypeError(f"a {type(excluded).__name__}, not a list of paths"),
            )
        if path not in excluded:
            register = require(module, "register_exclusion", needed_by)
            call_private(f"{name}.register_exclusion", needed_by, register, path)


_deferred_error: JaxscopeCompatError | None = None


def register_own_frames_at_import(path: str) -> None:
    """``register_own_frames`` for ``import jaxscope``: a missing JAX hook is kept
    and raised by the first source-mapping call, so the import itself never fails."""
    global _deferred_error
    try:
        register_own_frames(path)
    except JaxscopeCompatError as exc:
        _deferred_error = exc


def _source_info_util(needed_by: str) -> Any:
    if _deferred_error is not None:
        raise _deferred_error
    return private(_SIU, needed_by)


def is_user_file(filename: str) -> bool:
    """Whether JAX would attribute an equation to ``filename`` (not JAX, stdlib, jaxscope).

    Relies on: ``source_info_util.is_user_filename``.
    """
    needed_by = "compat.source.is_user_file"
    siu = _source_info_util(needed_by)
    test = require(siu, "is_user_filename", needed_by)
    return bool(call_private(f"{_SIU}.is_user_filename", needed_by, test, filename))


_MISSING: Any = object()
# Keyed by id(code): hashing a code object hashes its whole bytecode, which for one
# long function made every lookup as slow as the function is long. _CODES holds a
# weak reference to each code object seen, whose callback drops its entries when it
# dies: its id cannot be reused while the caches know it, and the tables of a
# program traced once do not outlive it (they made every later GC pass slower).
_CODES: dict[int, weakref.ref[types.CodeType]] = {}
_USER_CODES: dict[int, bool] = {}
# id(code) -> byte offset -> frame: nested, as a (code, offset) key per frame was a
# tuple the cyclic GC had to scan, one per equation of a long function.
_FRAMES: dict[int, dict[int, RawFrame]] = {}
_n_frames = 0
# id(code) -> (co_lines() starts, their lines, each instruction's column): tuples
# of ints, which the cyclic GC stops tracking
_POSITIONS: dict[
    int, tuple[tuple[int, ...], tuple[int | None, ...], tuple[int | None, ...]]
] = {}
_CACHES: tuple[dict[int, Any], ...] = (_CODES, _USER_CODES, _FRAMES, _POSITIONS)
_CACHE_LIMIT = 200_000
_is_user_filename: Any = None


def _user_filename_test(needed_by: str) -> Any:
    global _is_user_filename
    if _is_user_filename is None:
        siu = _source_info_util(needed_by)
        test = require(siu, "is_user_filename", needed_by)
        _is_user_filename = functools.partial(
            call_private, f"{_SIU}.is_user_filename", needed_by, test
        )
    return _is_user_filename


def _position(code: types.CodeType, lasti: int) -> tuple[int, int]:
    # Tables built once per code object: JAX's code_addr2location walks the line
    # table on every call, which made mapping a long function quadratic. Lines come
    # from co_lines() (one row per run of a line) and only the column of each
    # instruction from co_positions(): its 4-tuple per instruction is most of the
    # cost of mapping a long function.
    table = _POSITIONS.get(id(code))
    if table is None:
        starts, _ends, lines = zip(*code.co_lines(), strict=True)
        columns = tuple(map(_COLUMN, code.co_positions()))
        table = _POSITIONS[id(code)] = (starts, lines, columns)
    starts, lines, columns = table
    row = bisect.bisect_right(starts, lasti) - 1
    line = lines[row] if row >= 0 else None
    index = lasti // 2  # lasti is a byte offset; co_positions() has one row per unit
    column = columns[index] if 0 <= index < len(columns) else None
    return (line if line is not None else code.co_firstlineno), (
        column if column is not None else -1
    )


_COLUMN = operator.itemgetter(2)


def _is_user_code(code: types.CodeType, is_user: Any) -> bool:
    global _n_frames
    if _n_frames + len(_USER_CODES) > _CACHE_LIMIT:
        _n_frames = 0
        for cache in _CACHES:
            cache.clear()
    _CODES[id(code)] = weakref.ref(code, functools.partial(_forget, id(code)))
    user = _USER_CODES[id(code)] = attributes_to(code.co_filename, is_user)
    return user


def _forget(code_id: int, _ref: Any = None) -> None:
    global _n_frames
    _n_frames -= len(_FRAMES.get(code_id, ()))
    for cache in _CACHES:
        cache.pop(code_id, None)


def attributes_to(filename: str, is_user: Any) -> bool:
    """Whether JAX's ``is_user_filename`` test ``is_user`` takes ``filename`` for the
    user's, the stdlib's frozen modules (``<frozen runpy>``) left out: jax 0.9 counts
    them in."""
    return bool(is_user(filename)) and not filename.startswith("<frozen ")


def _user_frame(code: types.CodeType, lasti: int) -> RawFrame:
    global _n_frames
    line, column = _position(code, lasti)
    frame = RawFrame(code.co_filename, line, column, code.co_qualname)
    _n_frames += 1
    by_offset = _FRAMES.get(id(code))
    if by_offset is None:
        by_offset = _FRAMES[id(code)] = {}
    by_offset[lasti] = frame
    return frame


def frames_of(traceback: Any) -> list[RawFrame]:
    """Every frame of a JAX ``Traceback`` that JAX would attribute code to (not
    JAX's, the stdlib's or jaxscope's), innermost first; library frames included.

    Relies on: ``Traceback.raw_frames()`` (``(code objects, byte offsets)``, innermost
    first) and ``source_info_util.is_user_filename``.
    """
    if traceback is None:
        return []
    needed_by = "compat.source.frames_of"
    is_user = _user_filename_test(needed_by)
    codes, lastis = require(traceback, "raw_frames", needed_by)()
    # Called once per equation with a dozen frames each, most of them JAX's: one
    # dict lookup per frame decides, the RawFrame of a user frame is made once.
    user_codes, known, frames = _USER_CODES, _FRAMES, []
    for code, lasti in zip(codes, lastis, strict=True):
        user = user_codes.get(id(code))
        if user is None:
            user = _is_user_code(code, is_user)
        if user:
            by_offset = known.get(id(code))
            frame = by_offset.get(lasti) if by_offset is not None else None
            frames.append(frame if frame is not None else _user_frame(code, lasti))
    return frames


def innermost_user_frame(traceback: Any) -> RawFrame | None:
    """The innermost frame of a JAX ``Traceback`` in the user's own code: not JAX's,
    and not an installed library's (see ``is_library_file``) where the stack has
    such a frame; else JAX's choice (a library frame), or None.

    Relies on: what ``frames_of`` relies on.
    """
    frames = frames_of(traceback)
    for frame in frames:
        if not is_library_file(frame.file):
            return frame
    return frames[0] if frames else None


_LIBRARY_DIRS = ("site-packages", "dist-packages")
# Where installed commands live (the ``ipython``, ``pytest``, ``jupyter`` scripts):
# their ``<module>`` frame starts every stack and is never the user's code.
_SCRIPT_DIRS = frozenset(
    os.path.abspath(path)
    for path in {
        sysconfig.get_path("scripts"),
        os.path.dirname(os.path.abspath(sys.executable)),
    }
    if path
)


@functools.cache
def is_library_file(filename: str) -> bool:
    """Whether ``filename`` belongs to an installed library (site-packages, an
    installed command such as ``bin/ipython``, or a path listed in
    ``$JAXSCOPE_LIBRARY_PATHS``) rather than the user's own project."""
    parts = filename.replace("\\", "/").split("/")
    if any(part in _LIBRARY_DIRS for part in parts):
        return True
    if os.path.dirname(filename) in _SCRIPT_DIRS:
        return True
    extra = os.environ.get("JAXSCOPE_LIBRARY_PATHS", "")
    prefixes = [os.path.abspath(p) for p in extra.split(os.pathsep) if p]
    return any(os.path.abspath(filename).startswith(p) for p in prefixes)


def eqn_traceback(eqn: Any) -> Any:
    """The JAX ``Traceback`` recorded when ``eqn`` was traced, or None."""
    source_info = getattr(eqn, "source_info", None)
    return getattr(source_info, "traceback", None)


_last_name_stack: list[Any] = [None, ""]


def eqn_name_stack(eqn: Any) -> str:
    """The name stack of ``eqn`` as JAX prints it (``"vmap(jvp(layer1))"``), or ``""``.

    Relies on: ``SourceInfo.name_stack`` (a ``NameStack`` whose ``str`` is the path).
    """
    source_info = getattr(eqn, "source_info", None)
    stack = getattr(source_info, "name_stack", None)
    if stack is None:
        return ""
    # Equations traced in one scope share its NameStack object (immutable): the
    # string of the previous one is reused.
    last = _last_name_stack
    if stack is not last[0]:
        last[0], last[1] = stack, str(stack)
    return last[1]


def eqn_name_stack_entries(eqn: Any) -> tuple[tuple[str, str], ...]:
    """The name stack of ``eqn`` as ``("scope" | "transform", name)`` pairs, outermost
    first: ``transpose(jvp(layer0))/attn`` is ``(("transform", "transpose"),
    ("transform", "jvp"), ("scope", "layer0"), ("scope", "attn"))``.

    A transform applies to every scope after it (its string form wraps only the next).

    Relies on: ``NameStack.stack`` (a tuple of ``Scope`` / ``Transform`` named tuples,
    each with a ``name``), jax 0.4.35 to 0.10.2; an entry of another type is a scope.
    """
    source_info = getattr(eqn, "source_info", None)
    entries = getattr(getattr(source_info, "name_stack", None), "stack", None)
    if not entries:
        return ()
    return _entries(tuple(entries))


@functools.lru_cache(maxsize=4096)
def _entries(entries: tuple[Any, ...]) -> tuple[tuple[str, str], ...]:
    # Equations of one scope share their stack, so the cache makes this one lookup.
    return tuple(
        (
            "transform" if type(e).__name__ == "Transform" else "scope",
            str(getattr(e, "name", e)),
        )
        for e in entries
    )


# jaxscope's own frames must never be taken for the user's line. Every feature that
# traces or maps source reaches this module, so registering here (not in
# jaxscope/__init__.py) keeps ``import jaxscope`` free of JAX until something is used.
register_own_frames_at_import(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)
