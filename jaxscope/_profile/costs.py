"""An estimate of each op's work: the flops / bytes columns, and the weights that
split a fusion's measured time over the ops it fuses.

XLA's ``cost_analysis()`` totals a whole module; per op the work is estimated here
from shapes the way XLA's HloCostAnalysis counts it: a dot or convolution does two
flops per multiply-add, an elementwise op one flop per element (a transcendental,
``exp``, ``tanh``, ..., one transcendental instead), a reduction one flop per input
element. Bytes are what crosses the op's boundary: operands and result of an op that
runs alone; for an op inside a fusion only the fusion inputs it reads and, for the
fusion's root, the result.

A fusion's time is split in proportion to ``weight = flops + 8 * transcendentals +
elements moved`` (8: a rough ratio of a transcendental to a multiply-add on CPUs and
GPUs). Elements moved count for an unfused copy, transpose or slice, and for a
gather, scatter or in-place update anywhere; inside a fusion other data movement is
index arithmetic and counts nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from jaxscope._hlo.parse import shape_bytes
from jaxscope._profile.hlo_facts import ModuleFacts, OpFacts, shape_dims, shape_elements

TRANSCENDENTAL_WEIGHT = 8.0

TRANSCENDENTAL = frozenset(
    [
        "exponential",
        "exponential-minus-one",
        "log",
        "log-plus-one",
        "logistic",
        "tanh",
        "sine",
        "cosine",
        "tan",
        "atan2",
        "power",
        "sqrt",
        "rsqrt",
        "cbrt",
        "erf",
    ]
)
ELEMENTWISE = frozenset(
    [
        "add",
        "subtract",
        "multiply",
        "divide",
        "remainder",
        "maximum",
        "minimum",
        "negate",
        "abs",
        "sign",
        "compare",
        "select",
        "clamp",
        "and",
        "or",
        "xor",
        "not",
        "shift-left",
        "shift-right-logical",
        "shift-right-arithmetic",
        "floor",
        "ceil",
        "round-nearest-afz",
        "round-nearest-even",
        "convert",
        "popcnt",
        "count-leading-zeros",
        "is-finite",
        "real",
        "imag",
        "complex",
        "stochastic-convert",
        "reduce-precision",
        "rng",
        "rng-bit-generator",
    ]
)
MOVEMENT = frozenset(
    [
        "copy",
        "transpose",
        "gather",
        "scatter",
        "dynamic-slice",
        "dynamic-update-slice",
        "concatenate",
        "pad",
        "slice",
        "reverse",
        "broadcast",
        "iota",
        "select-and-scatter",
    ]
)
# inside a fusion most data movement is index arithmetic; these still move memory
FUSED_MOVEMENT = frozenset(
    ["gather", "scatter", "dynamic-update-slice", "select-and-scatter"]
)
# no work of their own and no bytes of their own: views, tuples, constants
FREE = frozenset(
    [
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "after-all",
        "partition-id",
        "replica-id",
        "opt-barrier",
        "add-dependency",
        "domain",
    ]
)

_CONTRACTING = re.compile(r"\blhs_contracting_dims=\{([\d,]*)\}")
_GEMM_CONTRACTING = re.compile(r'"lhs_contracting_dimensions":\[([^\]]*)\]')
_DIM_LABELS = re.compile(r"\bdim_labels=\w*_(\w+)->")
_WINDOW_SIZE = re.compile(r"\bwindow=\{size=([\dx]+)")


@dataclass(frozen=True, slots=True)
class OpCost:
    """The estimated work of one execution of one op."""

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_accessed: float = 0.0
    moved: float = 0.0

    @property
    def weight(self) -> float:
        """The op's share-of-time weight inside a fusion (see the module docstring)."""
        return self.flops + TRANSCENDENTAL_WEIGHT * self.transcendentals + self.moved

    def __add__(self, other: OpCost) -> OpCost:
        return OpCost(
            self.flops + other.flops,
            self.transcendentals + other.transcendentals,
            self.bytes_accessed + other.bytes_accessed,
            self.moved + other.moved,
        )


def _ints(text: str) -> list[int]:
    return [int(t) for t in re.split(r"[,x\s\"]+", text) if t.strip().isdigit()]


def _operand_dims(facts: OpFacts, module: ModuleFacts, index: int) -> list[int]:
    if index >= len(facts.operands):
        return []
    return shape_dims(module.shape_of(facts.operands[index]))


def _contracted(facts: OpFacts, module: ModuleFacts) -> int:
    """The product of the contracted dimensions of a dot (or cuBLAS gemm) lhs."""
    found = _CONTRACTING.search(facts.attrs) or _GEMM_CONTRACTING.search(facts.attrs)
    lhs = _operand_dims(facts, module, 0)
    if found is None or not lhs:
        return 1
    return math.prod(lhs[d] for d in _ints(found.group(1)) if d < len(lhs))


def _conv_macs(facts: OpFacts, module: ModuleFacts) -> int:
    """Multiply-adds per output element of a convolution: the kernel's size over its
    output-feature dimension."""
    rhs = _operand_dims(facts, module, 1)
    labels = _DIM_LABELS.search(facts.attrs)
    if not rhs or labels is None or "o" not in labels.group(1):
        return 1
    out_at = labels.group(1).index("o")
    return math.prod(rhs) // max(1, rhs[out_at] if out_at < len(rhs) else 1)


def _flops(facts: OpFacts, module: ModuleFacts) -> tuple[float, float, float]:
    """``(flops, transcendentals, elements moved)`` of one execution of ``facts``."""
    opcode, out = facts.op.opcode, shape_elements(facts.op.shape)
    if opcode in TRANSCENDENTAL:
        return 0.0, float(out), 0.0
    if opcode in ELEMENTWISE:
        return float(out), 0.0, 0.0
    if opcode == "dot":
        return 2.0 * out * _contracted(facts, module), 0.0, 0.0
    if opcode == "convolution":
        return 2.0 * out * _conv_macs(facts, module), 0.0, 0.0
    if opcode == "custom-call":
        if "dim_labels=" in facts.attrs:
            return 2.0 * out * _conv_macs(facts, module), 0.0, 0.0
        if "contracting_dim" in facts.attrs:
            first = math.prod(shape_dims(facts.op.shape))
            return 2.0 * first * _contracted(facts, module), 0.0, 0.0
        return 0.0, 0.0, float(out)
    if opcode in ("reduce", "all-reduce", "reduce-scatter"):
        inputs = facts.operands[: max(1, len(facts.operands) // 2)]
        return float(sum(shape_elements(module.shape_of(n)) for n in inputs)), 0.0, 0.0
    if opcode == "reduce-window":
        window = _WINDOW_SIZE.search(facts.attrs)
        size = math.prod(_ints(window.group(1))) if window is not None else 1
        return float(out * size), 0.0, 0.0
    if opcode == "sort":
        n = math.prod(shape_dims(facts.op.shape))
        return float(n * max(1.0, math.log2(max(n, 2)))), 0.0, 0.0
    if facts.op.fusion is not None and opcode not in FUSED_MOVEMENT:
        return 0.0, 0.0, 0.0
    if opcode == "dynamic-update-slice" and len(facts.operands) > 1:
        return 0.0, 0.0, float(shape_elements(module.shape_of(facts.operands[1])))
    if opcode in MOVEMENT:
        return 0.0, 0.0, float(out)
    return 0.0, 0.0, 0.0


def op_cost(facts: OpFacts, module: ModuleFacts) -> OpCost:
    """The estimated work of one execution of ``facts`` (a fusion: of its members)."""
    if facts.op.opcode == "fusion":
        total = OpCost()
        for member in module.members(facts.op.name):
            total = total + op_cost(member, module)
        return total
    if facts.op.opcode in FREE:
        return OpCost()
    flops, transcendentals, moved = _flops(facts, module)
    return OpCost(flops, transcendentals, _boundary_bytes(facts, module), moved)


def _boundary_bytes(facts: OpFacts, module: ModuleFacts) -> float:
    fused = facts.op.fusion is not None
    total = 0
    for name in facts.operands:
        operand = module.ops.get(name)
        if operand is None:
            continue
        if not fused or operand.op.opcode == "parameter":
            total += shape_bytes(operand.op.shape)
    if not fused or facts.is_root:
        total += shape_bytes(facts.op.shape)
    return float(total)
