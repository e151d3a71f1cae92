"""Well-known JAX messages whose generic hint would mislead: their kind and their fix."""

from __future__ import annotations

import re
from dataclasses import dataclass

from jaxscope._explain.report import ErrorKind, Operand
from jaxscope._explain.wrappers import FieldFix
from jaxscope._format import a_an


@dataclass(frozen=True, slots=True)
class KnownMessage:
    """The kind of a well-known JAX message and the fix that goes with it."""

    kind: ErrorKind
    hint: str


_BRANCH_TYPES = KnownMessage(
    ErrorKind.STRUCTURE,
    "Both branches must return the same pytree of shapes and dtypes: pad, slice or "
    "cast one branch's result (jax.eval_shape(branch_fn, x) shows what each returns)",
)
_SCAN_CARRY = KnownMessage(
    ErrorKind.STRUCTURE,
    "The scan carry must keep its shape and dtype: start it with the type the body "
    "returns (e.g. 0.0 rather than 0, or jnp.zeros_like(...)) or cast inside the body",
)
_NONSCALAR_GRAD = KnownMessage(
    ErrorKind.TRANSFORMATION,
    "jax.grad needs a scalar output: reduce it (e.g. return loss.sum() or .mean()), "
    "or use jax.jacrev / jax.vjp for a non-scalar output",
)
_INT_GRAD = KnownMessage(
    ErrorKind.DTYPE,
    "Differentiate with respect to floats: pass 1.0 instead of 1 (or "
    "x.astype(jnp.float32)); use jax.grad(f, allow_int=True) to get float0 zeros",
)
_UNHASHABLE_STATIC = KnownMessage(
    ErrorKind.STATIC_ARG,
    "Static arguments are hashed to key the compile cache: pass a hashable value "
    "(a tuple instead of a list, a tuple of pairs or a frozen dataclass instead of a "
    "dict) or make it a regular traced argument",
)

_STATIC_ARRAY = KnownMessage(
    ErrorKind.STATIC_ARG,
    "A static argument here holds arrays, and arrays cannot be static (they are not "
    "hashable, and a static value would compile once per value): remove that "
    "argument from static_argnums / static_argnames so jit traces it, and write the "
    "code that branches on its values with arrays (jnp.where, jax.lax.cond)",
)
# An array in the static value: its type, or an array's repr inside a container.
_ARRAY_IN_STATIC = re.compile(
    r"object of type <class '[\w.]*(?:ArrayImpl|ndarray|Array|Tracer)'>"
    r"|\b(?:Array|array)\(|Traced<"
)


def known_message(
    first: str,
    text: str,
    operands: tuple[Operand, ...],
    fields: tuple[FieldFix, ...] = (),
) -> KnownMessage | None:
    """The kind and fix of a well-known message (``first``: its first line, ``text``:
    all of it), with the operands' shapes and the Module fields behind an argument
    where they help; None for any other."""
    avals = [f"{o.expr} is {o.aval}" for o in operands if o.aval]
    if "branches must have equal output types" in first or (
        "branch" in first and "output" in first and "type" in first
    ):
        return _BRANCH_TYPES
    if (
        "carry input and carry output must have equal types" in text
        or "carry output" in first
    ):
        return _SCAN_CARRY
    if first.startswith("Gradient only defined for scalar-output functions"):
        return _NONSCALAR_GRAD
    if first.startswith("grad requires real- or complex-valued inputs"):
        return _INT_GRAD
    if first.startswith("vmap got inconsistent sizes"):
        sizes = f" ({'; '.join(avals)})" if avals else ""
        return KnownMessage(
            ErrorKind.SHAPE,
            f"Every mapped argument needs the same size along its mapped axis{sizes}: fix "
            "the sizes, or mark an argument that is not batched with in_axes=None for it "
            "(e.g. jax.vmap(f, in_axes=(0, None)))",
        )
    if "ShapeDtypeStruct" in first and "not a valid JAX type" in first:
        return _shape_dtype_struct(first)
    if first.startswith("Non-hashable static arguments"):
        return _STATIC_ARRAY if _ARRAY_IN_STATIC.search(text) else _UNHASHABLE_STATIC
    if first.startswith("Error interpreting argument to"):
        return _untraceable_argument(first, fields)
    if first.startswith("cannot reshape array"):
        return KnownMessage(
            ErrorKind.SHAPE,
            "A reshape must keep the number of elements: "
            + (avals[0] + ", " if avals else "")
            + "so choose a target shape with the same size (-1 infers one dimension)",
        )
    return None


_ARGUMENT_NAME = re.compile(r"^Argument '(?P<name>\w+)'")


def _shape_dtype_struct(first: str) -> KnownMessage:
    named = _ARGUMENT_NAME.search(first)
    name = named.group("name") if named else "An argument"
    return KnownMessage(
        ErrorKind.JAX_OTHER,
        f"{name} is a jax.ShapeDtypeStruct: it describes an array's shape and dtype "
        "without any values, so it can be traced but not run; to run (or profile) "
        "the function, pass a real array of that shape, e.g. jnp.zeros(s.shape, "
        "s.dtype) for a ShapeDtypeStruct s; to look at the program without data, "
        "js.jaxpr, js.hlo and js.memory take ShapeDtypeStructs",
    )


_UNTRACEABLE_FN = re.compile(r"^Error interpreting argument to <function ([\w.<>]+) ")
_UNTRACEABLE_PATH = re.compile(r"at path (\S+?)\.?$")
_UNTRACEABLE_TYPE = re.compile(r"of type <class '([\w.]+)'>")


def untraceable_path(first: str) -> str:
    """The argument path of an "Error interpreting argument" message ("" if none)."""
    match = _UNTRACEABLE_PATH.search(first)
    return match.group(1) if match else ""


def _untraceable_argument(first: str, fields: tuple[FieldFix, ...]) -> KnownMessage:
    fn_match = _UNTRACEABLE_FN.search(first)
    fn = fn_match.group(1).rsplit(".", 1)[-1] if fn_match else "f"
    name = untraceable_path(first) or "the argument"
    type_match = _UNTRACEABLE_TYPE.search(first)
    what = (
        f" {a_an(type_match.group(1).rsplit('.', 1)[-1])}"
        if type_match
        else " not an array"
    )
    fix = next((f for f in fields if f.path == name), None)
    if fix is not None:
        base = name.split(".", 1)[0]
        return KnownMessage(
            ErrorKind.STATIC_ARG,
            f"{base} is an eqx.Module and its field {fix.field} holds{what}, which "
            f"jax.jit cannot trace: use `eqx.filter_jit({fn})` instead of jax.jit (it "
            "traces the arrays and keeps every other field static), or declare the "
            f"field static in class {fix.cls}: `{fix.declaration}`",
        )
    base = re.split(r"[\[.]", name, maxsplit=1)[0]
    if base != name:
        return KnownMessage(
            ErrorKind.STATIC_ARG,
            f"{name} is{what}, which JAX cannot trace: mark the whole argument static "
            f"(jax.jit({fn}, static_argnames='{base}'); it must then be hashable), or "
            f"pass {name} to {fn} as its own static argument",
        )
    return KnownMessage(
        ErrorKind.STATIC_ARG,
        f"{name} is{what}, which JAX cannot trace: pass it as a static argument "
        f"(jax.jit({fn}, static_argnames='{name}')) or convert it to an array",
    )
