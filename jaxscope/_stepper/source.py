"""The user's source lines around where the stepper is, read through ``linecache``.

Equations show their file as the user knows it (``In [3]``); the lines are read
from the file name Python compiled them under, taken from an equation's traceback.
"""

from __future__ import annotations

import linecache

from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._stepper.plan import Node, Plan, first_source, iter_nodes


class SourceReader:
    """Reads the source of one program's equations (``eqns``, run by ``plan``)."""

    def __init__(self, plan: Plan, defined_at: SourceLoc | None) -> None:
        self.plan = plan
        self.defined_at = defined_at

    @property
    def eqns(self) -> list[EqnInfo]:
        return self.plan.program.eqns

    def line(self, node: Node | None, loc: SourceLoc | None = None) -> str | None:
        """The text of ``node``'s source line (or of ``loc``), if readable."""
        if loc is None:
            if node is None or node.info.source is None:
                return None
            loc = node.info.source
        raw = self._raw_file(loc.file, node)
        if raw is None:
            return None
        text = linecache.getline(raw, loc.line)
        return text.rstrip("\n") if text else None

    def context(
        self, node: Node | None, context: int = 3
    ) -> tuple[str | None, list[tuple[int, str]]]:
        """``(file, [(line number, text), ...])`` around ``node``'s line."""
        if node is None or node.info.source is None:
            return None, []
        loc = node.info.source
        raw = self._raw_file(loc.file, node)
        if raw is None:
            return loc.file, []
        lines = linecache.getlines(raw)
        lo = max(1, loc.line - context)
        hi = min(len(lines), loc.line + context)
        return loc.file, [(n, lines[n - 1].rstrip("\n")) for n in range(lo, hi + 1)]

    def files(self) -> dict[str, list[int]]:
        """``{file: [lines holding equations]}`` of every file (or notebook cell) the
        program's equations come from, in order of first appearance."""
        found: dict[str, set[int]] = {}
        for info in self.eqns:
            if info.source is not None:
                found.setdefault(info.source.file, set()).add(info.source.line)
        return {file: sorted(lines) for file, lines in found.items()}

    def lines(
        self, node: Node | None, file: str | None = None
    ) -> tuple[str | None, list[tuple[int, str]], set[int]]:
        """``file`` (by default ``node``'s, else the first with equations): ``(file,
        [(line number, text)], {lines holding equations})``, the lines spanning every
        equation in it (from the function's ``def`` when it is above them)."""
        loc = node.info.source if node is not None else None
        if loc is None:
            loc = first_source(self.plan)
        if file is not None:
            loc = SourceLoc(file=file, line=0)
        if loc is None:
            return None, [], set()
        lines_with = {
            i.source.line
            for i in self.eqns
            if i.source is not None and i.source.file == loc.file
        }
        if not lines_with:
            return loc.file, [], set()
        raw = self._raw_file(loc.file, node)
        text = linecache.getlines(raw) if raw else []
        if not text:
            return loc.file, [], lines_with
        lo = max(1, min(lines_with) - 2)
        defined = self.defined_at
        if (
            defined is not None
            and defined.file == loc.file
            and defined.line <= min(lines_with)
        ):
            lo = defined.line
        hi = min(len(text), max(lines_with) + 1)
        shown = [(n, text[n - 1].rstrip("\n")) for n in range(lo, hi + 1)]
        return loc.file, shown, lines_with

    def _raw_file(self, display: str, hint: Node | None = None) -> str | None:
        if (
            hint is not None
            and hint.info.source is not None
            and hint.info.source.file == display
        ):
            raw = hint.raw_file()
            if raw:
                return raw
        for node in iter_nodes(self.plan):
            if node.info.source is not None and node.info.source.file == display:
                return node.raw_file()
        return display
