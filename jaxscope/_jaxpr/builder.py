"""ClosedJaxpr → a tree of regions and a flat, depth-first list of ``EqnInfo``.

``build_model`` walks a traced program into a ``JaxprModel``. ``EqnBuilder`` makes
one equation's ``EqnInfo`` at a time, as ``build_model`` does: the stepper's plan
(``_stepper/plan.py``) makes its records with it, lazily, so they equal ``js.jaxpr``'s.
"""

from __future__ import annotations

import linecache
from collections.abc import Sequence
from typing import Any

from jaxscope._gc import gc_paused
from jaxscope._jaxpr.params import literal_text, param_strings, shown_value
from jaxscope._jaxpr.records import JaxprModel, Region
from jaxscope._records import EqnInfo, SourceLoc
from jaxscope._source import (
    ProgramCut,
    current_program,
    display_filename,
)
from jaxscope.compat import jaxpr as _cj
from jaxscope.compat import source as _csource


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


class EqnBuilder:
    """Makes equations' ``EqnInfo`` as ``js.jaxpr`` does: variable names, aval
    strings, primitives, params and sources, each cached across equations.

    ``names`` (``{id(var): name}``) names the variables where given (the stepper
    names a whole program up front); else they are named in order of first use.
    """

    __slots__ = (
        "avals",
        "flat_prims",
        "kinds",
        "namer",
        "pairs",
        "prim_names",
        "printed",
        "sources",
    )

    def __init__(self, names: dict[int, str] | None = None) -> None:
        self.namer = _Namer()
        if names is not None:
            self.namer.names = names
        # id of a variable -> atom(it); the jaxpr being walked keeps it alive
        self.pairs: dict[int, tuple[str, str]] = {}
        self.sources = _Sources()
        self.avals: dict[Any, str] = {}
        self.kinds: dict[type, str] = {}
        self.flat_prims: set[Any] = set()
        self.prim_names: dict[Any, str] = {}
        self.printed: dict[Any, dict[str, str] | None] = {}

    @property
    def raw_files(self) -> dict[str, str]:
        """Each file shown so far (``"In [3]"``) -> the name Python compiled it under."""
        return self.sources.raw_files

    def eqn_info(
        self,
        eqn: Any,
        path: tuple[int, ...],
        region: str,
        used: set[int],
        enclosing: SourceLoc | None,
        subs: list[tuple[str, Any]],
    ) -> EqnInfo:
        """``eqn``'s ``EqnInfo``: ``path`` places it in the (nested) jaxpr held by
        the param ``region`` (``""`` at the top); outputs whose id is not in ``used``
        print as ``_``; ``enclosing`` is the source of the equation holding that
        jaxpr (``None`` at the top) and ``subs`` is ``subjaxprs(eqn)``."""
        params = param_strings(eqn.params, subs)
        source, frames = self.sources.of(eqn, enclosing)
        atom, aval = self.atom, self.aval
        return EqnInfo(
            path=path,
            depth=len(path) // 2,
            primitive=self.primitive(eqn),
            inputs=[atom(v) for v in eqn.invars],
            outputs=[
                atom(v) if id(v) in used else ("_", aval(v.aval)) for v in eqn.outvars
            ],
            params=params,
            source=source,
            scope=_csource.eqn_name_stack(eqn),
            name_stack=_csource.eqn_name_stack_entries(eqn),
            region=region,
            n_subjaxprs=len(subs),
            frames=frames,
            printed_params=self.printed_params(eqn, params, bool(subs)),
        )

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
                k: (params.get(k, "") if not v else shown_value(v)) for k, v in pairs
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
            return (f"{literal_text(_cj.literal_value(atom))}:{aval}", aval)
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


class _Walk(EqnBuilder):
    """An ``EqnBuilder`` that also gathers what ``build_model`` returns."""

    __slots__ = ("by_line", "flat", "line_lists", "sub_names", "sub_uses")

    def __init__(self) -> None:
        super().__init__()
        self.flat: list[EqnInfo] = []
        self.by_line: dict[tuple[str, int], list[EqnInfo]] = {}
        self.line_lists: dict[int, list[EqnInfo]] = {}
        # id of each nested jaxpr -> its uses, and the name JAX would give it
        self.sub_uses: dict[int, list[Region]] = {}
        self.sub_names: dict[int, str] = {}


def build_model(closed_jaxpr: Any, input_names: Sequence[str] = ()) -> JaxprModel:
    """Walk a ClosedJaxpr (from ``Traced.jaxpr`` or ``jax.make_jaxpr``) depth-first.

    ``input_names``: the user's name of each input (``Staged.input_names``), used
    where there is one per input; else JAX's (for ``nnx.jit`` and ``eqx.filter_jit``
    steps, its wrappers' ``model.states[0][3]``).
    """
    builder = _Walk()
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


def _name_shared(b: _Walk) -> list[Region]:
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
    b: _Walk,
    enclosing: SourceLoc | None = None,
) -> Region:
    atom = b.atom
    function, traced_for = _cj.jaxpr_function(jaxpr)
    function_file = _cj.jaxpr_function_file(jaxpr)
    region = Region(
        path=path,
        label=label,
        constvars=[atom(v) for v in jaxpr.constvars],
        invars=[atom(v) for v in jaxpr.invars],
        outvars=[],
        function=function,
        traced_for=traced_for,
        function_file=function_file,
    )
    # JAX prints outputs nothing reads as `_` (a DropVar, or a var left unused).
    used = {id(v) for v in jaxpr.outvars}
    for eqn in jaxpr.eqns:
        used.update(map(id, eqn.invars))
    total = 0
    # Hot loop: names bound once, not looked up per equation.
    subjaxprs, eqn_info = b.subjaxprs, b.eqn_info
    flat_append, region_append = b.flat.append, region.eqns.append
    by_line, line_lists, loc_keys = b.by_line, b.line_lists, b.sources.loc_keys
    for index, eqn in enumerate(jaxpr.eqns):
        eqn_path = (*path, index)
        subs = subjaxprs(eqn)
        info = eqn_info(eqn, eqn_path, label, used, enclosing, subs)
        source = info.source
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
