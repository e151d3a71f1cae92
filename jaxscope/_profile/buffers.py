"""XLA's buffer assignment of a compiled module, read from its debug dump.

Compiling with ``compiler_options={"xla_dump_to": DIR, "xla_dump_hlo_as_text": True}``
makes XLA write, per module, ``*after_optimizations-buffer-assignment.txt`` (every
allocation: its size, its kind, and the HLO values placed in it at an offset) and
``*after_optimizations-live-range.txt`` (the flattened schedule and each value's live
range ``first-last`` over it, both ends included). Nothing else is changed: the
options only add the dump, and the directory is removed afterwards.

Memory over the schedule is modelled as XLA allocates it: argument and output
allocations exist for the whole run; temporaries share an arena where a value
occupies ``[offset, offset + size)`` while it is live. Values at the same offset and
size that are live together (a bitcast, a loop-carried phi) are one buffer.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from typing import Any

from jaxscope._exceptions import HloError
from jaxscope._profile.compiling import compile_lowered
from jaxscope._staging import compile_dumping

_ALLOCATION = re.compile(r"^allocation (\d+): size (\d+)(.*):\s*$")
_VALUE = re.compile(
    r"^\s*value: <(\d+) (\S+?)(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\): (.*)$"
)
_PARAMETER = re.compile(r"\bparameter (\d+)")
_SEQUENCE_ROW = re.compile(r"^\s+(\d+):(\S+)\s*$")
_RANGE_ROW = re.compile(r"^\s+(\S+):(-?\d+)-(-?\d+)\s*$")


@dataclass(frozen=True, slots=True)
class Value:
    """An HLO value placed in an allocation: ``name`` is ``instr`` or ``instr{i}``."""

    name: str
    instruction: str
    size: int
    offset: int
    shape: str


@dataclass(frozen=True, slots=True)
class Allocation:
    """One allocation: ``kind`` is ``parameter``, ``output``, ``temp``, ``constant``
    or ``thread-local``; ``live_out`` marks a parameter the outputs reuse."""

    index: int
    size: int
    kind: str
    parameter: int | None
    live_out: bool
    values: tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class BufferDump:
    """A module's allocations, its schedule and each value's live range."""

    allocations: list[Allocation]
    schedule: list[str]
    ranges: dict[str, tuple[int, int]]


def _kind(flags: str) -> tuple[str, int | None, bool]:
    parameter = _PARAMETER.search(flags)
    live_out = "maybe-live-out" in flags or "output shape" in flags
    if parameter is not None:
        return "parameter", int(parameter.group(1)), live_out
    if "constant" in flags:
        return "constant", None, live_out
    if "thread-local" in flags:
        return "thread-local", None, live_out
    if live_out:
        return "output", None, live_out
    return "temp", None, live_out


def _value_key(name: str) -> str:
    return name if name.endswith("}") else name + "{}"


def parse_buffer_assignment(text: str) -> list[Allocation]:
    """The allocations of a ``*-buffer-assignment.txt`` dump."""
    allocations: list[Allocation] = []
    current: dict[str, Any] | None = None
    values: list[Value] = []

    def close() -> None:
        if current is not None:
            allocations.append(Allocation(values=tuple(values), **current))

    for line in text.splitlines():
        header = _ALLOCATION.match(line)
        if header is not None:
            close()
            kind, parameter, live_out = _kind(header.group(3))
            current = {
                "index": int(header.group(1)),
                "size": int(header.group(2)),
                "kind": kind,
                "parameter": parameter,
                "live_out": live_out,
            }
            values = []
            continue
        value = _VALUE.match(line)
        if value is not None and current is not None:
            name = value.group(2)
            values.append(
                Value(
                    name=_value_key(name),
                    instruction=name.split("{", 1)[0],
                    size=int(value.group(3)),
                    offset=int(value.group(4)),
                    shape=value.group(5).strip(),
                )
            )
        elif line and not line.startswith(" ") and current is not None:
            close()  # the sections after the allocations ("Used values:", totals)
            current = None
    close()
    return allocations


def parse_live_ranges(text: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """``(schedule, {value: (first, last)})`` of a ``*-live-range.txt`` dump."""
    schedule: list[str] = []
    ranges: dict[str, tuple[int, int]] = {}
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped in ("InstructionSequence:", "BufferLiveRange:"):
            section = stripped
            continue
        if stripped.startswith("Live ranges at") or stripped.startswith("Stack trace"):
            section = ""
            continue
        if section == "InstructionSequence:":
            row = _SEQUENCE_ROW.match(line)
            if row is not None:
                schedule.append(row.group(2))
        elif section == "BufferLiveRange:":
            row = _RANGE_ROW.match(line)
            if row is not None:
                ranges[_value_key(row.group(1))] = (
                    int(row.group(2)),
                    int(row.group(3)),
                )
    return schedule, ranges


def _newest(paths: list[str], module: str) -> str | None:
    mine = [p for p in paths if f".{module}." in os.path.basename(p)] or paths
    return max(mine, key=lambda p: (os.path.getmtime(p), p)) if mine else None


def _read_dump(directory: str, module: str) -> BufferDump | None:
    pattern = os.path.join(
        directory, "**", "*after_optimizations-buffer-assignment.txt"
    )
    assignment = _newest(glob.glob(pattern, recursive=True), module)
    if assignment is None:
        return None
    live = assignment[: -len("buffer-assignment.txt")] + "live-range.txt"
    with open(assignment, encoding="utf-8", errors="replace") as handle:
        allocations = parse_buffer_assignment(handle.read())
    schedule: list[str] = []
    ranges: dict[str, tuple[int, int]] = {}
    if os.path.exists(live):
        with open(live, encoding="utf-8", errors="replace") as handle:
            schedule, ranges = parse_live_ranges(handle.read())
    return BufferDump(allocations, schedule, ranges)


def _module_name(compiled: Any) -> str:
    first = compiled.as_text().split("\n", 1)[0]
    match = re.match(r"HloModule\s+([\w.\-]+)", first)
    return match.group(1) if match is not None else ""


def compile_with_dump(lowered: Any) -> tuple[Any, BufferDump]:
    """Compile ``lowered`` with XLA's dump on; its executable and buffer assignment
    (a persistent-cache hit is compiled again, as ``compile_dumping`` says)."""
    compiled, dump = compile_dumping(
        lowered,
        {"xla_dump_hlo_as_text": True},
        lambda folder, compiled: _read_dump(folder, _module_name(compiled)),
        prefix="jaxscope-memory-",
        compile=compile_lowered,
    )
    if dump is None:
        raise HloError(
            "XLA wrote no buffer assignment for this program (xla_dump_to gave no "
            "*buffer-assignment.txt); js.memory needs an XLA backend that dumps it"
        )
    return compiled, dump
