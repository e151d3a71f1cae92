"""The op table of an HLO module: every instruction, its fusion and its source line.

Sources are the innermost *user* frame of each op's stack (``LocResolver``), read
from the ``StackFrames`` tables or the older inline metadata by ``_hlo.parse``.
"""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass

from jaxscope._hlo.parse import (
    Frame,
    FrameTable,
    fused_computation,
    inline_frame,
    instructions,
    op_name,
    read_frame_tables,
    short_shape,
    stack_frame_id,
)
from jaxscope._records import OpInfo, SourceLoc
from jaxscope._source import (
    ProgramCut,
    ProgramScope,
    current_program,
    display_filename,
    is_library_file,
    is_user_file,
)

# Front-end machinery JAX counts as user code: a call site traced through ``%hlo`` or a
# pytest run must show the cell / test line, not IPython's or pytest's own frames.
_MACHINERY = re.compile(
    r"[/\\](?:site|dist)-packages[/\\](?:IPython|ipykernel|ipykernel_launcher\.py|"
    r"traitlets|tornado|zmq|_pytest|pytest|pluggy|nbclient|jupyter_client|debugpy)"
    r"(?:[/\\]|$)"
)


def _where(frame: Frame) -> tuple[str, int, str]:
    return frame.file, frame.line, frame.function or ""


class LocResolver:
    """Raw frames → ``SourceLoc`` (innermost user frame), remembering raw file names.

    With a ``FrameTable``, ``of_metadata`` resolves an op's metadata (compact or
    inline), each stack frame once. With a ``ProgramScope`` (by default the view's
    being built, ``current_program``), the frames outside the program's function
    (its caller's, from whichever call JAX traced and cached) are never a source.
    """

    def __init__(
        self,
        table: FrameTable | None = None,
        scope: ProgramScope | None = None,
    ) -> None:
        self.raw_files: dict[str, str] = {}
        self.table = table if table is not None else FrameTable()
        self.cut: ProgramCut[Frame] = ProgramCut(
            scope if scope is not None else current_program(), _where
        )
        self._user: dict[str, bool] = {}
        self._display: dict[str, str] = {}
        self._by_frame_id: dict[
            int, tuple[SourceLoc | None, tuple[SourceLoc, ...]]
        ] = {}

    def _is_user(self, file: str) -> bool:
        known = self._user.get(file)
        if known is None:
            known = self._user[file] = (
                is_user_file(file)
                and not file.startswith("<frozen ")
                and _MACHINERY.search(file) is None
            )
        return known

    def _loc(self, frame: Frame) -> SourceLoc:
        shown = self._display.get(frame.file)
        if shown is None:
            shown = self._display[frame.file] = display_filename(frame.file)
            self.raw_files.setdefault(shown, frame.file)
        return SourceLoc(
            file=shown,
            line=frame.line,
            column=frame.column if frame.column >= 0 else None,
            function=frame.function,
        )

    def located(
        self, frames: list[Frame]
    ) -> tuple[SourceLoc | None, tuple[SourceLoc, ...]]:
        """``(source, user frames)`` of a stack (innermost first): the innermost frame
        in the user's own code, else in any user-visible file (an installed
        library's), else the innermost frame."""
        frames = list(self.cut(frames))
        if not frames:
            return None, ()
        visible = [fr for fr in frames if self._is_user(fr.file)]
        locs = tuple(self._loc(fr) for fr in visible)
        for frame, loc in zip(visible, locs, strict=True):
            if not is_library_file(frame.file):
                return loc, locs
        return (locs[0] if locs else self._loc(frames[0])), locs

    def loc(self, frames: list[Frame]) -> SourceLoc | None:
        """The innermost user frame of ``frames`` (innermost first), else the innermost."""
        return self.located(frames)[0]

    def of_metadata(self, metadata: str) -> SourceLoc | None:
        """The source of an HLO op's ``metadata={...}`` text, if it records one."""
        return self.located_metadata(metadata)[0]

    def located_metadata(
        self, metadata: str
    ) -> tuple[SourceLoc | None, tuple[SourceLoc, ...]]:
        """``(source, frames)`` of an HLO op's ``metadata={...}`` text."""
        frame_id = stack_frame_id(metadata)
        if frame_id is None:
            frame = inline_frame(metadata)
            return self.located([frame]) if frame is not None else (None, ())
        if frame_id not in self._by_frame_id:
            self._by_frame_id[frame_id] = self.located(self.table.frames(frame_id))
        return self._by_frame_id[frame_id]


def module_resolver(lines: list[str], scope: ProgramScope | None = None) -> LocResolver:
    """The ``LocResolver`` of one HLO module's text: its frame tables read, and the
    program's callers learnt from them. Every view that names an HLO op's line
    (``%hlo``, ``%sharding``, the profiles) resolves it with one."""
    resolver = LocResolver(read_frame_tables(lines), scope)
    table = resolver.table
    resolver.cut.learn(table.frames(key) for key in table.stack_frames)
    return resolver


@dataclass(frozen=True, slots=True)
class ParsedOps:
    """The op table of one module, plus where each op sits in the text."""

    ops: list[OpInfo]
    lines: list[int]  # ops[i] is printed on text line lines[i] (0-based)
    raw_files: dict[str, str]  # display file ("In [3]") -> file as JAX recorded it


def parse_hlo(text: str, scope: ProgramScope | None = None) -> ParsedOps:
    """The op table of an HLO module's text (``hlo`` or ``optimized`` stage).

    Every instruction of every computation is listed; an op inside a fused
    computation has ``fusion`` set to the name of the fusion instruction calling it.
    Sources come from the ``StackFrames`` tables or the older inline metadata.
    """
    lines = text.splitlines()
    resolver = module_resolver(lines, scope)
    instrs = list(instructions(lines))
    fusion_of_computation: dict[str, str] = {}
    for instr in instrs:
        if instr.opcode == "fusion":
            called = fused_computation(instr)
            if called is not None:
                fusion_of_computation.setdefault(called, instr.name)
    ops = []
    for instr in instrs:
        metadata = instr.metadata
        source, frames = resolver.located_metadata(metadata)
        ops.append(
            OpInfo(
                name=instr.name,
                opcode=instr.opcode,
                shape=short_shape(instr.shape),
                source=source,
                frames=frames,
                fusion=fusion_of_computation.get(instr.computation),
                op_name=op_name(metadata),
                computation=instr.computation,
            )
        )
    return ParsedOps(ops, [instr.index for instr in instrs], resolver.raw_files)


def by_line(ops: list[OpInfo]) -> dict[tuple[str, int], list[OpInfo]]:
    """``{(file, line): [ops]}`` in op order, for ops with a known source."""
    table: dict[tuple[str, int], list[OpInfo]] = {}
    for op in ops:
        if op.source is not None:
            table.setdefault(op.source.key, []).append(op)
    return table


def source_text(raw_file: str, line: int) -> str:
    """The text of ``raw_file`` at ``line`` (IPython cells included), or ``""``."""
    return linecache.getline(raw_file, line).strip()
