"""The JAX-level facts of a report (``ErrorReport.jax_context``), one line each: those
JAX's message states, the largest buffers of a call that ran out of memory (traced
again, never run), and where a leaked tracer is stored."""

from __future__ import annotations

import ast
import re
import traceback

from jaxscope._explain.evaluate import MISSING, eval_call_args, eval_callee
from jaxscope._explain.frames import Entry
from jaxscope._explain.messages import ARISES, Tracing, first_line, short_aval
from jaxscope._explain.report import ErrorKind, Operand
from jaxscope._explain.site import Site
from jaxscope._format import format_bytes
from jaxscope._source import short_path, short_place
from jaxscope.compat import errors as _cerrors
from jaxscope.compat.source import is_jax_file

BUFFER = "buffer "
"""The start of a line naming one of the largest buffers."""
MEMORY_FIX = "memory fix: "
"""The start of a line naming a fix the compiled memory model says applies."""
LEAKED_INTO = "leaked into: "
"""The start of the line naming where a leaked tracer is stored."""

_SHAPE_TUPLE = re.compile(r"\((?:\d+(?:, ?\d+)*,?)?\)")
_CREATED_ON = re.compile(r"created on line:?\s*\n?\s*(?P<where>\S+:\d+(?::\d+)?)")
_TRACER_AVAL = re.compile(r"traced array with shape (\S+?)\.?(?:\s|$)")
_BOOL_INDEX_AVAL = re.compile(r"got (bool\[[^\]]*\])")
_DTYPE_BYTES = {
    "bool": 1,
    "bf16": 2,
    "f16": 2,
    "f32": 4,
    "f64": 8,
    "c64": 8,
    "c128": 16,
}
# Kinds whose message may quote the shapes involved.
_SHAPE_KINDS = frozenset(
    {ErrorKind.SHAPE, ErrorKind.DTYPE, ErrorKind.TRANSFORMATION, ErrorKind.JAX_OTHER}
)


def message_context(
    text: str, kind: ErrorKind, tracing: Tracing, operands: tuple[Operand, ...]
) -> tuple[str, ...]:
    """The facts JAX's message (``text``) states, and the operands' types."""
    out: list[str] = []
    aval = _TRACER_AVAL.search(text) or _BOOL_INDEX_AVAL.search(text)
    if aval:
        out.append(f"traced value: {short_aval(aval.group(1))}")
    if tracing.function:
        where = short_path(tracing.file or "")
        out.append(
            f"traced function: {tracing.function} ({where}:{tracing.line}), "
            f"for {tracing.transform}"
        )
    arises = ARISES.search(text)
    if arises:
        out.append(f"arose in {arises.group('what')}")
    out.extend(f"{op.expr}: {op.aval}" for op in operands if op.aval)
    if kind in _SHAPE_KINDS:
        shapes = _SHAPE_TUPLE.findall(first_line(text))
        if len(shapes) >= 2:
            out.append("shapes in JAX's message: " + ", ".join(shapes))
    created = _CREATED_ON.search(text)
    if created:
        out.append(f"tracer created at {short_place(created.group('where'))}")
    return tuple(out)


def probed_context(
    exc: BaseException,
    kind: ErrorKind,
    is_jax: bool,
    text: str,
    inner: Entry | None,
    site: Site,
) -> tuple[str, ...]:
    """The facts found beyond the message: the largest buffers of a call that ran out
    of memory, where a leaked tracer is stored."""
    if kind == ErrorKind.OUT_OF_MEMORY and inner is not None:
        return tuple(largest_buffers(inner, site))
    if kind == ErrorKind.LEAK and is_jax and not text.startswith("Leaked trace"):
        holder = leak_holder(exc, inner.filename if inner is not None else "")
        if holder:
            return (LEAKED_INTO + holder,)
    return ()


def _aval_bytes(aval: str) -> int | None:
    match = re.fullmatch(r"(\w+)\[([\d,]*)\]", aval)
    if match is None:
        return None
    dtype, dims = match.groups()
    size = _DTYPE_BYTES.get(dtype)
    if size is None:
        bits = re.fullmatch(r"[iuf](\d+)", dtype)
        if bits is None:
            return None
        size = max(1, int(bits.group(1)) // 8)
    count = 1
    for d in dims.split(","):
        if d:
            count *= int(d)
    return count * size


def largest_buffers(inner: Entry, site: Site, limit: int = 3) -> list[str]:
    """The largest values of the failing jitted call, traced again (never run)."""
    node = site.node
    if not isinstance(node, ast.Call):
        return []
    callee = eval_callee(node.func, inner.frame)
    parsed = eval_call_args(node, inner.frame)
    if callee is MISSING or parsed is None or not hasattr(callee, "trace"):
        return []
    try:
        traced = callee.trace(*parsed[0], **parsed[1])
    except Exception:
        return []
    at_peak = _buffers_at_peak(traced, limit)
    return at_peak if at_peak else _largest_values(traced, limit)


def _buffers_at_peak(traced: object, limit: int) -> list[str]:
    """The largest buffers live at the compiled program's memory peak (XLA's buffer
    assignment: what really holds memory when it runs out), with their lines."""
    from jaxscope._profile.memory import memory_of_lowered, out_of_memory_facts

    try:
        view = memory_of_lowered(traced.lower())  # type: ignore[attr-defined]
        buffers = view.largest(limit)
        facts, fixes = out_of_memory_facts(view)
    except Exception:  # an explainer never fails because a probe did
        return []
    out: list[str] = []
    for buffer in buffers:
        where = f" at {buffer.source}" if buffer.source is not None else ""
        what = f"argument {buffer.argument}" if buffer.argument else buffer.opcode
        out.append(
            f"{BUFFER}{buffer.shape} ({format_bytes(buffer.bytes)}, {buffer.kind}) "
            f"from {what}{where}, live at the memory peak"
        )
    return out + facts + [MEMORY_FIX + fix for fix in fixes]


def _largest_values(traced: object, limit: int) -> list[str]:
    """The largest values of the traced program (when no compile is possible)."""
    from jaxscope._jaxpr.builder import build_model

    try:
        eqns = build_model(traced.jaxpr).eqns  # type: ignore[attr-defined]
    except Exception:
        return []
    sized = []
    for info in eqns:
        for _name, aval in info.outputs:
            nbytes = _aval_bytes(aval)
            if nbytes:
                sized.append((nbytes, aval, info))
    sized.sort(key=lambda item: -item[0])
    out = []
    for nbytes, aval, info in sized[:limit]:
        where = f" at {info.source}" if info.source is not None else ""
        out.append(
            f"{BUFFER}{aval} ({format_bytes(nbytes)}) from {info.primitive}{where}"
        )
    return out


def leak_holder(exc: BaseException, home_file: str) -> str:
    """Where the leaked tracer of an ``UnexpectedTracerError`` is stored ("" if unknown).

    The tracer is still a local of the JAX frames that raised (kept under IPython's
    ``tracebackhide`` filtering and with filtering off); the leak checker's referrer
    walk names what holds it.
    """
    from jaxscope._leaks.checker import holder_of

    for tb in _cerrors.full_tracebacks(exc):
        for frame, _line in traceback.walk_tb(tb):
            if not is_jax_file(frame.f_code.co_filename):
                continue
            for value in list(frame.f_locals.values()):
                if not type(value).__name__.endswith("Tracer"):
                    continue
                try:
                    found = holder_of(value, home_file=home_file)
                except Exception:
                    return ""
                if found:
                    return str(found[0])
    return ""
