"""Walking jaxprs: nested jaxprs in equation params, variable kinds, avals, debug info.

Relies mostly on the semi-public ``jax.extend.core`` types (``ClosedJaxpr``, ``Jaxpr``,
``Literal``), present from jax 0.4.35 to 0.10.2; ``DropVar`` is re-exported there only
from 0.10 (see ``is_dropvar``).
"""

from __future__ import annotations

import re
from typing import Any

from jax.extend import core as _xcore

from jaxscope._format import short_dtype
from jaxscope.compat import private, require


def aval_str(aval: Any) -> str:
    """``f32[3,4]`` for arrays, ``key<fry>[]`` / ``Token`` / str(aval) otherwise."""
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return str(aval)
    dims = ",".join(str(d) for d in shape)
    return f"{short_dtype(dtype)}[{dims}]"


def is_literal(atom: Any) -> bool:
    """Whether a jaxpr atom is a ``Literal`` (an inlined constant)."""
    return isinstance(atom, _xcore.Literal)


def _dropvar_type() -> type:
    found = getattr(_xcore, "DropVar", None)
    if found is None:  # jax 0.9 does not re-export it from jax.extend.core
        from jax._src import core as _core

        found = require(_core, "DropVar", "compat.is_dropvar")
    return found


def is_dropvar(atom: Any) -> bool:
    """Whether an output atom is a ``DropVar`` (an unused output, printed ``_``).

    Relies on: ``jax.extend.core.DropVar`` (0.10), else ``jax._src.core.DropVar`` (0.9).
    """
    return isinstance(atom, _dropvar_type())


def literal_value(atom: Any) -> Any:
    """The Python/NumPy value of a ``Literal``."""
    return atom.val


def is_jaxpr(value: Any) -> bool:
    """Whether ``value`` is a ``Jaxpr`` or ``ClosedJaxpr``."""
    return isinstance(value, (_xcore.Jaxpr, _xcore.ClosedJaxpr))


def open_jaxpr(value: Any) -> tuple[Any, list[Any]]:
    """``(Jaxpr, consts)`` for a ``ClosedJaxpr`` or an open ``Jaxpr`` (no consts)."""
    if isinstance(value, _xcore.ClosedJaxpr):
        return value.jaxpr, list(value.consts)
    return value, []


def subjaxprs(eqn: Any) -> list[tuple[str, Any]]:
    """Nested jaxprs of an equation as ``(label, Jaxpr | ClosedJaxpr)``, in param order.

    Labels name the param (``"jaxpr"``, ``"body_jaxpr"``, ``"branches[1]"``). Covers
    jit/pjit, scan, while, cond/switch, remat, custom_jvp/vjp, shard_map, closed_call.
    """
    found: list[tuple[str, Any]] = []
    for key, value in eqn.params.items():
        if is_jaxpr(value):
            found.append((key, value))
        elif (
            isinstance(value, (tuple, list))
            and value
            and all(is_jaxpr(v) for v in value)
        ):
            found.extend((f"{key}[{i}]", v) for i, v in enumerate(value))
    return found


def primitive_name(eqn: Any) -> str:
    """The primitive's name; ``pjit`` (jax <= 0.6) is reported as ``jit``."""
    name = str(eqn.primitive.name)
    return "jit" if name == "pjit" else name


def jaxpr_arg_names(jaxpr: Any) -> tuple[str, ...] | None:
    """The user's argument path names of a traced jaxpr (``("x", "params['w']")``)."""
    info = getattr(jaxpr, "debug_info", None)
    names = getattr(info, "arg_names", None)
    return tuple(str(n) for n in names) if names is not None else None


def jaxpr_result_paths(jaxpr: Any) -> tuple[str, ...] | None:
    """The result paths of a traced jaxpr (``("result[0]", "result[1]")``)."""
    info = getattr(jaxpr, "debug_info", None)
    paths = getattr(info, "result_paths", None)
    if paths is None or callable(paths):
        return None
    return tuple(str(p) for p in paths)


def jit_static_args(jitted: Any) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """The resolved ``(static_argnums, static_argnames)`` of a ``jax.jit`` wrapper.

    ``jax.jit`` resolves names to positions and back through the signature; reading
    the result keeps jaxscope's flattening of example arguments identical to JAX's.
    None when ``jitted`` is not a ``jax.jit`` wrapper (or the installed JAX hides them).

    Relies on: the private ``_jit_info`` (a ``PjitInfo``) of jit wrappers, with
    ``static_argnums`` / ``static_argnames`` fields in jax 0.9.0 and 0.10.2.
    """
    info = getattr(jitted, "_jit_info", None)
    nums = getattr(info, "static_argnums", None)
    names = getattr(info, "static_argnames", None)
    if nums is None or names is None:
        return None
    try:
        return tuple(int(n) for n in nums), tuple(str(n) for n in names)
    except (TypeError, ValueError):
        return None


def pmap_static_argnums(fn: Any) -> tuple[int, ...] | None:
    """The ``static_broadcasted_argnums`` of a ``jax.pmap`` function; None for any
    other callable.

    Relies on: ``jax._src.pmap.pmap`` returning a function whose closure holds
    ``infer_params``, itself closing over ``static_broadcasted_tuple`` (jax 0.10.2).
    """
    code = getattr(fn, "__code__", None)
    if code is None or not code.co_filename.replace("\\", "/").endswith(
        "jax/_src/pmap.py"
    ):
        return None
    infer = _closure_value(fn, "infer_params")
    found = _closure_value(infer, "static_broadcasted_tuple")
    if not isinstance(found, tuple):
        return None
    return tuple(int(n) for n in found)


def _closure_value(fn: Any, name: str) -> Any:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return None
    for var, cell in zip(code.co_freevars, cells, strict=False):
        if var == name:
            try:
                return cell.cell_contents
            except ValueError:  # an empty cell
                return None
    return None


def scan_length(eqn: Any) -> int | None:
    """The trip count of a ``scan`` equation (its static ``length``); None for any
    other equation.

    Relies on: the ``length`` param of ``scan`` (jax 0.9.0 and 0.10.2).
    """
    if primitive_name(eqn) != "scan":
        return None
    length = eqn.params.get("length")
    return int(length) if isinstance(length, int) else None


def jaxpr_callable(closed: Any) -> Any:
    """A function evaluating the ``ClosedJaxpr`` ``closed`` (to lower it on its own)."""
    return _xcore.jaxpr_as_fun(closed)


def input_avals(closed: Any) -> list[Any]:
    """The abstract values of a ``ClosedJaxpr``'s inputs (shape and dtype)."""
    return list(closed.in_avals)


def jaxpr_function(jaxpr: Any) -> tuple[str, str]:
    """``(function name, traced for)`` of a traced (nested) jaxpr: ``("rnn_cell",
    "scan")``, ``("<lambda>", "fori_loop")``; ``("", "")`` when it records none.

    Relies on: ``Jaxpr.debug_info`` (``DebugInfo.func_src_info`` is ``"name at
    file:line"``, ``traced_for`` the API that traced it), jax 0.4.35 to 0.10.2.
    """
    jaxpr, _ = open_jaxpr(jaxpr)
    info = getattr(jaxpr, "debug_info", None)
    src = getattr(info, "func_src_info", None)
    name = src.split(" ", 1)[0] if isinstance(src, str) else ""
    traced_for = getattr(info, "traced_for", None)
    return name, traced_for if isinstance(traced_for, str) else ""


def jaxpr_function_file(jaxpr: Any) -> str:
    """The file defining the function traced into a (nested) jaxpr
    (``".../jax/_src/numpy/lax_numpy.py"`` for ``jnp.where``'s ``_where``); ``""``
    when it records none.

    Relies on: ``Jaxpr.debug_info.func_src_info`` (``"name at file:line"``), jax
    0.4.35 to 0.10.2.
    """
    jaxpr, _ = open_jaxpr(jaxpr)
    info = getattr(jaxpr, "debug_info", None)
    src = getattr(info, "func_src_info", None)
    if not isinstance(src, str) or " at " not in src:
        return ""
    where = src.split(" at ", 1)[1]
    file, sep, line = where.rpartition(":")
    return file if sep and line.isdigit() else where


_SUB_MARK = "__jaxscope_sub_"
_KEY_START = re.compile(r"[A-Za-z_]\w*=")
_CLOSERS = {"(": ")", "[": "]", "{": "}"}


def printed_params(eqn: Any) -> list[tuple[str, str]] | None:
    """An equation's params as JAX's own printer shows them, in its order.

    JAX's per-primitive rules apply (``custom_jvp_call`` shows ``name=relu`` and
    ``jvp=jvp`` for its function objects, ``jit`` drops its defaults, ``name``
    first...). A nested jaxpr param's value is ``""`` (views draw nested jaxprs
    themselves). None when the printed form cannot be read back as ``key=value``
    pairs (a rule that prints the equation another way, e.g. ``ref[...]``).

    Relies on: ``jax._src.core.pp_eqn_rules``, ``_pp_eqn``, ``JaxprPpContext``
    (``shared_jaxprs``) and ``JaxprPpSettings``, in jax 0.9.0 and 0.10.2.
    """
    core = private("jax._src.core", "compat.printed_params")
    rule = core.pp_eqn_rules.get(eqn.primitive, core._pp_eqn)
    context = core.JaxprPpContext()
    for index, (_, sub) in enumerate(subjaxprs(eqn)):
        context.shared_jaxprs[open_jaxpr(sub)[0]] = f"{_SUB_MARK}{index}"
    try:
        doc = rule(eqn.replace(invars=[], outvars=[]), context, core.JaxprPpSettings())
        text = doc.format(width=1 << 30).strip()
    except Exception:  # a rule that needs the equation's variables
        return None
    name = str(eqn.primitive.name)
    if text == name:
        return []
    if not text.startswith(name + "[") or not text.endswith("]"):
        return None
    return _split_pairs(text[len(name) + 1 : -1])


def _split_pairs(inner: str) -> list[tuple[str, str]] | None:
    """``"a=1 b=(2, 3)"`` → ``[("a", "1"), ("b", "(2, 3)")]``: split at the spaces
    outside brackets and quotes that start a new ``key=``."""
    starts = [0]
    stack: list[str] = []
    quote = ""
    for i, ch in enumerate(inner):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
        elif ch == " " and not stack and _KEY_START.match(inner, i + 1):
            starts.append(i + 1)
    pairs: list[tuple[str, str]] = []
    for start, end in zip(starts, [*starts[1:], len(inner) + 1], strict=True):
        key, eq, value = inner[start : end - 1].partition("=")
        if not eq:
            return None
        value = value.strip()
        if _SUB_MARK in value:
            value = ""
        pairs.append((key, value))
    return pairs


def lowered_jaxpr(closed: Any) -> tuple[Any, list[Any]]:
    """``(Jaxpr, consts)`` of a traced program as JAX lowers it: dead equations and
    unused inputs dropped, as ``jax.jit`` does before lowering (``keep_unused`` off)
    and as its ``eqn_count_pprof`` dump counts them. The equations kept are the
    traced ones (their sources unchanged). The program itself where that fails.

    Relies on: ``jax._src.interpreters.partial_eval.dce_jaxpr_consts(jaxpr,
    used_outputs)`` returning ``(jaxpr, used_consts, used_inputs)``, jax 0.9 to
    0.10.2.
    """
    jaxpr, consts = open_jaxpr(closed)
    try:
        pe = private("jax._src.interpreters.partial_eval", "compat.lowered_jaxpr")
        new, used_consts, _ = pe.dce_jaxpr_consts(jaxpr, [True] * len(jaxpr.outvars))
        kept = [c for c, used in zip(consts, used_consts, strict=False) if used]
        return new, kept
    except Exception:
        return jaxpr, consts


def jit_cache_size(fn: Any) -> int | None:
    """How many compiled programs a ``jax.jit`` wrapper holds (its compiles so far,
    less any evicted), or None for other callables.

    Relies on: ``PjitFunction._cache_size()`` (jax 0.4 to 0.10.2).
    """
    size = getattr(fn, "_cache_size", None)
    if not callable(size):
        return None
    try:
        value = size()
    except Exception:
        return None
    return value if isinstance(value, int) else None


REMAT_PRIMITIVES = frozenset({"remat2", "checkpoint", "remat"})


def remat_policies(closed: Any) -> list[Any]:
    """The ``policy`` param of every ``jax.checkpoint`` equation of a jaxpr, nested
    ones included, depth first in equation order (the order ``_jaxpr.builder``
    walks). Relies on: the remat primitive's name and its ``policy`` param."""
    found: list[Any] = []

    def walk(jaxpr: Any) -> None:
        for eqn in open_jaxpr(jaxpr)[0].eqns:
            if primitive_name(eqn) in REMAT_PRIMITIVES:
                found.append(eqn.params.get("policy"))
            for _, sub in subjaxprs(eqn):
                walk(sub)

    walk(closed)
    return found


def policy_names(policy: Any) -> tuple[frozenset[str], frozenset[str]] | None:
    """``(names it saves, names it offloads)`` of a checkpoint policy that goes by
    ``checkpoint_name``; None for any other policy. ``save_any_names_but_these``
    counts its names as saved ones (it refers to them).

    Relies on: ``SaveOnlyTheseNames.saveable_names``, ``SaveAnyNamesButThese.names``
    and the closure cells ``names_which_can_be_saved`` /
    ``names_which_can_be_offloaded`` of ``save_and_offload_only_these_names``.
    """
    for attr in ("saveable_names", "names"):
        names = getattr(policy, attr, None)
        if isinstance(names, (set, frozenset)):
            return frozenset(str(n) for n in names), frozenset()  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    code = getattr(policy, "__code__", None)
    cells = getattr(policy, "__closure__", None)
    if code is None or not cells:
        return None
    values = dict(zip(code.co_freevars, (c.cell_contents for c in cells), strict=False))
    saved = values.get("names_which_can_be_saved")
    offloaded = values.get("names_which_can_be_offloaded")
    if saved is None and offloaded is None:
        return None
    return frozenset(map(str, saved or ())), frozenset(map(str, offloaded or ()))


def saves_everything(policy: Any) -> bool:
    """Whether a checkpoint policy is ``jax.checkpoint_policies.everything_saveable``
    (the checkpoint then recomputes nothing and saves no memory)."""
    import jax

    return policy is jax.checkpoint_policies.everything_saveable
