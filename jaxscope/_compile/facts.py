# pyright: strict
"""A compile profile read for ``js.diff``: registered with the diff's readers when
this feature loads (``_diff`` never imports ``_compile``; the recompile watcher it
reads imports ``_diff``)."""

from __future__ import annotations

from jaxscope._compile.records import CompileProfile
from jaxscope._diff.facts import (
    EqnSig,
    LineFacts,
    ProgramFacts,
    code_of,
    line_of,
    program_facts,
)


@program_facts.register(CompileProfile)
def compile_facts(view: CompileProfile) -> ProgramFacts:
    """A compile profile's lines: equations by primitive (a profile counts them, it
    keeps no types: an equation's signature is its primitive and where it nests),
    optimized-HLO opcodes; in total the counts and the measured stage seconds."""
    lines: list[LineFacts] = []
    for line in (*view.lines, view.outside):
        if not line.eqns and not line.hlo_ops:
            continue
        within = ("body",) if line.body_eqns == line.eqns and line.eqns else ()
        eqns = tuple(
            EqnSig(within, primitive, (), (), ())
            for primitive, count in line.primitives
            for _ in range(count)
        )
        where, function = line_of(line.source)
        lines.append(
            LineFacts(
                where=where,
                function=function,
                code=line.code or code_of(line.source),
                loc=line.source,
                eqns=eqns,
                ops=dict(line.hlo_opcodes),
            )
        )
    return ProgramFacts(
        name=view.function,
        kind="CompileProfile",
        levels=("jaxpr", "hlo"),
        lines=tuple(lines),
        totals={
            "equations": float(view.totals.eqns),
            "hlo_ops": float(view.totals.hlo_ops),
            "trace_seconds": view.stages.trace,
            "compile_seconds": view.stages.compile,
        },
    )
