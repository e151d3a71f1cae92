"""Source information of traced equations: tracebacks → user frames.

Relies on ``jax._src.source_info_util`` (``user_frames``, ``is_user_filename``,
``register_exclusion``) and ``jax._src.traceback_util.register_exclusion``; all present,
unchanged, from jax 0.4.35 to 0.10.2.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

import jax

from jaxscope._exceptions import JaxscopeCompatError
from jaxscope.compat import private, require

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
    for module in (private(_SIU, needed_by), private(_TBU, needed_by)):
        if path not in require(module, "_exclude_paths", needed_by):
            require(module, "register_exclusion", needed_by)(path)


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
    return bool(require(siu, "is_user_filename", needed_by)(filename))


def user_frames(traceback: Any) -> list[RawFrame]:
    """User frames of a JAX ``Traceback``, innermost first.

    Relies on: ``source_info_util.user_frames`` yielding ``Frame`` named tuples.
    """
    if traceback is None:
        return []
    needed_by = "compat.source.user_frames"
    frames = require(_source_info_util(needed_by), "user_frames", needed_by)(traceback)
    return [
        RawFrame(fr.file_name, fr.start_line, fr.start_column, fr.function_name)
        for fr in frames
    ]


def innermost_user_frame(traceback: Any) -> RawFrame | None:
    """The innermost user frame of a JAX ``Traceback`` (cached by JAX), or None.

    Relies on: ``source_info_util.user_frame`` (an ``lru_cache``d function).
    """
    if traceback is None:
        return None
    needed_by = "compat.source.innermost_user_frame"
    fr = require(_source_info_util(needed_by), "user_frame", needed_by)(traceback)
    if fr is None:
        return None
    return RawFrame(fr.file_name, fr.start_line, fr.start_column, fr.function_name)


def eqn_traceback(eqn: Any) -> Any:
    """The JAX ``Traceback`` recorded when ``eqn`` was traced, or None."""
    source_info = getattr(eqn, "source_info", None)
    return getattr(source_info, "traceback", None)


def eqn_name_stack(eqn: Any) -> str:
    """The name stack of ``eqn`` as JAX prints it (``"vmap(jvp(layer1))"``), or ``""``.

    Relies on: ``SourceInfo.name_stack`` (a ``NameStack`` whose ``str`` is the path).
    """
    source_info = getattr(eqn, "source_info", None)
    stack = getattr(source_info, "name_stack", None)
    return str(stack) if stack is not None else ""
