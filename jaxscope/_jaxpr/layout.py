"""A jaxpr as display lines (``Line``), which the text, rich and HTML renderers all
draw from: nested jaxprs folded beyond a depth, long regions elided to their first and
last equations, jaxprs used more than once printed once as ``let name = { ... } in``,
long binder lines wrapped."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from jaxscope._format import plural
from jaxscope._gc import gc_paused
from jaxscope._jaxpr.params import eqn_line
from jaxscope._jaxpr.records import JaxprModel, Region
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._source import short_loc


def shared_refs(children: list[Region]) -> tuple[dict[str, str], list[Region]]:
    """``(refs, drawn)`` for an equation's nested jaxprs: each param whose jaxprs
    are all shared, as its name(s) (``{"jaxpr": "relu"}``, ``{"branches": "(a b)"}``),
    and the nested jaxprs still to draw below the equation."""
    groups: dict[str, list[Region]] = {}
    for child in children:
        groups.setdefault(child.label.split("[", 1)[0], []).append(child)
    refs: dict[str, str] = {}
    drawn: list[Region] = []
    for key, kids in groups.items():
        if all(kid.shared for kid in kids):
            many = len(kids) > 1 or "[" in kids[0].label
            names = " ".join(kid.shared for kid in kids)
            refs[key] = f"({names})" if many else names
        else:
            drawn.extend(kids)
    return refs, drawn


def _binders(items: list[tuple[str, str]]) -> str:
    return " ".join(f"{name}:{aval}" for name, aval in items)


@dataclass(frozen=True, slots=True)
class Line:
    """One display line of a jaxpr.

    ``kind``: ``"open"`` (``{ lambda ...``), ``"eqn"``, ``"close"`` (``in (...) }``),
    ``"fold"`` (a nested region folded beyond the depth limit), ``"elided"`` (a run
    of ``count`` equations left out of a long region).
    """

    kind: str
    indent: int
    text: str
    info: EqnInfo | None = None
    region: Region | None = None
    count: int = 0
    refs: tuple[tuple[str, str], ...] = ()  # shared nested jaxprs, by param


def display_lines(
    model: JaxprModel,
    *,
    max_depth: int | None = None,
    max_eqns_per_region: int | None = None,
    width: int | None = None,
) -> list[Line]:
    """The lines of the jaxpr, folded beyond ``max_depth``, long regions elided;
    jaxprs used more than once first, as ``let name = { ... } in``; binder lines
    longer than ``width`` wrapped."""
    lines: list[Line] = []
    for region in model.shared:
        if max_depth is not None and region.depth > max_depth:
            text = f"let {region.shared} = {{ ... {_eqns(region.total)} }} in"
            lines.append(Line("fold", 0, text, region=region, count=region.total))
        else:
            _region_lines(region, 0, lines, max_depth, max_eqns_per_region, width)
    _region_lines(model.top, 0, lines, max_depth, max_eqns_per_region, width)
    return lines


def _wrapped(
    kind: str, indent: int, text: str, width: int | None, region: Region
) -> list[Line]:
    """``text`` as one line, or cut at spaces into lines of at most ``width``
    columns, the rest indented 4 more."""
    if width is None or indent + len(text) <= width:
        return [Line(kind, indent, text, region=region)]
    out: list[Line] = []
    current = ""
    at = indent
    for word in text.split(" "):
        if current and at + len(current) + 1 + len(word) > width:
            out.append(Line(kind, at, current, region=region))
            current, at = word, indent + 4
        else:
            current = f"{current} {word}" if current else word
    out.append(Line(kind, at, current, region=region))
    return out


def _region_lines(
    region: Region,
    indent: int,
    lines: list[Line],
    max_depth: int | None,
    max_eqns: int | None,
    width: int | None = None,
) -> None:
    is_let = bool(region.shared) and indent == 0
    if is_let:
        prefix = f"let {region.shared} = "
    else:
        prefix = f"{region.label}=" if region.label else ""
    consts = _binders(region.constvars)
    head = f"{prefix}{{ lambda {consts}; {_binders(region.invars)}. let"
    lines.extend(_wrapped("open", indent, head, width, region))
    for index in shown_indices(len(region.eqns), max_eqns):
        if index < 0:
            lines.append(
                Line(
                    "elided",
                    indent + 4,
                    f"... {_eqns(-index)} elided "
                    "(%jaxpr --all, or view.max_eqns = None, shows them) ...",
                    region=region,
                    count=-index,
                )
            )
            continue
        info = region.eqns[index]
        refs, drawn = shared_refs(region.children.get(index, []))
        lines.append(
            Line(
                "eqn",
                indent + 4,
                # nested jaxprs follow (with their size), shared ones by name
                eqn_line(info, nested=False, refs=refs),
                info=info,
                region=region,
                refs=tuple(refs.items()),
            )
        )
        for child in drawn:
            if max_depth is not None and child.depth > max_depth:
                lines.append(
                    Line(
                        "fold",
                        indent + 6,
                        f"{child.label}={{ ... {_eqns(child.total)} }}",
                        region=child,
                        count=child.total,
                    )
                )
            else:
                _region_lines(child, indent + 6, lines, max_depth, max_eqns, width)
    tail = closing_text(region) + (" in" if is_let else "")
    lines.extend(_wrapped("close", indent + 2, tail, width, region))


def closing_text(region: Region) -> str:
    """``in (c, d) }``: the line that ends a region, naming its results."""
    outs = ", ".join(name for name, _ in region.outvars)
    comma = "," if len(region.outvars) == 1 else ""
    return f"in ({outs}{comma}) }}"


def fold_depth(model: JaxprModel, max_eqns: int | None, max_lines: int) -> int | None:
    """The deepest level to fold nested jaxprs at (None: no folding) that keeps the
    display (long regions elided to ``max_eqns``) within ``max_lines`` lines."""
    deepest = max((e.depth for e in model.eqns), default=0)
    chosen: int | None = None
    for candidate in [None, *range(deepest - 1, -1, -1)]:
        chosen = candidate
        lines = display_lines(model, max_depth=candidate, max_eqns_per_region=max_eqns)
        if len(lines) <= max_lines:
            break
    return chosen


def render_text(
    model: JaxprModel,
    *,
    max_depth: int | None = None,
    max_eqns_per_region: int | None = None,
    source: bool = True,
    width: int | None = None,
) -> str:
    """The jaxpr as text; each equation line ends with ``# file:line`` where known
    (the file shortened by ``short_path``, as in every view).

    ``max_depth`` folds nested jaxprs deeper than it into ``{ ... N equations }``;
    ``max_eqns_per_region`` keeps the first and last equations of long regions.
    """
    out: list[str] = []
    with gc_paused():
        for line in display_lines(
            model,
            max_depth=max_depth,
            max_eqns_per_region=max_eqns_per_region,
            width=width,
        ):
            text = " " * line.indent + line.text
            if source and line.info is not None and line.info.source is not None:
                loc = line.info.source
                text += f"  # {short_loc(loc)}"
            out.append(text)
    return "\n".join(out)


def render_by_line(model: JaxprModel, *, max_eqns_per_line: int | None = None) -> str:
    """The equations grouped under the source line that produced them.

    Lines are in order of their first equation; equations without a user line come
    last under ``(no source line)``.
    """
    groups: dict[tuple[str, int] | None, list[EqnInfo]] = {}
    locs: dict[tuple[str, int], SourceLoc] = {}
    for info in model.eqns:
        key = info.source.key if info.source is not None else None
        if info.source is not None:
            locs.setdefault(info.source.key, info.source)
        groups.setdefault(key, []).append(info)
    if None in groups:
        groups[None] = groups.pop(None)
    out: list[str] = []
    for key, infos in groups.items():
        if key is None:
            out.append("(no source line)")
        else:
            code = model.source_text.get(key, "")
            out.append(f"{short_loc(locs[key])}  {code}".rstrip())
        for index in shown_indices(len(infos), max_eqns_per_line):
            if index < 0:
                out.append(f"    ... {_eqns(-index)} elided ...")
                continue
            info = infos[index]
            out.append("    " + "  " * info.depth + eqn_line(info, nested=False))
    return "\n".join(out)


def shown_indices(n: int, max_eqns: int | None) -> Iterator[int]:
    """Indices to show; a negative number ``-k`` stands for ``k`` elided equations."""
    if max_eqns is None or n <= max_eqns:
        yield from range(n)
        return
    head = max_eqns // 2
    tail = max_eqns - head
    yield from range(head)
    yield -(n - head - tail)
    yield from range(n - tail, n)


def _eqns(count: int) -> str:
    """``"1 equation"``, ``"2 equations"``."""
    return plural(count, "equation")
