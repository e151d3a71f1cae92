"""What the profile and memory views need of an optimized HLO module beyond
``HloView.ops``: each op's operands, attributes and callees (read by ``_hlo.parse``,
the one HLO reader), its shape in elements, and the user's call stack behind it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from jaxscope._hlo.parse import callees, instructions
from jaxscope._records import OpInfo, SourceLoc
from jaxscope._source import is_library_file

_ARRAY = re.compile(r"\b([a-z][a-z0-9]*)\[([^\]]*)\]")
_HEADER = re.compile(r"^HloModule\s+([\w.\-]+)")
# ops that are no work of the program's: they keep no line
_NO_LINE = frozenset({"parameter", "constant", "tuple", "get-tuple-element"})
_ENTRY = re.compile(r"^ENTRY\s+%?([\w.\-]+)", re.M)
# the name stack JAX gives the ops of the forward pass (``jit(f)/jvp(loss)/dot``)
# and of the backward pass (``jit(f)/transpose(jvp(loss))/dot``)
_BACKWARD = re.compile(r"(?:^|[/(])transpose\(")
_FORWARD = re.compile(r"(?:^|[/(])(?:jvp|linearize)\(")
_PASS_THROUGH = frozenset({"get-tuple-element", "tuple", "bitcast", "copy"})


def is_backward(op_name: str) -> bool:
    """Whether an op's name stack puts it in a backward pass (under ``transpose``)."""
    return _BACKWARD.search(op_name) is not None


def is_forward(op_name: str) -> bool:
    """Whether an op's name stack puts it in a differentiated forward pass."""
    return _FORWARD.search(op_name) is not None and not is_backward(op_name)


def _dims(text: str) -> list[int]:
    return [
        int(d.strip().lstrip("<=")) for d in text.split(",") if d.strip().lstrip("<=")
    ]


def shape_dims(shape: str) -> list[int]:
    """The dimensions of the first array in an HLO shape (``[]`` for a scalar)."""
    match = _ARRAY.search(shape)
    return _dims(match.group(2)) if match is not None else []


def shape_elements(shape: str) -> int:
    """The number of elements of every array in an HLO shape (tuples summed)."""
    return sum(math.prod(_dims(dims)) for _, dims in _ARRAY.findall(shape))


def user_stack(op: OpInfo) -> tuple[SourceLoc, ...]:
    """The frames of ``op`` in the user's own code (no installed library's),
    outermost first; a function that appears again deeper in the stack is one
    frame, at its innermost line (JAX records re-traced bodies under their
    callers again)."""
    out: list[SourceLoc] = []
    for frame in reversed(op.frames):
        if is_library_file(frame.file):
            continue
        seen = [(f.file, f.function) for f in out]
        if (frame.file, frame.function) in seen:
            # a function met again further in: a transform (remat, a loop's
            # backward pass) re-traced it; the stack returns to that frame
            del out[seen.index((frame.file, frame.function)) :]
        out.append(frame)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class OpFacts:
    """One op as the profile and memory views see it.

    ``line`` is where the op's time and buffers are shown: the innermost frame in
    the user's own code (``OpInfo.source``); an op XLA made without source
    metadata (a broadcast of a constant, a layout copy) ``inherited`` the line of
    the op that consumes it. ``stack`` is the user's frames that lead there,
    outermost first.
    """

    op: OpInfo
    is_root: bool
    operands: tuple[str, ...]
    attrs: str
    calls: tuple[str, ...]
    stack: tuple[SourceLoc, ...]
    inherited: SourceLoc | None = None

    @property
    def line(self) -> SourceLoc | None:
        return self.op.source or self.inherited


class ModuleFacts:
    """Every op of an optimized module by name, and the ops of each computation."""

    def __init__(self, view: Any) -> None:
        lines: list[str] = view.text.splitlines()
        header = _HEADER.match(lines[0]) if lines else None
        self.module_name = header.group(1) if header is not None else ""
        entry = _ENTRY.search(view.text)
        self.entry = entry.group(1) if entry is not None else ""
        by_name: dict[str, OpInfo] = {op.name: op for op in view.ops}
        self.ops: dict[str, OpFacts] = {}
        self.by_computation: dict[str, list[OpFacts]] = {}
        for instr in instructions(lines):
            op = by_name.get(instr.name)
            if op is None or instr.name in self.ops:
                continue
            facts = OpFacts(
                op=op,
                is_root=lines[instr.index].lstrip().startswith("ROOT "),
                operands=tuple(instr.operands),
                attrs=instr.attrs,
                calls=tuple(name for name, _ in callees(instr)),
                stack=user_stack(op),
            )
            self.ops[op.name] = facts
        self.users: dict[str, list[str]] = {}
        for facts in self.ops.values():
            for operand in facts.operands:
                self.users.setdefault(operand, []).append(facts.op.name)
        self._inherit_lines()
        for facts in self.ops.values():
            self.by_computation.setdefault(facts.op.computation, []).append(facts)

    def _inherit_lines(self, depth: int = 4) -> None:
        """Give ops without a source the line (and stack) of their nearest consumer."""
        users = self.users
        for name, facts in self.ops.items():
            if facts.op.source is not None or facts.op.opcode in _NO_LINE:
                continue
            frontier = users.get(name, [])
            for _ in range(depth):
                placed = [self.ops[u] for u in frontier if self.ops[u].op.source]
                if placed:
                    self.ops[name] = dataclasses.replace(
                        facts, inherited=placed[0].op.source, stack=placed[0].stack
                    )
                    break
                frontier = [v for u in frontier for v in users.get(u, [])]

    def members(self, fusion: str) -> list[OpFacts]:
        """The ops a fusion computes, nested fusions expanded (their ops, not them)."""
        facts = self.ops.get(fusion)
        if facts is None:
            return []
        out: list[OpFacts] = []
        for computation in facts.calls:
            for member in self.by_computation.get(computation, []):
                if member.op.opcode == "fusion":
                    out.extend(self.members(member.op.name))
                else:
                    out.append(member)
        return out

    def is_residual(self, name: str) -> bool:
        """Whether op ``name`` computes a value of the forward pass that the
        backward pass reads (a residual JAX's autodiff saved): its name stack is
        under ``jvp`` and not ``transpose``, and one of its users (through tuples,
        bitcasts and copies) is under ``transpose``."""
        facts = self.ops.get(name)
        if facts is None or not is_forward(facts.op.op_name):
            return False
        frontier, seen = [name], {name}
        for _ in range(4):
            nxt: list[str] = []
            for user in (u for n in frontier for u in self.users.get(n, [])):
                if user in seen:
                    continue
                seen.add(user)
                op = self.ops[user].op
                if is_backward(op.op_name):
                    return True
                if op.opcode in _PASS_THROUGH:
                    nxt.append(user)
            frontier = nxt
        return False

    @property
    def n_parameters(self) -> int:
        """How many parameters the entry computation takes."""
        return sum(
            f.op.opcode == "parameter" for f in self.by_computation.get(self.entry, [])
        )

    def shape_of(self, name: str) -> str:
        """The shape of op ``name`` (``""`` if there is no such op)."""
        facts = self.ops.get(name)
        return facts.op.shape if facts is not None else ""
