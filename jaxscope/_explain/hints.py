"""The message and the hint of a report: one pure builder per ``ErrorKind``.

Each builder reads the facts gathered about the error and returns a new
``Explanation``; nothing it is given is changed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from jaxscope._explain.context import BUFFER, LEAKED_INTO, MEMORY_FIX
from jaxscope._explain.facts import Explanation, Facts, sentence
from jaxscope._explain.fixes import (
    assignment_fix,
    branch_fix,
    condition_text,
    names,
    nan_guard,
    np_calls,
    shape_hint,
    static_hint,
)
from jaxscope._explain.known import known_message
from jaxscope._explain.library_hints import library_hint
from jaxscope._explain.messages import ARISES, LEAKED_IN, NAN_IN, first_line
from jaxscope._explain.report import ErrorKind, Operand
from jaxscope._explain.sharding_hints import sharding_explanation
from jaxscope._explain.transfer_hints import donated, trace_level, unbound_axis
from jaxscope._explain.wrappers import FieldFix, library_of
from jaxscope._format import format_bytes
from jaxscope._source import short_path

__all__ = ["Explanation", "Facts", "explanation"]

_DTYPES = re.compile(r"got ((?:[a-z]+\d*(?:, | and )?){2,})")
_BYTES = re.compile(r"allocat\w* (?P<n>\d+) bytes")
_TIP = re.compile(r"((?:Try|Consider|Use|Instead)\b[^\n]*)")
_REFERRED_BY = re.compile(r"is referred to by ([^\s<][^\s]*)")
_JIT_TRANSFORMS = ("jit", "pjit", "pmap")
# Equinox's runtime errors (eqx.error_if) put the error's own line after the stacks.
_RAISED_INSIDE = re.compile(r"^equinox\.EquinoxRuntimeError: (.+)$", re.MULTILINE)


def explanation(facts: Facts) -> Explanation:
    """The message and hint for ``facts``: JAX's first line and no hint for a kind
    without its own builder."""
    builder = _BUILDERS.get(facts.kind)
    explained = (
        builder(facts)
        if builder is not None
        else Explanation(first_line(facts.text), "")
    )
    library = library_hint(facts.text, facts.library)
    if library:
        return Explanation(explained.message, library, explained.extra_context)
    return explained


@dataclass(frozen=True, slots=True)
class _Phrases:
    """The pieces of a message about a traced value: `` in f``, `` (traced for
    jit)``, ``; it depends on argument n``, the "mark it static" advice (only when
    every argument behind the value was a Python value at the call) and the
    arguments that were arrays."""

    in_fn: str
    under: str
    depends: str
    static_part: str
    arrays: tuple[str, ...] = ()
    transform: str = ""
    unhashable: tuple[str, ...] = ()


def _phrases(facts: Facts) -> _Phrases:
    tracing = facts.tracing
    fn = tracing.function.rsplit(".", 1)[-1] if tracing.function else None
    args = tracing.arguments
    plural = "s" if len(args) > 1 else ""
    library = library_of(facts.wrapper)
    transform = facts.wrapper if library != "jax" else tracing.transform
    bases = list(dict.fromkeys(re.split(r"[\[.]", a, maxsplit=1)[0] for a in args))
    arrays = tuple(
        b for b in bases if b not in facts.statics and b not in facts.unhashable
    )
    unhashable = tuple(b for b in bases if b in facts.unhashable)
    if library == "eqx":
        static_part = _eqx_static_part(args, facts.fields)
    elif fn and tracing.transform in _JIT_TRANSFORMS and not arrays + unhashable:
        jit = facts.wrapper if facts.wrapper == "nnx.jit" else "jax.jit"
        static_part = _static_part(args, static_hint(fn, args, facts.code, jit))
    else:
        static_part = ""
    return _Phrases(
        in_fn=f" in {fn}" if fn else "",
        under=f" (traced for {transform})" if transform else "",
        depends=f"; it depends on argument{plural} {names(args)}" if args else "",
        static_part=static_part,
        arrays=arrays if library != "eqx" else (),
        transform=transform or "",
        unhashable=unhashable if library != "eqx" else (),
    )


def _static_part(args: tuple[str, ...], static: str) -> str:
    if not static:
        return ""
    one = len(args) == 1
    return (
        f"if {names(args)} {'is a Python value' if one else 'are Python values'} "
        f"(a flag, a size, a mode), mark {'it' if one else 'them'} static: {static}; "
        "otherwise "
    )


def _eqx_static_part(args: tuple[str, ...], fields: tuple[FieldFix, ...]) -> str:
    fix = next((f for f in fields if f.path in args), None)
    if fix is not None:
        return (
            f"if {fix.path} is a Python value (a flag, a size, a mode), store one there, "
            "not an array (eqx.filter_jit keeps non-array fields static), or declare "
            f"the field static in class {fix.cls}: `{fix.declaration}`; otherwise "
        )
    if not args or any(c in a for a in args for c in ".["):
        return ""
    one = len(args) == 1
    return (
        f"if {names(args)} {'is a Python value' if one else 'are Python values'} "
        f"(a flag, a size, a mode), pass {'it' if one else 'them'} as a Python "
        "bool/int/float, not an array: eqx.filter_jit keeps non-array arguments "
        "static; otherwise "
    )


def _bool_conversion(facts: Facts) -> Explanation:
    p = _phrases(facts)
    construct, cond = condition_text(facts.site)
    cond = cond or "the condition"
    if facts.tracing.transform == "vmap":
        message = (
            f"Python `{construct}` on `{cond}`, which is batched by vmap: "
            "each example may differ"
        )
    else:
        message = (
            f"Python `{construct}` needs a concrete True/False, but `{cond}` is a "
            f"traced value{p.in_fn}{p.under}{p.depends}"
        )
    if construct == "while":
        hint = f"{p.static_part}use jax.lax.while_loop(lambda s: {cond}, body, init)"
        return Explanation(message, sentence(hint))
    array_form = _array_branch(facts, cond)
    if p.static_part:
        hint = p.static_part + array_form
    elif p.arrays:
        under = f"under {p.transform}, " if p.transform else ""
        hint = (
            f"{under}{names(p.arrays)} {'holds' if len(p.arrays) == 1 else 'hold'} "
            f"arrays, so `{cond}` has no Python value and static_argnums cannot "
            f"help: {array_form}"
        )
    elif p.unhashable:
        one = len(p.unhashable) == 1
        hint = (
            f"the argument{'' if one else 's'} {names(p.unhashable)} "
            f"{'is a container' if one else 'are containers'} of Python values that static_argnums cannot hash (a dict or a list): "
            "pass a tuple (or a frozen dataclass) and mark it static, or "
            f"{array_form}"
        )
    else:
        hint = array_form
    return Explanation(message, sentence(hint))


def _array_branch(facts: Facts, cond: str) -> str:
    """The failing branch written with arrays, in the user's names where the code
    has a shape ``branch_fix`` knows."""
    fix = branch_fix(facts.site)
    if fix is None and cond == "the condition":
        return (
            "compute both sides and select with jnp.where(condition, a, b), or "
            "branch with jax.lax.cond(condition, true_fn, false_fn, *operands)"
        )
    if fix is None:
        return (
            f"compute both sides and select with jnp.where({cond}, a, b) (a: the "
            f"value when true, b: when false), or branch with "
            f"jax.lax.cond({cond}, true_fn, false_fn, *operands)"
        )
    same = f" (here the same as `{fix.extreme}`)" if fix.extreme else ""
    return (
        f"write the branch as array code: `{fix.where}`{same}, or with a branch "
        f"that runs only one side: `{fix.cond}`"
    )


def _int_conversion(facts: Facts) -> Explanation:
    p = _phrases(facts)
    site = facts.site
    expr = site.text(site.node) if site.node is not None else "the index"
    message = (
        f"A traced integer was used as a Python index or size in `{expr}`"
        f"{p.in_fn}{p.under}{p.depends}"
    )
    hint = (
        f"{p.static_part}index an array instead of a Python list/tuple "
        f"(jnp.asarray(seq)[i], jax.lax.dynamic_slice, jnp.take)"
    )
    return Explanation(message, sentence(hint))


def _array_conversion(facts: Facts) -> Explanation:
    p = _phrases(facts)
    site = facts.site
    fixes = [
        f"{np_text} → {jnp_text}" for np_text, jnp_text in np_calls(site) if jnp_text
    ]
    expr = site.text(site.node) if site.node is not None else "a NumPy call"
    message = (
        "NumPy tried to turn a traced array into a numpy.ndarray in "
        f"`{expr}`{p.in_fn}{p.under}"
    )
    if fixes:
        hint = (
            "Use jax.numpy, which traces: "
            + ", ".join(fixes)
            + " (import jax.numpy as jnp)"
        )
    else:
        hint = (
            "Use the jax.numpy equivalent of the NumPy call (import jax.numpy as jnp); "
            "to run real NumPy code on the values use jax.pure_callback, or move the "
            "conversion outside the jitted function"
        )
    return Explanation(message, hint)


def _bool_index(facts: Facts) -> Explanation:
    p = _phrases(facts)
    site = facts.site
    arr, mask = "x", "mask"
    if isinstance(site.node, ast.Subscript):
        arr, mask = site.text(site.node.value), site.text(site.node.slice)
    message = (
        f"Boolean mask indexing `{arr}[{mask}]` has a data-dependent shape, which "
        f"cannot be traced{p.in_fn}{p.under}"
    )
    hint = (
        f"Keep the shape: `jnp.where({mask}, {arr}, 0)`, or reduce with "
        f"`jnp.sum({arr}, where={mask})`; if you need the selected items, give their "
        f"count statically: {arr}[jnp.nonzero({mask}, size=N, fill_value=0)] with N "
        "the largest count"
    )
    return Explanation(message, hint)


def _concretization(facts: Facts) -> Explanation:
    p = _phrases(facts)
    arises = ARISES.search(facts.text)
    what = f" ({arises.group('what')})" if arises else ""
    expr = facts.site.text(facts.site.node)
    at = f" in `{expr}`" if expr else ""
    message = (
        f"A concrete Python value was needed{at}{what}, but it is traced"
        f"{p.in_fn}{p.under}{p.depends}"
    )
    hint = (
        f"{p.static_part}keep the value as an array (jnp operations, "
        f"jax.lax.cond / jnp.where for branches) or compute shapes from static data "
        f"(x.shape) rather than from array values"
    )
    return Explanation(message, sentence(hint))


def _item_assignment(facts: Facts) -> Explanation:
    site = facts.site
    fix = assignment_fix(site)
    stmt_text = site.text(site.stmt).strip()
    message = "JAX arrays are immutable: in-place item assignment is not supported"
    if stmt_text:
        message += f" (`{stmt_text}`)"
    if fix:
        hint = f"Write `{fix}`: .at[] returns an updated copy (under jit XLA updates in place)"
    else:
        hint = (
            "Use x = x.at[idx].set(value) (or .add/.multiply/.min/.max): "
            ".at[] returns an updated copy"
        )
    return Explanation(message, hint)


def _jax_message(facts: Facts) -> Explanation:
    """JAX's own first line, at the user's expression, with the operands' types."""
    first = first_line(facts.text)
    expr = facts.site.text(facts.site.node)
    described = ", ".join(f"{o.expr}: {o.aval}" for o in facts.operands if o.aval)
    message = first
    if expr:
        message = f"{first} — in `{expr}`" + (f" with {described}" if described else "")
    return Explanation(message, _jax_message_hint(facts, first))


def _jax_message_hint(facts: Facts, first: str) -> str:
    known = known_message(first, facts.text, facts.operands, facts.fields)
    if known is not None:
        return known.hint
    if facts.kind == ErrorKind.DTYPE:
        return _dtype_hint(first, facts.operands)
    if facts.kind == ErrorKind.SHAPE:
        return shape_hint(facts.site, facts.operands)
    if facts.kind == ErrorKind.TRANSFORMATION:
        tip = _TIP.search(facts.text)
        if tip:
            return tip.group(1)
        return (
            "This line's operation cannot be transformed as asked; "
            "restructure it or apply the transformation to a smaller function"
        )
    return ""


def _dtype_hint(first: str, operands: tuple[Operand, ...]) -> str:
    dtypes = _DTYPES.search(first)
    got = f" ({dtypes.group(1)})" if dtypes else ""
    exprs = [o.expr for o in operands]
    cast = (
        f"`{exprs[1]}.astype({exprs[0]}.dtype)`"
        if len(exprs) >= 2
        else "x.astype(y.dtype)"
    )
    return (
        f"The operands have different dtypes{got}: cast one explicitly, e.g. "
        f"{cast}, or use the jnp version of the op, which promotes types"
    )


def _leak(facts: Facts) -> Explanation:
    leak = LEAKED_IN.search(facts.text)
    tracing = facts.tracing
    leaked_from = ""
    if leak:
        loc = f"{short_path(leak.group('file'))}:{leak.group('line')}"
        leaked_from = f" from {leak.group('fn')} ({loc}, traced for {leak.group('tr')})"
    elif tracing.function:
        leaked_from = f" from {tracing.function} (traced for {tracing.transform})"
    holders = list(
        dict.fromkeys(
            h for h in _REFERRED_BY.findall(facts.text) if not h.startswith("<")
        )
    )
    stored = [
        c.removeprefix(LEAKED_INTO) for c in facts.context if c.startswith(LEAKED_INTO)
    ]
    extra: tuple[str, ...] = ()
    if holders:
        message = f"A tracer escaped{leaked_from}: it is still referenced by {', '.join(holders)}"
        extra = (LEAKED_INTO + ", ".join(holders),)
    elif stored:
        message = f"A tracer escaped{leaked_from}: it is still stored in {stored[0]}"
    else:
        message = f"A tracer escaped{leaked_from} and is used after its trace ended"
    fn = leak.group("fn") if leak else tracing.function or "the transformed function"
    hint = (
        f"Return the value from {fn} "
        "instead of storing it in a global, a list or an attribute (self.x = ...); "
        "run the code inside `with js.check_leaks():` (or the %%leaks cell magic) to see "
        "where it was stored"
    )
    return Explanation(message, hint, extra)


def _nan(facts: Facts) -> Explanation:
    nan = NAN_IN.search(facts.text)
    prim = nan.group("prim") if nan else "an operation"
    what = nan.group("what") if nan else "nan"
    where = f" at {facts.user_frame}" if facts.user_frame is not None else ""
    message = f"`{prim}` produced {what}{where} (jax_debug_nans)"
    line = facts.site.text(facts.site.stmt).strip()
    hint = (
        f"Guard the input of {prim}"
        + (f" in `{line}`" if line else "")
        + f", e.g. {nan_guard(prim, facts.site)}; js.step(f)(...).break_on(nan=True) steps to it "
        "with concrete values"
    )
    return Explanation(message, hint, (f"first {what}-producing primitive: {prim}",))


def _out_of_memory(facts: Facts) -> Explanation:
    nbytes = _BYTES.search(facts.text)
    where = f" (called at {facts.user_frame})" if facts.user_frame is not None else ""
    message = f"The device ran out of memory allocating{where}"
    extra: tuple[str, ...] = ()
    if nbytes:
        size = format_bytes(int(nbytes.group("n")))
        message = f"The device ran out of memory allocating {size}{where}"
        extra = (f"requested: {size} ({nbytes.group('n')} bytes)",)
    biggest = next((c for c in facts.context if c.startswith(BUFFER)), "")
    fixes = [
        c.removeprefix(MEMORY_FIX) for c in facts.context if c.startswith(MEMORY_FIX)
    ]
    hint = (
        (f"The largest {biggest.removeprefix(BUFFER)}. " if biggest else "")
        + "".join(f"{fix}. " for fix in fixes)
        + "Reduce the batch or array sizes; free buffers you no longer need (del x, "
        "donate_argnums in jax.jit); trade compute for memory with jax.checkpoint "
        "(remat) around the layers that hold the largest buffers; shard the largest "
        "arrays over devices; js.memory(f)(...) shows every buffer live at the peak "
        "and the line that made it"
    )
    return Explanation(message, hint, extra)


def _runtime(facts: Facts) -> Explanation:
    raised = _RAISED_INSIDE.search(facts.text)
    return Explanation(
        raised.group(1).strip() if raised else first_line(facts.text),
        "The compiled program failed at run time; the message above is XLA's",
    )


_BUILDERS: dict[ErrorKind, Callable[[Facts], Explanation]] = {
    ErrorKind.BOOL_CONVERSION: _bool_conversion,
    ErrorKind.INT_CONVERSION: _int_conversion,
    ErrorKind.ARRAY_CONVERSION: _array_conversion,
    ErrorKind.BOOL_INDEX: _bool_index,
    ErrorKind.CONCRETIZATION: _concretization,
    ErrorKind.ITEM_ASSIGNMENT: _item_assignment,
    ErrorKind.SHAPE: _jax_message,
    ErrorKind.DTYPE: _jax_message,
    ErrorKind.TRANSFORMATION: _jax_message,
    ErrorKind.JAX_OTHER: _jax_message,
    ErrorKind.STRUCTURE: _jax_message,
    ErrorKind.STATIC_ARG: _jax_message,
    ErrorKind.LEAK: _leak,
    ErrorKind.NAN: _nan,
    ErrorKind.OUT_OF_MEMORY: _out_of_memory,
    ErrorKind.RUNTIME: _runtime,
    ErrorKind.DONATED: donated,
    ErrorKind.UNBOUND_AXIS: unbound_axis,
    ErrorKind.TRACE_LEVEL: trace_level,
    ErrorKind.SHARDING: sharding_explanation,
}
