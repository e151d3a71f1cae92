"""Source lines for the graph viewer: each node's line with a few lines around it.

Read through ``linecache`` by the file name Python compiled them under, or for an
IPython cell (``In [3]``) from the shell's input history.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Iterable, Mapping

from jaxscope._paths import cell_filename
from jaxscope._records import SourceLoc
from jaxscope._source import running_shell

# Lines of context around each source line sent to the viewer.
CONTEXT_LINES = 3
# Distinct source lines for which context is collected (keeps the payload bounded).
MAX_SOURCE_LINES = 2000


def cell_lines(cell: int) -> list[str]:
    """The lines of IPython input cell ``cell`` (empty when not found)."""
    shell = running_shell()
    if shell is None:
        return []
    filename = cell_filename(cell)
    lines = linecache.getlines(filename) if filename else []
    if lines:
        return lines
    history = getattr(shell, "user_ns", {}).get("In")
    if isinstance(history, list) and 0 <= cell < len(history):
        text = history[cell]
        if isinstance(text, str) and text:
            return text.splitlines(keepends=True)
    return []


_CELL = re.compile(r"^In \[(\d+)\]$")


def _file_lines(file: str, raw_file: str | None = None) -> list[str]:
    """The lines of shown file ``file``, read by its compiled name ``raw_file`` if known.

    An ``In [N]`` name alone is ambiguous (cells run without history share one ``N``),
    so the compiled name (which IPython puts in ``linecache``) comes first.
    """
    if raw_file is not None:
        lines = linecache.getlines(raw_file)
        if lines:
            return lines
    match = _CELL.match(file)
    if match:
        return cell_lines(int(match.group(1)))
    return linecache.getlines(file)


def source_snippets(
    locs: Iterable[SourceLoc],
    context: int = CONTEXT_LINES,
    raw_files: Mapping[str, str] | None = None,
) -> dict[str, dict[int, str]]:
    """``{file: {line: text}}`` for every line in ``locs`` and ``context`` lines around it.

    ``raw_files`` maps a shown file to its compiled file name (see ``_file_lines``).
    """
    keys: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    for loc in locs:
        if loc.key not in seen:
            seen.add(loc.key)
            keys.append(loc.key)
            if len(keys) >= MAX_SOURCE_LINES:
                break
    out: dict[str, dict[int, str]] = {}
    cache: dict[str, list[str]] = {}
    for file, line in keys:
        lines = cache.get(file)
        if lines is None:
            raw = raw_files.get(file) if raw_files else None
            lines = cache[file] = _file_lines(file, raw)
        if not lines:
            continue
        table = out.setdefault(file, {})
        for n in range(max(1, line - context), min(len(lines), line + context) + 1):
            table[n] = lines[n - 1].rstrip("\n")
    return out
