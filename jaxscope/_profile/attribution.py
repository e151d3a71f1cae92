"""Measured op times → time per source line and per function of the user's code.

An op's time goes to the line that produced it; a fusion's time is split over its
members' lines in proportion to their estimated cost (``costs.py``). Collectives,
copies and host transfers keep their kind so they can be shown as their own rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jaxscope._profile.costs import FREE, op_cost
from jaxscope._profile.events import CONTROL_OPCODES, DeviceTimes
from jaxscope._profile.hlo_facts import ModuleFacts, OpFacts
from jaxscope._profile.records import FunctionTime, Hotspot, LineTime, OpTime
from jaxscope._records import SourceLoc

COLLECTIVES = frozenset(
    [
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "all-to-all",
        "collective-permute",
        "collective-broadcast",
        "ragged-all-to-all",
    ]
)
_TRANSFERS = frozenset(["send", "recv", "infeed", "outfeed"])
_HOST_TARGET = re.compile(r'custom_call_target="[^"]*(?:[Cc]allback|Host|host)')


def op_kind(facts: OpFacts, module: ModuleFacts, depth: int = 0) -> str:
    """``compute``, ``collective``, ``copy``, ``transfer`` or ``control``."""
    opcode = facts.op.opcode
    base = opcode.removesuffix("-start").removesuffix("-done").removesuffix("-update")
    if base in COLLECTIVES:
        return "collective"
    if base == "copy":
        return "copy"
    if base in _TRANSFERS or (
        opcode == "custom-call" and _HOST_TARGET.search(facts.attrs) is not None
    ):
        return "transfer"
    if opcode in CONTROL_OPCODES:
        return "control"
    if depth < 4 and (base == "async" or opcode == "fusion"):
        inner = [
            op_kind(member, module, depth + 1)
            for computation in facts.calls
            for member in module.by_computation.get(computation, [])
        ]
        for kind in ("collective", "transfer", "copy"):
            if kind in inner and (base == "async" or kind == "collective"):
                return kind
    return "compute"


@dataclass(slots=True)
class _LineAcc:
    function: str | None = None
    time: float = 0.0
    count: float = 0.0
    ops: dict[str, None] = field(default_factory=dict)
    fusions: dict[str, None] = field(default_factory=dict)
    flops: float = 0.0
    bytes_accessed: float = 0.0
    kinds: dict[str, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Node:
    file: str = ""
    time: float = 0.0
    self_time: float = 0.0
    children: dict[tuple[str, str], _Node] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Attribution:
    """Every timed op, line and function of one profile (seconds per run)."""

    ops: list[OpTime]
    lines: list[LineTime]
    functions: FunctionTime
    total: float
    unattributed: float


def mean_times(times: Mapping[int, DeviceTimes]) -> dict[str, tuple[float, float]]:
    """``{op: (seconds per run, executions per run)}``, averaged over devices."""
    out: dict[str, list[float]] = {}
    n = max(1, len(times))
    for device in times.values():
        runs = max(1, device.runs)
        for op, ns in device.op_ns.items():
            acc = out.setdefault(op, [0.0, 0.0])
            acc[0] += ns / 1e9 / runs / n
            acc[1] += device.op_count.get(op, 0) / runs / n
    return {op: (t, c) for op, (t, c) in out.items()}


def _portions(facts: OpFacts, module: ModuleFacts) -> list[tuple[OpFacts, float]]:
    """How ``facts``' time splits: ``(op whose line gets it, fraction)``."""
    if facts.op.opcode != "fusion":
        return [(facts, 1.0)]
    members = module.members(facts.op.name)
    weights = [(m, op_cost(m, module).weight) for m in members]
    total = sum(w for _, w in weights)
    if total > 0:
        return [(m, w / total) for m, w in weights if w > 0]
    placed = [m for m in members if m.line is not None]
    if placed:
        return [(m, 1.0 / len(placed)) for m in placed]
    return [(facts, 1.0)]


class _Builder:
    def __init__(self, module: ModuleFacts) -> None:
        self.module = module
        self.lines: dict[tuple[str, int], _LineAcc] = {}
        self.root = _Node()
        self.ops: list[OpTime] = []
        self.unattributed = 0.0

    def add(self, facts: OpFacts, seconds: float, count: float) -> None:
        kind = op_kind(facts, self.module)
        cost = op_cost(facts, self.module)
        to_lines: dict[tuple[str, int] | None, list[Any]] = {}
        for member, fraction in _portions(facts, self.module):
            line = member.line or facts.line
            stack = member.stack or facts.stack or ((line,) if line else ())
            share = seconds * fraction
            key = line.key if line is not None else None
            to_lines.setdefault(key, [line, 0.0])[1] += share
            self._tree(stack, share)
            if line is None:
                self.unattributed += share
                continue
            self._line(line, member, facts, kind, share, count)
        self.ops.append(
            OpTime(
                name=facts.op.name,
                opcode=facts.op.opcode,
                kind=kind,
                source=facts.line,
                time=seconds,
                count=count,
                flops=cost.flops * count,
                bytes_accessed=cost.bytes_accessed * count,
                members=tuple(
                    m.op.name
                    for m in self.module.members(facts.op.name)
                    if m.op.opcode not in FREE
                ),
                lines=tuple((loc, seconds) for loc, seconds in to_lines.values()),
            )
        )

    def _line(
        self,
        line: SourceLoc,
        member: OpFacts,
        facts: OpFacts,
        kind: str,
        share: float,
        count: float,
    ) -> None:
        acc = self.lines.setdefault(line.key, _LineAcc(function=line.function))
        cost = op_cost(member, self.module)
        acc.time += share
        acc.count = max(acc.count, count)
        acc.ops[member.op.name] = None
        if facts.op.opcode == "fusion":
            acc.fusions[facts.op.name] = None
        acc.flops += cost.flops * count
        acc.bytes_accessed += cost.bytes_accessed * count
        acc.kinds[kind] = acc.kinds.get(kind, 0.0) + share

    def _tree(self, stack: tuple[SourceLoc | None, ...], share: float) -> None:
        node = self.root
        node.time += share
        frames = [f for f in stack if f is not None]
        if not frames:
            node = node.children.setdefault(("(no source line)", ""), _Node())
            node.time += share
            node.self_time += share
            return
        for frame in frames:
            key = (frame.function or "?", frame.file)
            node = node.children.setdefault(key, _Node(file=frame.file))
            node.time += share
        node.self_time += share


def _freeze(name: str, node: _Node, total: float) -> FunctionTime:
    children = sorted(node.children.items(), key=lambda kv: -kv[1].time)
    return FunctionTime(
        function=name,
        file=node.file,
        time=node.time,
        self_time=node.self_time,
        share=node.time / total if total else 0.0,
        children=tuple(_freeze(key[0], child, total) for key, child in children),
    )


def attribute(
    module: ModuleFacts,
    times: Mapping[int, DeviceTimes],
    code_of: Callable[[str, int], str],
) -> Attribution:
    """Op, line and function times of the devices in ``times`` (their mean)."""
    builder = _Builder(module)
    for name, (seconds, count) in sorted(mean_times(times).items()):
        facts = module.ops.get(name)
        if facts is not None:
            if facts.op.computation == module.entry:
                # runs once per run; on GPU one op may launch several kernels
                count = min(count, 1.0)
            builder.add(facts, seconds, count)
    total = sum(op.time for op in builder.ops)
    lines = [
        LineTime(
            file=key[0],
            line=key[1],
            function=acc.function,
            code=code_of(key[0], key[1]),
            time=acc.time,
            share=acc.time / total if total else 0.0,
            count=acc.count,
            ops=tuple(acc.ops),
            fusions=tuple(acc.fusions),
            flops=acc.flops,
            bytes_accessed=acc.bytes_accessed,
            kinds=acc.kinds,
        )
        for key, acc in builder.lines.items()
    ]
    lines.sort(key=lambda line: (-line.time, line.file, line.line))
    builder.ops.sort(key=lambda op: -op.time)
    return Attribution(
        ops=builder.ops,
        lines=lines,
        functions=_freeze("(all)", builder.root, total),
        total=total,
        unattributed=builder.unattributed,
    )


def ops_at(ops: list[OpTime], key: tuple[str, int]) -> list[tuple[OpTime, float]]:
    """The ops whose time went (in part) to the line ``key``, with that time."""
    out = [
        (op, seconds)
        for op in ops
        for loc, seconds in op.lines
        if loc is not None and loc.key == key
    ]
    out.sort(key=lambda item: -item[1])
    return out


def hotspots(
    attribution: Attribution, code_of: Callable[[str, int], str]
) -> list[Hotspot]:
    """Every source line (its compute) and, as their own rows, each collective,
    copy and host transfer op; most time first."""
    total = attribution.total or 1.0
    rows: list[Hotspot] = []
    for line in attribution.lines:
        compute = line.kinds.get("compute", 0.0) + line.kinds.get("control", 0.0)
        if compute > 0:
            where = SourceLoc(file=line.file, line=line.line, function=line.function)
            rows.append(
                Hotspot(
                    kind="line",
                    time=compute,
                    share=compute / total,
                    source=where,
                    code=line.code,
                    ops=line.ops,
                )
            )
    for op in attribution.ops:
        if op.kind in ("collective", "copy", "transfer") and op.time > 0:
            code = code_of(op.source.file, op.source.line) if op.source else ""
            rows.append(
                Hotspot(
                    kind=op.kind,
                    time=op.time,
                    share=op.time / total,
                    source=op.source,
                    code=code,
                    ops=(op.name,),
                )
            )
    rows.sort(key=lambda row: -row.time)
    return rows
