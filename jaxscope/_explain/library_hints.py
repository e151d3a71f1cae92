"""Hints for errors whose JAX message hides a library or parallel-code cause: a
``pmap`` batch not split over the devices, a ``shard_map`` output declared replicated
without the collective that makes it so, ``jax.grad`` over an Equinox Module, a Linen
model applied with parameters made for another input shape, a diffrax solve that ran
out of steps (most often on a NaN input).

``library_facts`` reads what the hint needs off the traceback's live frames (never
calling user code); ``library_hint`` writes the fix from those facts alone.
"""

from __future__ import annotations

import ast
import os
import re
import traceback
import types
from dataclasses import dataclass
from typing import Any

from jaxscope._explain.evaluate import MISSING, safe_eval
from jaxscope._explain.frames import Entry
from jaxscope._explain.messages import first_line
from jaxscope._explain.site import Site, function_node, site_at
from jaxscope._explain.wrappers import is_equinox_module
from jaxscope._format import unwrap
from jaxscope.compat import errors as _cerrors

_SQUEEZE = re.compile(r"cannot select an axis to squeeze out which has size not equal")
_SQUEEZED_SHAPE = re.compile(r"got shape=\(([\d, ]*)\)")
_PARTITIONED = re.compile(r"_internal_pmap_axis_name.*partitioned (\d+) times")
_INCONSISTENT = re.compile(r"^(?:vmap|pmap) got inconsistent sizes")
_REPLICATION = re.compile(r"out_specs which require replication which can't be")
_MESH_AXES = re.compile(r"replicated across mesh ax[ie]s (?P<axes>\([^)]*\)|'[^']*')")
# jax 0.9 and 0.10: "... only varying across mesh axes {} and not {data,model}, ..."
_NOT_VARYING = re.compile(
    r"only varying across mesh axes \{[^}]*\} and not \{(?P<axes>[^}]*)\}"
)
_PARAM_SHAPE = re.compile(
    r'^For parameter "(?P<param>[^"]+)" in "(?P<scope>[^"]+)", the given initializer '
    r"is expected to generate shape (?P<want>\([^)]*\)), but the existing parameter "
    r"it received has shape (?P<have>\([^)]*\))"
)
_NOT_JAX_TYPE = re.compile(r"^Argument .* of type .* is not a valid JAX type")
_MAX_STEPS = "maximum number of solver steps was reached"
_GRADS = {
    "grad": "eqx.filter_grad",
    "value_and_grad": "eqx.filter_value_and_grad",
}


@dataclass(frozen=True, slots=True)
class LibraryFacts:
    """What the library hints need, read from the failing call.

    Attributes:
        pmap: ``"jax.pmap"`` or ``"eqx.filter_pmap"`` when the failing call went
            through one ("" otherwise).
        devices: the number of local devices (what pmap maps over).
        arguments: ``(text, shape)`` of the failing call's array arguments.
        grad: ``(wrapper text, its Equinox replacement, Module argument text)`` for
            ``jax.grad(f)(module, ...)`` over an ``eqx.Module``.
        apply: ``(model, params, input)`` texts of the user's Linen
            ``model.apply(params, input)`` call.
        shard_fn: the name of the function given to ``shard_map``.
        call: ``js.find_nan(f)(args)`` for the failing call ``f(args)`` ("" when it
            is not a plain call).
        shard_return: the text of its one ``return`` value ("" if not one).
    """

    pmap: str = ""
    devices: int = 0
    arguments: tuple[tuple[str, tuple[int, ...]], ...] = ()
    grad: tuple[str, str, str] | None = None
    apply: tuple[str, str, str] | None = None
    shard_fn: str = ""
    shard_return: str = ""
    call: str = ""


NO_LIBRARY_FACTS = LibraryFacts()


def library_facts(
    exc: BaseException, users: list[Entry], inner: Entry | None, site: Site
) -> LibraryFacts:
    """The facts of ``exc`` the library hints use (never raises)."""
    try:
        return _library_facts(exc, users, inner, site)
    except Exception:
        return NO_LIBRARY_FACTS


def _library_facts(
    exc: BaseException, users: list[Entry], inner: Entry | None, site: Site
) -> LibraryFacts:
    import jax

    node = site.node
    call = node if isinstance(node, ast.Call) else None
    frame = inner.frame if inner is not None else None
    arguments: list[tuple[str, tuple[int, ...]]] = []
    grad = None
    shard_fn, shard_return = "", ""
    if call is not None and frame is not None:
        for arg in call.args:
            value = safe_eval(arg, frame) if not isinstance(arg, ast.Starred) else None
            shape = getattr(value, "shape", None)
            if isinstance(shape, tuple) and hasattr(value, "dtype"):
                arguments.append((site.text(arg), tuple(int(d) for d in shape)))
        grad = _grad_of_module(call, site, frame)
        shard_fn, shard_return = _shard_mapped(call, site, frame)
    return LibraryFacts(
        pmap=_pmap_in(exc),
        devices=jax.local_device_count(),
        arguments=tuple(arguments),
        grad=grad,
        apply=_linen_apply(users),
        shard_fn=shard_fn,
        shard_return=shard_return,
        call=_find_nan_call(*_caller_call(users, inner, call, site)),
    )


def _caller_call(
    users: list[Entry], inner: Entry | None, call: ast.Call | None, site: Site
) -> tuple[ast.Call | None, Site]:
    """The call of the function the error happened in, from its caller's line (the
    failing call itself when the caller is not the user's)."""
    if inner is None or len(users) < 2 or users[-1] is not inner:
        return call, site
    outer = users[-2]
    found = site_at(outer.filename, outer.line, outer.col, outer.end_col)
    node = found.node
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, (ast.Name, ast.Attribute))
        and found.text(node.func).rsplit(".", 1)[-1] == inner.frame.f_code.co_name
    ):
        return node, found
    return call, site


def _find_nan_call(call: ast.Call | None, site: Site) -> str:
    if call is None or not isinstance(call.func, (ast.Name, ast.Attribute)):
        return ""
    args = [site.text(a) for a in call.args] + [
        f"{k.arg}={site.text(k.value)}" if k.arg else f"**{site.text(k.value)}"
        for k in call.keywords
    ]
    return f"js.find_nan({site.text(call.func)})({', '.join(args)})"


def _pmap_in(exc: BaseException) -> str:
    """The pmap the exception's traceback went through ("" for none)."""
    for tb in _cerrors.full_tracebacks(exc):
        for frame, _line in traceback.walk_tb(tb):
            base = os.path.basename(frame.f_code.co_filename)
            name = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
            if base == "_vmap_pmap.py" and "pmap" in name.lower():
                return "eqx.filter_pmap"
            if base == "pmap.py" and "/jax/" in frame.f_code.co_filename.replace(
                os.sep, "/"
            ):
                return "jax.pmap"
    return ""


def _grad_of_module(
    call: ast.Call, site: Site, frame: types.FrameType
) -> tuple[str, str, str] | None:
    """``jax.grad(f)(module, ...)`` with an ``eqx.Module`` argument."""
    if not isinstance(call.func, ast.Call):
        return None
    wrapper = site.text(call.func.func)
    replacement = _GRADS.get(wrapper.rsplit(".", 1)[-1])
    if replacement is None:
        return None
    for arg in call.args:
        if is_equinox_module(safe_eval(arg, frame)):
            return wrapper, replacement, site.text(arg)
    return None


def _linen_apply(users: list[Entry]) -> tuple[str, str, str] | None:
    """The user's ``model.apply(params, x)`` call among the frames, innermost first."""
    for entry in reversed(users):
        found = site_at(entry.filename, entry.line, entry.col, entry.end_col)
        node = found.node
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "apply"
            and len(node.args) >= 2
        ):
            return (
                found.text(node.func.value),
                found.text(node.args[0]),
                found.text(node.args[1]),
            )
    return None


def _shard_mapped(
    call: ast.Call, site: Site, frame: types.FrameType
) -> tuple[str, str]:
    """The name of the function ``shard_map`` was given in this call, and the text
    of its one ``return`` value."""
    func = call.func
    target: Any = MISSING
    if isinstance(func, ast.Call):
        if site.text(func.func).rsplit(".", 1)[-1] == "shard_map" and func.args:
            target = safe_eval(func.args[0], frame)
    else:
        target = safe_eval(func, frame)
    if target is MISSING:
        return "", ""
    fn = unwrap(target)
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        return "", ""
    definition = function_node(code.co_filename, code)
    if definition is None:
        return code.co_name, ""
    returns = [
        n
        for n in ast.walk(definition)
        if isinstance(n, ast.Return) and n.value is not None
    ]
    if len(returns) != 1 or returns[0].value is None:
        return code.co_name, ""
    source = site_at(code.co_filename, returns[0].lineno, None, None)
    return code.co_name, source.text(returns[0].value)


def library_hint(text: str, facts: LibraryFacts) -> str:
    """The hint for a library or parallel-code error (``text``: its message); ""
    when it is not one."""
    first = first_line(text)
    if _MAX_STEPS in text:
        return _max_steps(facts)
    if _REPLICATION.search(first):
        return _replication(text, facts)
    match = _PARAM_SHAPE.search(first)
    if match is not None:
        return _param_shape(match, facts)
    if facts.grad is not None and _NOT_JAX_TYPE.search(first):
        wrapper, replacement, module = facts.grad
        return (
            f"{module} is an eqx.Module holding non-array fields (functions, sizes, "
            f"flags), which {wrapper} cannot differentiate: use "
            f"`{replacement}` instead of `{wrapper}` (it differentiates the array "
            "leaves of the first argument and leaves the other fields alone)"
        )
    if facts.pmap and _unsplit_batch(first, text, facts):
        return _pmap_split(facts)
    return ""


def _unsplit_batch(first: str, text: str, facts: LibraryFacts) -> bool:
    """Whether the error is pmap's own about a leading axis not split over the
    devices (not an error of the same words inside the mapped function)."""
    if _PARTITIONED.search(first):
        return True
    if _INCONSISTENT.search(first):
        return first.startswith("pmap") or "_dynamic[" in text
    squeezed = _SQUEEZED_SHAPE.search(first)
    if squeezed is None or not _SQUEEZE.search(first):
        return False
    n = facts.devices
    per_device = tuple(int(d) for d in re.findall(r"\d+", squeezed.group(1)))
    return any(
        s and s[0] % n == 0 and (s[0] // n, *s[1:]) == per_device
        for _t, s in facts.arguments
    )


def _max_steps(facts: LibraryFacts) -> str:
    check = (
        f"`{facts.call}`"
        if facts.call
        else "js.find_nan(f)(...) on the function that calls the solver"
    )
    return (
        "A solver that runs out of steps most often met a NaN or an inf (in y0, the "
        "parameters or the vector field's output), which makes the adaptive step "
        f"size shrink forever: check the inputs for NaN first, with {check}; if they "
        "are finite, raise max_steps or loosen the step-size controller's rtol/atol"
    )


def _replication(text: str, facts: LibraryFacts) -> str:
    axes_match = _MESH_AXES.search(text)
    not_varying = _NOT_VARYING.search(text)
    if axes_match:
        axes = axes_match.group("axes")
    elif not_varying and not_varying.group("axes").strip():
        names = [repr(n.strip()) for n in not_varying.group("axes").split(",")]
        axes = names[0] if len(names) == 1 else f"({', '.join(names)})"
    else:
        axes = "'i'"
    which = "mesh axes" if axes.startswith("(") else "mesh axis"
    fn = facts.shard_fn or "the function"
    if facts.shard_return:
        combine = (
            f"`return jax.lax.psum({facts.shard_return}, {axes})` for a sum (or "
            f"`return jax.lax.pmean({facts.shard_return}, {axes})` for a mean)"
        )
    else:
        combine = (
            f"jax.lax.psum(value, {axes}) for a sum or jax.lax.pmean(value, {axes}) "
            "for a mean, on the value it returns"
        )
    return (
        f"out_specs says every device returns the same value over {which} {axes}, "
        f"but {fn} returns each device's own (partial) result: combine the results "
        f"inside {fn} before returning, {combine}; or keep one result per device "
        f"with out_specs=P({axes})"
    )


def _param_shape(match: re.Match[str], facts: LibraryFacts) -> str:
    what = (
        f"the params were initialised for another input shape: {match.group('param')} "
        f"in {match.group('scope')} has shape {match.group('have')}, this input needs "
        f"{match.group('want')}"
    )
    if facts.apply is not None:
        model, params, x = facts.apply
        redo = f"`{params} = {model}.init(jax.random.key(0), {x})`"
    else:
        redo = "params = model.init(key, x) with an input of the new shape"
    return (
        f"{what[:1].upper()}{what[1:]}: re-initialise the params for the new shape "
        f"({redo}, then train them), or give the model inputs of the shape its "
        "params were made for"
    )


def _pmap_split(facts: LibraryFacts) -> str:
    n = facts.devices
    mapped = [(t, s) for t, s in facts.arguments if s and s[0] % n == 0]
    unsplit = [(t, s) for t, s in mapped if s[0] != n]
    shared = [t for t, s in facts.arguments if not s or s[0] % n]
    if not unsplit:
        return (
            f"{facts.pmap} maps the leading axis over the {n} local devices: split "
            f"each batch as x.reshape({n}, batch // {n}, ...) and pass arguments "
            "every device shares unmapped (in_axes=None)"
        )
    fixes = ", ".join(
        f"`{t}.reshape({', '.join(str(d) for d in (n, s[0] // n, *s[1:]))})`"
        for t, s in unsplit
    )
    what = ", ".join(t for t, _ in unsplit)
    hint = (
        f"{facts.pmap} maps the leading axis of every argument over the {n} local "
        f"devices, and {what} {'is' if len(unsplit) == 1 else 'are'} not split: "
        f"split the leading axis over the {n} devices, {fixes} (each device then "
        "gets its part of the batch)"
    )
    if shared and facts.pmap == "jax.pmap":
        axes = ", ".join("None" if t in shared else "0" for t, _ in facts.arguments)
        hint += (
            f"; {', '.join(shared)} has no device axis: if every device shares it, "
            f"pass it unmapped with in_axes=({axes}{',' if len(facts.arguments) == 1 else ''})"
        )
    return hint
