"""What a code object reads and writes, from its bytecode.

Each load of a global or closure variable is an ``Access`` with the attribute chain
read after it (``cfg.scale``) and, when the same expression writes the object
(``log.append``, ``d[k] = v``, ``obj.x = v``), the kind of write; each
``STORE_GLOBAL``/``STORE_DEREF`` is an assignment of the name itself.
"""

from __future__ import annotations

import dis
import functools
import types
from dataclasses import dataclass

_MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "pop",
        "remove",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "popitem",
        "sort",
        "reverse",
        "__setitem__",
        "__delitem__",
    }
)


_DEREF_OPS = frozenset({"LOAD_DEREF", "LOAD_CLASSDEREF", "STORE_DEREF"})


@dataclass(frozen=True, slots=True)
class Access:
    scope: str  # "global" | "closure"
    name: str
    attrs: tuple[
        str, ...
    ]  # attribute chain read after the name: cfg.scale -> ("scale",)
    line: int
    mutator: str | None  # method name / "setitem" / "setattr" when it writes the object


@dataclass(frozen=True, slots=True)
class CodeFacts:
    reads: tuple[Access, ...]
    writes: tuple[Access, ...]  # STORE_GLOBAL / STORE_DEREF of the name itself
    nested: tuple[types.CodeType, ...]


@functools.lru_cache(maxsize=4096)
def code_facts(code: types.CodeType) -> CodeFacts:
    reads: list[Access] = []
    writes: list[Access] = []
    nested = tuple(c for c in code.co_consts if isinstance(c, types.CodeType))
    instructions = list(dis.get_instructions(code))
    line = code.co_firstlineno
    for i, ins in enumerate(instructions):
        if ins.starts_line is not None:
            line = ins.starts_line
        op = ins.opname
        if op in _DEREF_OPS and ins.argval in code.co_cellvars:
            continue  # the code's own local, kept in a cell for its inner functions
        if op in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF"):
            scope = "global" if op in ("LOAD_GLOBAL", "LOAD_NAME") else "closure"
            name = str(ins.argval)
            attrs: list[str] = []
            mutator: str | None = None
            j = i + 1
            while j < len(instructions) and instructions[j].opname in (
                "LOAD_ATTR",
                "LOAD_METHOD",
            ):
                attrs.append(str(instructions[j].argval))
                j += 1
            if attrs and attrs[-1] in _MUTATORS:
                mutator = attrs.pop()
            elif j < len(instructions) and instructions[j].opname in ("STORE_ATTR",):
                mutator = "setattr"
            elif _is_subscript_store(instructions, j):
                mutator = "setitem"
            reads.append(Access(scope, name, tuple(attrs), line, mutator))
        elif op in ("STORE_GLOBAL", "STORE_DEREF"):
            scope = "global" if op == "STORE_GLOBAL" else "closure"
            writes.append(Access(scope, str(ins.argval), (), line, "assign"))
    return CodeFacts(tuple(reads), tuple(writes), nested)


def _is_subscript_store(instructions: list[dis.Instruction], j: int) -> bool:
    # `name[key] = value` compiles to LOAD name; <load key>; STORE_SUBSCR.
    for k in range(j, min(j + 4, len(instructions))):
        opname = instructions[k].opname
        if opname == "STORE_SUBSCR":
            return True
        if opname.startswith(("CALL", "STORE_", "RETURN", "POP_JUMP")):
            return False
    return False
