"""Where a NaN really came from: the failing call stepped again with concrete values
(``js.find_nan``) when JAX's ``jax_debug_nans`` message only names a call, a ``scan``
or a ``cond`` around the user's line."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from jaxscope._explain.evaluate import (
    code_params,
    eval_call_args,
    eval_callee,
    function_of,
    has_star_params,
)
from jaxscope._explain.frames import Entry
from jaxscope._explain.messages import NAN_IN
from jaxscope._explain.site import Site
from jaxscope._records import SourceLoc

# Primitives that run other jaxprs: JAX names them, not the equation inside.
_HIGHER_ORDER = frozenset(
    {
        "scan",
        "while",
        "while_loop",
        "cond",
        "jit",
        "pjit",
        "closed_call",
        "core_call",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
        "remat",
        "remat2",
        "checkpoint",
        "shard_map",
        "xla_pmap",
        "xla_call",
        "custom_lin",
    }
)
_LIBRARY_MODULES = ("jax", "numpy")
_MAX_CANDIDATES = 2
_MAX_INPUTS = 4

Call = tuple[Any, list[Any], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class NanOrigin:
    """The equation that first produced a NaN or an Inf, found by stepping.

    Attributes:
        source: the user's line of the equation.
        primitive: the equation's primitive.
        kind: ``"nan"`` or ``"inf"``.
        where: the nested frames it ran in (``scan [iteration 2/2] > ...``).
        inputs: the equation's inputs, summarised.
        equation: the equation as a jaxpr prints it ("" if unknown).
    """

    source: SourceLoc
    primitive: str
    kind: str
    where: str
    inputs: tuple[str, ...]
    equation: str = ""

    def context(self) -> tuple[str, ...]:
        """The report's JAX-level facts about the stepping and the equation."""
        where = f" in {self.where}" if self.where else ""
        out = [f"found by stepping the call with concrete values{where}"]
        if self.equation:
            out.append(f"equation: {self.equation}")
        out.extend(f"input {i}" for i in self.inputs)
        return tuple(out)

    def rewrite(self, text: str) -> str:
        """JAX's message with the primitive that really produced the value."""
        if self.kind not in ("nan", "inf"):
            return text
        return NAN_IN.sub(
            f"invalid value ({self.kind}) encountered in {self.primitive}", text
        )


def nan_origin(text: str, inner: Entry, site: Site) -> NanOrigin | None:
    """The origin of the NaN of a ``jax_debug_nans`` error (``text``: its message),
    when JAX names a higher-order primitive or the user's line calls the user's own
    function; None when JAX's own line is the answer or stepping fails."""
    nan = NAN_IN.search(text)
    prim = nan.group("prim") if nan else ""
    node = site.node
    if prim in _HIGHER_ORDER or (isinstance(node, ast.Call) and not prim):
        return _step_to_nan(inner, site)
    if isinstance(node, ast.Call) and not _in_library(
        eval_callee(node.func, inner.frame)
    ):
        return _step_to_nan(inner, site)
    return None


def _in_library(callee: Any) -> bool:
    return str(getattr(callee, "__module__", "") or "").startswith(_LIBRARY_MODULES)


def _candidates(inner: Entry, site: Site) -> list[Call]:
    """Calls to step: the failing call itself, then the function whose frame it is."""
    out: list[Call] = []
    node = site.node
    if isinstance(node, ast.Call):
        callee = eval_callee(node.func, inner.frame)
        parsed = eval_call_args(node, inner.frame)
        if callable(callee) and parsed is not None and not _in_library(callee):
            out.append((callee, *parsed))
    code = inner.frame.f_code
    if code.co_name != "<module>" and not has_star_params(code):
        fn = function_of(inner.frame)
        positional, kwonly = code_params(code)
        local = inner.frame.f_locals
        if fn is not None and all(n in local for n in positional + kwonly):
            out.append(
                (fn, [local[n] for n in positional], {n: local[n] for n in kwonly})
            )
    return out


def _step_to_nan(inner: Entry, site: Site) -> NanOrigin | None:
    """Step the failing call with concrete values to the first NaN/Inf-producing equation."""
    import jax

    from jaxscope._stepper.stepper import find_nan

    for fn, args, kwargs in _candidates(inner, site)[:_MAX_CANDIDATES]:
        try:
            with jax.debug_nans(False), jax.debug_infs(False):
                found = find_nan(fn)(*args, **kwargs)
        except Exception:  # the stepper could not run it: keep JAX's own line
            continue
        source = getattr(found, "source", None)
        if found is None or source is None:
            continue
        return _origin_of(found, source)
    return None


def _origin_of(found: Any, source: SourceLoc) -> NanOrigin:
    frames = getattr(found, "frames", []) or []
    inputs = tuple(
        f"{v.name}: {v.aval} (min {v.min}, max {v.max})"
        for v in getattr(found, "inputs", [])[:_MAX_INPUTS]
    )
    try:
        from jaxscope._jaxpr.params import eqn_line

        equation = eqn_line(found.eqn)
    except Exception:
        equation = ""
    return NanOrigin(
        source,
        str(found.primitive),
        str(found.kind),
        " > ".join(_frame_label(f) for f in frames),
        inputs,
        equation,
    )


def _frame_label(frame: Any) -> str:
    label = str(getattr(frame, "label", ""))
    iteration = getattr(frame, "iteration", None)
    length = getattr(frame, "length", None)
    if iteration is not None and length:
        return f"{label} [iteration {iteration + 1}/{length}]"
    return label
