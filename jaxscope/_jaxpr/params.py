"""How an equation prints: its params as strings (``param_strings``, what
``EqnInfo.params`` holds), which of them a display shows (``shown_params``: noisy
defaults dropped) and its one line (``eqn_line``: ``d:f32[4] = sin a``)."""

from __future__ import annotations

import re
from typing import Any

from jaxscope._format import plural, truncate
from jaxscope._records import EqnInfo
from jaxscope.compat import jaxpr as _cj

_MAX_PARAM_CHARS = 80


def literal_text(value: Any) -> str:
    """A literal operand's value as an equation prints it, cut to 40 characters."""
    # JAX wraps literal Python scalars (TypedInt, TypedFloat...): print the number.
    if isinstance(value, bool):
        text = str(value)
    elif isinstance(value, int):
        text = str(int(value))
    elif isinstance(value, float):
        text = repr(float(value))
    elif getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        text = str(value.item())  # numpy's str of a 0-d array is slow
    else:
        text = str(value)
    return truncate(text, 40)


_SIMPLE = (bool, int, float, str)


def _param_str(value: Any) -> str:
    if value is None:
        return "None"
    if type(value) in _SIMPLE:
        text = str(value)
        if len(text) <= _MAX_PARAM_CHARS and "\n" not in text:
            return text
    if callable(value) and hasattr(value, "__name__"):
        text = f"<{value.__name__}>"
    else:
        text = str(value)
        if len(text) > 4 * _MAX_PARAM_CHARS:
            text = text[: 4 * _MAX_PARAM_CHARS]
    return truncate(" ".join(text.split()), _MAX_PARAM_CHARS)


def shown_value(text: str) -> str:
    """A param as JAX's printer wrote it, on one line, cut to the params' width."""
    return truncate(" ".join(text.split()), _MAX_PARAM_CHARS)


def param_strings(
    params: dict[str, Any], subs: list[tuple[str, Any]]
) -> dict[str, str]:
    """An equation's params as strings; nested jaxprs (``subs``) as ``{N eqns}``."""
    if not subs:
        return {key: _param_str(value) for key, value in params.items()}
    sub_counts: dict[str, list[str]] = {}
    for key, sub in subs:
        n = len(_cj.open_jaxpr(sub)[0].eqns)
        sub_counts.setdefault(key.split("[", 1)[0], []).append(
            f"{{{plural(n, 'eqn')}}}"
        )
    shown = {
        key: _param_str(value) for key, value in params.items() if key not in sub_counts
    }
    for key, counts in sub_counts.items():  # nested jaxprs last, as JAX prints
        multi = isinstance(params[key], (tuple, list))
        shown[key] = "(" + ", ".join(counts) + ")" if multi else counts[0]
    return shown


_NOISY_VALUES = {"None", "UnspecifiedValue"}
_NOISY_BY_KEY = {
    "keep_unused": {"False"},
    "inline": {"False"},
    "compiler_options_kvs": {"()"},
    "ctx_mesh": {"Mesh()", "AbstractMesh((), axis_types=())", "AbstractMesh(())"},
    "donated_invars": set(),
}


def is_noisy_param(key: str, value: str) -> bool:
    """Whether a param is a default that would clutter a printed equation.

    Hidden in ``.text`` and displays only; ``EqnInfo.params`` keeps every param.
    """
    if value in _NOISY_VALUES:
        return True
    if value.startswith("(") and value.endswith(")"):
        items = {item.strip() for item in value[1:-1].split(",")}
        if items <= {"UnspecifiedValue", "None", ""} and value != "()":
            return True
    if key == "donated_invars":
        return "True" not in value
    noisy = _NOISY_BY_KEY.get(key)
    return noisy is not None and value in noisy


_NESTED_VALUE = re.compile(r"^\(?\{\d+ eqns?\}(?:, \{\d+ eqns?\})*\)?$")


def shown_params(info: EqnInfo, *, nested: bool = True) -> dict[str, str]:
    """The params an equation line shows: as JAX prints them where known, noisy
    defaults dropped; nested jaxprs (``{N eqns}``) only with ``nested``."""
    params = info.printed_params if info.printed_params is not None else info.params
    return {
        k: v
        for k, v in params.items()
        if not is_noisy_param(k, v) and (nested or not _NESTED_VALUE.match(v))
    }


def eqn_parts(
    info: EqnInfo, *, nested: bool = True, refs: dict[str, str] | None = None
) -> tuple[str, str, str, str]:
    """``(outputs, primitive, "[params]" or "", inputs)`` of an equation line;
    ``nested=False`` leaves out the nested jaxprs (a jaxpr view draws them below)
    but those named in ``refs`` (shared jaxprs: ``jaxpr=relu``)."""
    outs = " ".join(f"{n}:{a}" for n, a in info.outputs) or "()"
    shown = shown_params(info, nested=nested)
    if refs:
        params_in_order = (
            info.printed_params if info.printed_params is not None else info.params
        )
        shown = {
            k: refs.get(k, v)
            for k, v in params_in_order.items()
            if k in shown or k in refs
        }
    params = "[" + " ".join(f"{k}={v}" for k, v in shown.items()) + "]" if shown else ""
    ins = " ".join(n for n, _ in info.inputs)
    return outs, info.primitive, params, ins


def eqn_line(
    info: EqnInfo, *, nested: bool = True, refs: dict[str, str] | None = None
) -> str:
    """``d:f32[4] = sin a`` (shown params in brackets, nested jaxprs as ``{N eqns}``
    unless ``nested=False``, shared ones named in ``refs``)."""
    outs, prim, params, ins = eqn_parts(info, nested=nested, refs=refs)
    return f"{outs} = {prim}{params} {ins}".rstrip()
