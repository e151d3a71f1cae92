"""How a file is shown: the one path formatter (``short_path``) and the IPython cell
names behind it. Imports nothing of jaxscope or JAX, so records and the display
protocol can use it without loading the core."""

from __future__ import annotations

import functools
import linecache
import os
import re
import sys
from typing import Any

_IPYTHON_INPUT = re.compile(r"^<ipython-input-(\d+)-[0-9a-f]+>$")


def running_shell() -> Any:
    """The running IPython shell, or None (found through ``sys.modules``, so the core
    never imports IPython)."""
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None) if ipython else None
    return get_ipython() if get_ipython is not None else None


def display_filename(filename: str) -> str:
    """``"In [N]"`` for a file IPython compiled from cell N; ``filename`` otherwise.

    IPython (terminal) names cells ``<ipython-input-N-hash>``; ipykernel names them
    ``/tmp/ipykernel_PID/HASH.py``. Both are in the shell's ``compile._filename_map``.
    """
    shell = running_shell()
    if shell is not None:
        filename_map = getattr(getattr(shell, "compile", None), "_filename_map", None)
        if filename_map:
            cell = filename_map.get(filename)
            if cell is not None:
                return f"In [{cell}]"
    match = _IPYTHON_INPUT.match(filename)
    if match:
        return f"In [{match.group(1)}]"
    return filename


def cell_filename(cell: int) -> str | None:
    """The name IPython compiled input cell ``cell`` (``In [cell]``) under, or None.

    Several names may map to one number: a magic compiles its expression under the
    running cell's number, and cells run without storing history share the next
    stored one's. The cell is the one whose text is the history's ``In[cell]``; the
    first compiled where the history does not say.
    """
    shell = running_shell()
    filename_map = getattr(getattr(shell, "compile", None), "_filename_map", None)
    if not filename_map:
        return None
    names = [name for name, number in list(filename_map.items()) if number == cell]
    history = getattr(shell, "user_ns", {}).get("In")
    text = (
        history[cell]
        if isinstance(history, list) and 0 <= cell < len(history)
        else None
    )
    if isinstance(text, str) and text.strip() and len(names) > 1:
        for name in names:
            if "".join(linecache.getlines(name)).strip() == text.strip():
                return name
    return names[0] if names else None


_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")


def short_path(file: str) -> str:
    """A file as every view and message shows it: a notebook cell's ``In [N]``
    (IPython's ``<ipython-input-N-…>`` and ipykernel's file names included), relative
    to the working directory when under it, an installed library's from its
    top-level package (``flax/linen/linear.py``), any other path in full.

    The one path formatter: ``str(SourceLoc)`` and every ``file:line`` shown go
    through it. Only for display: ``SourceLoc.file`` keeps the full path.

    Example:
        >>> short_path("/usr/lib/python3/dist-packages/flax/linen/linear.py")
        'flax/linen/linear.py'
        >>> short_path(os.path.join(os.getcwd(), "model", "train.py"))
        'model/train.py'
        >>> short_path("<ipython-input-45-80b4c3dd3c15>")
        'In [45]'
    """
    shown = display_filename(file)
    if shown is not file:
        return shown
    try:
        cwd = os.getcwd()
    except OSError:  # the working directory was removed
        cwd = ""
    return _short_path(file, cwd)


@functools.lru_cache(maxsize=4096)
def _short_path(file: str, cwd: str) -> str:
    ends = [found.end() for found in _INSTALLED.finditer(file)]
    if ends:
        return file[ends[-1] :]
    if cwd and os.path.isabs(file):
        prefix = cwd.rstrip(os.sep) + os.sep
        if file.startswith(prefix):
            return file[len(prefix) :]
    return file
