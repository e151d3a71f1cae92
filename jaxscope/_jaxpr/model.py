"""ClosedJaxpr → a tree of regions and a flat, depth-first list of ``EqnInfo``.

Also the display logic shared by every renderer: which params are noise, how a long
program is folded (nested jaxprs beyond a depth) and elided (long runs of equations),
as a list of ``Line`` records that the text, rich and HTML renderers all draw from.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from jaxscope._format import plural, truncate
from jaxscope._gc import gc_paused
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._source import (
    ProgramCut,
    current_program,
    display_filename,
    short_loc,
)
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import source as _csource

_MAX_PARAM_CHARS = 80


@dataclass(slots=True)
class Region:
    """One (possibly nested) jaxpr: its binders, equations and the regions inside them.

    ``path`` is the prefix its equations' paths extend; ``()`` for the top jaxpr.
    ``total`` counts its equations, nested ones included. ``function`` is the name of
    the Python function traced into it (``"rnn_cell"``, ``"<lambda>"``, or ``""``),
    ``traced_for`` the API that traced it (``"scan"``, ``"fori_loop"``, ``"jit"``).
    """

    path: tuple[int, ...]
    label: str
    constvars: list[tuple[str, str]]
    invars: list[tuple[str, str]]
    outvars: list[tuple[str, str]]
    eqns: list[EqnInfo] = field(default_factory=list)
    children: dict[int, list[Region]] = field(default_factory=dict)
    total: int = 0
    function: str = ""
    traced_for: str = ""
    #: the name displays print it under (``let relu = {...} in``) when the same
    #: jaxpr is used more than once, as JAX's printer does; ``""`` otherwise
    shared: str = ""

    @property
    def depth(self) -> int:
        return len(self.path) // 2


@dataclass(slots=True)
class JaxprModel:
    """Everything a view needs about a traced jaxpr, as plain data.

    ``source_text`` maps ``(file, line)`` keys of ``by_line`` to the text of that
    source line where Python's ``linecache`` knows it (IPython cells included).
    ``raw_files`` maps each shown file (``"In [3]"``) to the file name Python compiled
    it under, for reading more of its source: cells run without history share one
    ``In [N]`` name, but each has its own compiled file name.
    """

    top: Region
    eqns: list[EqnInfo]
    arg_names: tuple[str, ...] | None
    result_paths: tuple[str, ...] | None
    by_line: dict[tuple[str, int], list[EqnInfo]]
    source_text: dict[tuple[str, int], str] = field(default_factory=dict)
    raw_files: dict[str, str] = field(default_factory=dict)
    shared: list[Region] = field(default_factory=list)
    """The first use of each shared jaxpr (``Region.shared``), inner ones first."""


class _Namer:
    """Names variables ``a, b, …, z, ba, bb, …`` in order of first appearance."""

    __slots__ = ("names",)

    def __init__(self) -> None:
        self.names: dict[int, str] = {}

    def name(self, var: Any) -> str:
        key = id(var)
        found = self.names.get(key)
        if found is None:
            found = letter_name(len(self.names))
            self.names[key] = found
        return found


_LETTER_NAMES: list[str] = []  # letter_name(n) for n < its length, made in order


def letter_name(n: int) -> str:
    """JAX's variable names: ``a`` .. ``z``, ``ba``, ``bb`` ..."""
    names = _LETTER_NAMES
    if n < len(names):
        return names[n]
    if n == len(names) and n < 1_000_000:
        names.append(_letter_name(n))
        return names[n]
    return _letter_name(n)


def _letter_name(n: int) -> str:
    out = ""
    while True:
        out = chr(ord("a") + n % 26) + out
        n //= 26
        if n == 0:
            return out


def _where(raw: Any) -> tuple[str, int, str]:
    return raw.file, raw.line, raw.function


class _Sources:
    """Source locations of equations, cached per traceback frame, with the text of
    each line and the file name Python compiled each shown file under."""

    __slots__ = (
        "cut",
        "files",
        "keys",
        "loc_keys",
        "locs",
        "raw_files",
        "source_text",
        "traces",
    )

    def __init__(self) -> None:
        self.locs: dict[Any, SourceLoc] = {}
        # compiled file name -> (its shown name, its lines): once per file, not line
        self.files: dict[str, tuple[str, list[str]]] = {}
        self.keys: dict[tuple[str, int], tuple[str, int]] = {}
        self.loc_keys: dict[int, tuple[str, int]] = {}  # id of a loc -> its key
        # a stack's user frames -> their locs, and the first not in a library
        self.traces: dict[tuple[Any, ...], tuple[tuple[SourceLoc, ...], Any]] = {}
        self.source_text: dict[tuple[str, int], str] = {}
        self.raw_files: dict[str, str] = {}
        # frames outside the staged function are its caller's (from the call JAX
        # traced and cached first), never the program's source
        self.cut: ProgramCut[Any] = ProgramCut(current_program(), _where)

    def loc(self, raw: Any) -> SourceLoc:
        loc = self.locs.get(raw)
        if loc is None:
            file = self.files.get(raw.file)
            if file is None:
                shown = display_filename(raw.file)
                self.raw_files.setdefault(shown, raw.file)
                file = self.files[raw.file] = (shown, linecache.getlines(raw.file))
            shown, lines = file
            loc = self.locs[raw] = SourceLoc(
                file=shown,
                line=raw.line,
                column=raw.column if raw.column >= 0 else None,
                function=raw.function,
            )  # loc_from_raw(raw), its file name found once
            # one (file, line) tuple per line, for source_text and by_line both
            key = (shown, raw.line)
            key = self.keys.setdefault(key, key)
            self.loc_keys[id(loc)] = key
            if key not in self.source_text and 1 <= raw.line <= len(lines):
                text = lines[raw.line - 1].strip()
                if text:
                    self.source_text[key] = text
        return loc

    def of(
        self, eqn: Any, enclosing: SourceLoc | None
    ) -> tuple[SourceLoc | None, tuple[SourceLoc, ...]]:
        """``(source, frames)`` of ``eqn``: the innermost frame in the user's own
        code, else the line of the equation that encloses it (equations of JAX's or a
        library's nested jit record no user frame), else the innermost frame."""
        raws = _csource.frames_of(_csource.eqn_traceback(eqn))
        # Equations of one line run many times (a loop) share their stack: one
        # lookup (its user frames are one or two) instead of one per frame.
        key = tuple(raws)
        found = self.traces.get(key)
        if found is None:
            found = self.traces[key] = self._trace(raws)
        frames, user = found
        if user is not None:
            return user, frames
        if enclosing is not None:
            return enclosing, frames
        return (frames[0] if frames else None), frames

    def _trace(self, raws: Any) -> tuple[tuple[SourceLoc, ...], SourceLoc | None]:
        raws = self.cut(raws)
        frames = tuple([self.loc(raw) for raw in raws])
        for raw, loc in zip(raws, frames, strict=True):
            if not _csource.is_library_file(raw.file):
                return frames, loc
        return frames, None


class _Builder:
    """State of one walk: variable names, aval strings, primitives and sources, cached."""

    __slots__ = (
        "avals",
        "by_line",
        "flat",
        "flat_prims",
        "kinds",
        "line_lists",
        "namer",
        "pairs",
        "prim_names",
        "printed",
        "sources",
        "sub_names",
        "sub_uses",
    )

    def __init__(self) -> None:
        self.namer = _Namer()
        # id of a variable -> atom(it); the jaxpr being walked keeps it alive
        self.pairs: dict[int, tuple[str, str]] = {}
        self.sources = _Sources()
        self.flat: list[EqnInfo] = []
        self.by_line: dict[tuple[str, int], list[EqnInfo]] = {}
        self.line_lists: dict[int, list[EqnInfo]] = {}
        self.avals: dict[Any, str] = {}
        self.kinds: dict[type, str] = {}
        self.flat_prims: set[Any] = set()
        self.prim_names: dict[Any, str] = {}
        self.printed: dict[Any, dict[str, str] | None] = {}
        # id of each nested jaxpr -> its uses, and the name JAX would give it
        self.sub_uses: dict[int, list[Region]] = {}
        self.sub_names: dict[int, str] = {}

    def printed_params(
        self, eqn: Any, params: dict[str, str], has_subs: bool
    ) -> dict[str, str] | None:
        """``EqnInfo.printed_params``; JAX's printer runs once per distinct params
        (its rules read only the params, which ``params`` spell in full)."""
        key = None
        # a value cut short could hide a difference the printer would show
        if not params:
            key = eqn.primitive
        elif not has_subs and not any(v.endswith("...") for v in params.values()):
            key = (eqn.primitive, tuple(params.items()))
        if key is not None and key in self.printed:
            return self.printed[key]
        pairs = _cj.printed_params(eqn)
        found = None
        if pairs is not None:
            found = {
                k: (params.get(k, "") if not v else _shown_value(v)) for k, v in pairs
            }
        if key is not None:
            self.printed[key] = found
        return found

    def aval(self, aval: Any) -> str:
        # Hashing an aval is slow (sharding, vma...); its shape and dtype are not.
        try:
            key = (aval.shape, aval.dtype)
            found = self.avals.get(key)
        except (AttributeError, TypeError):
            return _cj.aval_str(aval)
        if found is None:
            found = _cj.aval_str(aval)
            self.avals[key] = found
        return found

    def atom(self, atom: Any) -> tuple[str, str]:
        pair = self.pairs.get(id(atom))
        if pair is not None:  # a variable named before: most operands
            return pair
        aval = self.aval(atom.aval)
        kind = self.kinds.get(type(atom))
        if kind is None:
            kind = (
                "lit"
                if _cj.is_literal(atom)
                else "drop"
                if _cj.is_dropvar(atom)
                else ""
            )
            self.kinds[type(atom)] = kind
        if not kind:
            names = self.namer.names
            name = names.get(id(atom))
            if name is None:
                name = names[id(atom)] = letter_name(len(names))
            pair = self.pairs[id(atom)] = (name, aval)
            return pair
        if kind == "lit":
            return (f"{_literal_text(_cj.literal_value(atom))}:{aval}", aval)
        return ("_", aval)

    def subjaxprs(self, eqn: Any) -> list[tuple[str, Any]]:
        # A primitive's params hold nested jaxprs always or never (within a program).
        prim = eqn.primitive
        if prim in self.flat_prims:
            return []
        subs = _cj.subjaxprs(eqn)
        if not subs:
            self.flat_prims.add(prim)
        return subs

    def primitive(self, eqn: Any) -> str:
        prim = eqn.primitive
        name = self.prim_names.get(prim)
        if name is None:
            name = _cj.primitive_name(eqn)
            self.prim_names[prim] = name
        return name


def _literal_text(value: Any) -> str:
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


def _shown_value(text: str) -> str:
    return truncate(" ".join(text.split()), _MAX_PARAM_CHARS)


def _params(params: dict[str, Any], subs: list[tuple[str, Any]]) -> dict[str, str]:
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


def build_model(closed_jaxpr: Any, input_names: Sequence[str] = ()) -> JaxprModel:
    """Walk a ClosedJaxpr (from ``Traced.jaxpr`` or ``jax.make_jaxpr``) depth-first.

    ``input_names``: the user's name of each input (``Staged.input_names``), used
    where there is one per input; else JAX's (for ``nnx.jit`` and ``eqx.filter_jit``
    steps, its wrappers' ``model.states[0][3]``).
    """
    builder = _Builder()
    jaxpr, _consts = _cj.open_jaxpr(closed_jaxpr)
    builder.sources.cut.learn(
        _csource.frames_of(_csource.eqn_traceback(eqn)) for eqn in jaxpr.eqns
    )
    # The walk allocates one small acyclic record per equation; letting the cyclic
    # GC rescan JAX's large heap on the way costs more than the walk itself.
    with gc_paused():
        top = _walk(jaxpr, (), "", builder)
    shared = _name_shared(builder)
    return JaxprModel(
        top=top,
        eqns=builder.flat,
        arg_names=arg_names(jaxpr, input_names),
        result_paths=_cj.jaxpr_result_paths(jaxpr),
        by_line=builder.by_line,
        source_text=builder.sources.source_text,
        raw_files=builder.sources.raw_files,
        shared=shared,
    )


def arg_names(jaxpr: Any, input_names: Sequence[str] = ()) -> tuple[str, ...] | None:
    """The names of ``jaxpr``'s inputs: ``input_names`` where there is one per input,
    else JAX's own (``debug_info.arg_names``), or None."""
    if input_names and len(input_names) == len(jaxpr.invars):
        return tuple(input_names)
    return _cj.jaxpr_arg_names(jaxpr)


def _name_shared(b: _Builder) -> list[Region]:
    """Mark jaxprs used more than once with a unique name (``relu``, ``relu1``...,
    as JAX's printer numbers them); return their first uses."""
    taken: dict[str, int] = {}
    firsts: list[Region] = []
    for key, uses in b.sub_uses.items():
        if len(uses) < 2:
            continue
        name = b.sub_names[key]
        count = taken.get(name, 0)
        taken[name] = count + 1
        if count:
            name = f"{name}{count}"
            taken[name] = taken.get(name, 0) + 1
        for region in uses:
            region.shared = name
        firsts.append(uses[0])
    return firsts


def _walk(
    jaxpr: Any,
    path: tuple[int, ...],
    label: str,
    b: _Builder,
    enclosing: SourceLoc | None = None,
) -> Region:
    depth = len(path) // 2
    atom = b.atom
    function, traced_for = _cj.jaxpr_function(jaxpr)
    region = Region(
        path=path,
        label=label,
        constvars=[atom(v) for v in jaxpr.constvars],
        invars=[atom(v) for v in jaxpr.invars],
        outvars=[],
        function=function,
        traced_for=traced_for,
    )
    # JAX prints outputs nothing reads as `_` (a DropVar, or a var left unused).
    used = {id(v) for v in jaxpr.outvars}
    for eqn in jaxpr.eqns:
        used.update(map(id, eqn.invars))
    total = 0
    # Hot loop: names bound once, not looked up per equation.
    subjaxprs, primitive, of = b.subjaxprs, b.primitive, b.sources.of
    printed_params, aval = b.printed_params, b.aval
    name_stack, name_stack_entries = (
        _csource.eqn_name_stack,
        _csource.eqn_name_stack_entries,
    )
    flat_append, region_append = b.flat.append, region.eqns.append
    by_line, line_lists, loc_keys = b.by_line, b.line_lists, b.sources.loc_keys
    for index, eqn in enumerate(jaxpr.eqns):
        eqn_path = (*path, index)
        subs = subjaxprs(eqn)
        params = _params(eqn.params, subs)
        source, frames = of(eqn, enclosing)
        info = EqnInfo(
            path=eqn_path,
            depth=depth,
            primitive=primitive(eqn),
            inputs=[atom(v) for v in eqn.invars],
            outputs=[
                atom(v) if id(v) in used else ("_", aval(v.aval)) for v in eqn.outvars
            ],
            params=params,
            source=source,
            scope=name_stack(eqn),
            name_stack=name_stack_entries(eqn),
            region=label,
            n_subjaxprs=len(subs),
            frames=frames,
            printed_params=printed_params(eqn, params, bool(subs)),
        )
        flat_append(info)
        region_append(info)
        total += 1
        if source is not None:
            # by_line's list of each SourceLoc (kept alive by _Sources), by id:
            # hashing a SourceLoc or its key costs more
            infos = line_lists.get(id(source))
            if infos is None:
                key = loc_keys[id(source)]
                infos = line_lists[id(source)] = by_line.setdefault(key, [])
            infos.append(info)
        if subs:
            kids: list[Region] = []
            # JAX names a shared jaxpr after the `name` param of an equation using it
            name = str(eqn.params.get("name") or "jaxpr").strip("<>")
            for j, (key, sub) in enumerate(subs):
                opened = _cj.open_jaxpr(sub)[0]
                kid = _walk(opened, (*eqn_path, j), key, b, source)
                kids.append(kid)
                b.sub_uses.setdefault(id(opened), []).append(kid)
                b.sub_names.setdefault(id(opened), name)
            region.children[index] = kids
            total += sum(k.total for k in kids)
    region.outvars = [atom(v) for v in jaxpr.outvars]
    region.total = total
    return region


# ---------------------------------------------------------------------------------
# Display: noisy params, equation lines, folding and eliding.

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
