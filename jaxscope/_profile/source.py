"""The user's source around measured lines: whole functions, as ``%lprun`` shows them.

Each measured line is shown inside the innermost function that contains it (whole,
up to ``MAX_BLOCK_LINES``); blocks that overlap are merged, so a nested ``def`` shows
inside its outer function. Lines outside any function get a little context.
"""

from __future__ import annotations

import ast
import linecache
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from jaxscope._paths import cell_filename

MAX_BLOCK_LINES = 120
CONTEXT = 2
_CELL = re.compile(r"^In \[(\d+)\]$")


@dataclass(frozen=True, slots=True)
class SourceBlock:
    """Consecutive source lines of one file: ``rows`` is ``[(line number, text)]``."""

    file: str
    function: str
    rows: tuple[tuple[int, str], ...]


def _functions(text: str) -> list[tuple[int, int, str]]:
    """``(first line, last line, name)`` of every function and class in ``text``."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out.append((first, node.end_lineno or node.lineno, node.name))
    return out


def _span(
    line: int, functions: list[tuple[int, int, str]], n_lines: int
) -> tuple[int, int, str]:
    containing = [f for f in functions if f[0] <= line <= f[1]]
    if containing:
        first, last, name = min(containing, key=lambda f: f[1] - f[0])
        if last - first < MAX_BLOCK_LINES:
            return first, last, name
        return max(first, line - CONTEXT), min(last, line + CONTEXT), name
    return max(1, line - CONTEXT), min(n_lines, line + CONTEXT), ""


def raw_file(file: str) -> str:
    """The name Python's ``linecache`` knows a shown file by: an IPython cell's
    compiled file name for ``In [N]``, the file itself otherwise."""
    cell = _CELL.match(file)
    if cell is None:
        return file
    return cell_filename(int(cell.group(1))) or file


def source_blocks(
    lines: Iterable[tuple[str, int]], raw: Callable[[str], str] = raw_file
) -> list[SourceBlock]:
    """The blocks of source that show every ``(file, line)`` in ``lines``; ``raw``
    gives the name ``linecache`` knows a shown file by.

    A file whose text is unavailable gives its lines alone, without text.
    """
    by_file: dict[str, set[int]] = {}
    for file, line in lines:
        by_file.setdefault(file, set()).add(line)
    blocks: list[SourceBlock] = []
    for file in sorted(by_file):
        text_lines = linecache.getlines(raw(file))
        wanted = sorted(by_file[file])
        if not text_lines:
            blocks.extend(SourceBlock(file, "", ((n, ""),)) for n in wanted)
            continue
        functions = _functions("".join(text_lines))
        spans = sorted(_span(n, functions, len(text_lines)) for n in wanted)
        merged: list[list[int | str]] = []
        for first, last, name in spans:
            if merged and first <= int(merged[-1][1]) + 1:
                merged[-1][1] = max(int(merged[-1][1]), last)
                continue
            merged.append([first, last, name])
        for first, last, name in merged:
            rows = tuple(
                (n, text_lines[n - 1].rstrip("\n"))
                for n in range(int(first), int(last) + 1)
                if n - 1 < len(text_lines)
            )
            blocks.append(SourceBlock(file, str(name), rows))
    return blocks
