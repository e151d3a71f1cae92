"""ClosedJaxpr → a tree of regions and a flat, depth-first list of ``EqnInfo``."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ._model import EqnInfo, SourceLoc
from ._source import loc_of_traceback
from .compat import jaxpr as _cj
from .compat import source as _csource

_MAX_PARAM_CHARS = 80


@dataclass(slots=True)
class Region:
    """One (possibly nested) jaxpr: its binders, equations and the regions inside them.

    ``path`` is the prefix its equations' paths extend; ``()`` for the top jaxpr.
    """

    path: tuple[int, ...]
    label: str
    constvars: list[tuple[str, str]]
    invars: list[tuple[str, str]]
    outvars: list[tuple[str, str]]
    eqns: list[EqnInfo] = field(default_factory=list)
    children: dict[int, list[Region]] = field(default_factory=dict)

    @property
    def depth(self) -> int:
        return len(self.path) // 2

    def count_eqns(self) -> int:
        """Equations in this region, nested ones included."""
        total = len(self.eqns)
        for regions in self.children.values():
            total += sum(r.count_eqns() for r in regions)
        return total


@dataclass(slots=True)
class JaxprModel:
    """Everything a view needs about a traced jaxpr, as plain data."""

    top: Region
    eqns: list[EqnInfo]
    arg_names: tuple[str, ...] | None
    result_paths: tuple[str, ...] | None
    by_line: dict[tuple[str, int], list[EqnInfo]]


class _Namer:
    """Names variables ``a, b, …, z, ba, bb, …`` in order of first appearance."""

    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def name(self, var: Any) -> str:
        key = id(var)
        found = self.names.get(key)
        if found is None:
            found = _letters(len(self.names))
            self.names[key] = found
        return found


def _letters(n: int) -> str:
    out = ""
    while True:
        out = chr(ord("a") + n % 26) + out
        n //= 26
        if n == 0:
            return out


def _atom(atom: Any, namer: _Namer) -> tuple[str, str]:
    aval = _cj.aval_str(atom.aval)
    if _cj.is_literal(atom):
        return (f"{_cj.literal_value(atom)}:{aval}", aval)
    if _cj.is_dropvar(atom):
        return ("_", aval)
    return (namer.name(atom), aval)


def _param_str(value: Any) -> str:
    if callable(value) and hasattr(value, "__name__"):
        text = f"<{value.__name__}>"
    else:
        text = str(value)
    text = " ".join(text.split())
    if len(text) > _MAX_PARAM_CHARS:
        text = text[: _MAX_PARAM_CHARS - 3] + "..."
    return text


def build_model(closed_jaxpr: Any) -> JaxprModel:
    """Walk a ClosedJaxpr (from ``Traced.jaxpr`` or ``jax.make_jaxpr``) depth-first."""
    namer = _Namer()
    flat: list[EqnInfo] = []
    by_line: dict[tuple[str, int], list[EqnInfo]] = {}
    jaxpr, _consts = _cj.open_jaxpr(closed_jaxpr)
    top = _walk(jaxpr, (), "", namer, flat, by_line)
    return JaxprModel(
        top=top,
        eqns=flat,
        arg_names=_cj.jaxpr_arg_names(jaxpr),
        result_paths=_cj.jaxpr_result_paths(jaxpr),
        by_line=by_line,
    )


def _walk(
    jaxpr: Any,
    path: tuple[int, ...],
    label: str,
    namer: _Namer,
    flat: list[EqnInfo],
    by_line: dict[tuple[str, int], list[EqnInfo]],
) -> Region:
    depth = len(path) // 2
    region = Region(
        path=path,
        label=label,
        constvars=[_atom(v, namer) for v in jaxpr.constvars],
        invars=[_atom(v, namer) for v in jaxpr.invars],
        outvars=[],
    )
    source_cache: dict[int, SourceLoc | None] = {}
    for index, eqn in enumerate(jaxpr.eqns):
        eqn_path = (*path, index)
        subs = _cj.subjaxprs(eqn)
        sub_keys = {key.split("[", 1)[0] for key, _ in subs}
        params = {
            key: _param_str(value)
            for key, value in eqn.params.items()
            if key not in sub_keys
        }
        for key, sub in subs:
            params[key] = f"{{{len(_cj.open_jaxpr(sub)[0].eqns)} eqns}}"
        traceback = _csource.eqn_traceback(eqn)
        tb_key = id(traceback)
        if tb_key in source_cache:
            source = source_cache[tb_key]
        else:
            source = loc_of_traceback(traceback)
            source_cache[tb_key] = source
        info = EqnInfo(
            path=eqn_path,
            depth=depth,
            primitive=_cj.primitive_name(eqn),
            inputs=[_atom(v, namer) for v in eqn.invars],
            outputs=[_atom(v, namer) for v in eqn.outvars],
            params=params,
            source=source,
            scope=_csource.eqn_name_stack(eqn),
            region=label,
            n_subjaxprs=len(subs),
        )
        flat.append(info)
        region.eqns.append(info)
        if source is not None:
            by_line.setdefault(source.key, []).append(info)
        if subs:
            region.children[index] = [
                _walk(_cj.open_jaxpr(sub)[0], (*eqn_path, j), key, namer, flat, by_line)
                for j, (key, sub) in enumerate(subs)
            ]
    region.outvars = [_atom(v, namer) for v in jaxpr.outvars]
    return region


def _binders(items: list[tuple[str, str]]) -> str:
    return " ".join(f"{name}:{aval}" for name, aval in items)


def eqn_line(info: EqnInfo) -> str:
    """``d:f32[4] = sin a`` (params in brackets, nested jaxprs as ``{N eqns}``)."""
    outs = " ".join(f"{n}:{a}" for n, a in info.outputs) or "()"
    params = ""
    shown = {k: v for k, v in info.params.items()}
    if shown:
        params = "[" + " ".join(f"{k}={v}" for k, v in shown.items()) + "]"
    ins = " ".join(n for n, _ in info.inputs)
    return f"{outs} = {info.primitive}{params} {ins}".rstrip()


def render_text(
    model: JaxprModel,
    *,
    max_depth: int | None = None,
    max_eqns_per_region: int | None = None,
    source: bool = True,
) -> str:
    """The jaxpr as text; each equation line ends with ``# file:line`` where known.

    ``max_depth`` folds nested jaxprs deeper than it into ``{ ... N equations }``;
    ``max_eqns_per_region`` keeps the first and last equations of long regions.
    """
    lines: list[str] = []
    _region_lines(model.top, 0, lines, max_depth, max_eqns_per_region, source)
    return "\n".join(lines)


def _region_lines(
    region: Region,
    indent: int,
    lines: list[str],
    max_depth: int | None,
    max_eqns: int | None,
    source: bool,
) -> None:
    pad = " " * indent
    prefix = f"{region.label}=" if region.label else ""
    lines.append(
        f"{pad}{prefix}{{ lambda {_binders(region.constvars)}; "
        f"{_binders(region.invars)}. let"
    )
    for index in _shown_indices(len(region.eqns), max_eqns):
        if index < 0:
            lines.append(f"{pad}    ... {-index} equations elided ...")
            continue
        info = region.eqns[index]
        line = f"{pad}    {eqn_line(info)}"
        if source and info.source is not None:
            line += f"  # {info.source}"
        lines.append(line)
        for child in region.children.get(index, ()):
            if max_depth is not None and child.depth > max_depth:
                lines.append(
                    f"{pad}      {child.label}={{ ... {child.count_eqns()} equations }}"
                )
            else:
                _region_lines(child, indent + 6, lines, max_depth, max_eqns, source)
    outs = ", ".join(name for name, _ in region.outvars)
    lines.append(f"{pad}  in ({outs}{',' if len(region.outvars) == 1 else ''}) }}")


def _shown_indices(n: int, max_eqns: int | None) -> Iterator[int]:
    """Indices to show; a negative number ``-k`` stands for ``k`` elided equations."""
    if max_eqns is None or n <= max_eqns:
        yield from range(n)
        return
    head = max_eqns // 2
    tail = max_eqns - head
    yield from range(head)
    yield -(n - head - tail)
    yield from range(n - tail, n)
