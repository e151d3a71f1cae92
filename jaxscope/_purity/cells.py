"""What a notebook cell can have changed: the names it mentions.

``%purity on`` checks captured values after every cell; comparing every capture of
every watched function each time costs milliseconds with many functions. A cell can
change a captured value only through a name it mentions (``table[0] = 1``,
``cfg.scale = 2``, ``shift = 3``), through a function or class it calls that mentions
it, or by rebinding it (seen cheaply by identity, see ``stale.stale_among``). So
``names_touched`` lists the names in the cell's code and, transitively, in the code of
the user's functions, classes and objects it names. Code that reaches names by strings
(``exec``, ``globals()``, ``setattr``, a line magic) gives None: check everything.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Mapping
from typing import Any

from jaxscope._purity.values import in_scope, user_function

# Names through which a cell can reach any other name.
_DYNAMIC = frozenset(
    {
        "exec",
        "eval",
        "globals",
        "locals",
        "vars",
        "setattr",
        "delattr",
        "__import__",
        "get_ipython",
        "importlib",
        "reload",
        "runpy",
    }
)
_MAX_FUNCTIONS = 200


def names_touched(source: str, namespace: Mapping[str, Any]) -> frozenset[str] | None:
    """The names a cell's Python ``source`` can have changed, or None if it cannot
    be told (a syntax error, or names reached by strings)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names = _names_in_tree(tree)
    if names & _DYNAMIC:
        return None
    return _with_called_code(names, namespace)


def _names_in_tree(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def _with_called_code(
    names: set[str], namespace: Mapping[str, Any]
) -> frozenset[str] | None:
    """``names`` and the names in the code of the user's functions, classes and
    objects they resolve to (what a call from the cell can reach)."""
    seen: set[types.CodeType] = set()
    pending = [namespace.get(name) for name in names]
    while pending:
        if len(seen) > _MAX_FUNCTIONS:
            return None  # too much code to follow: check everything
        for code in _user_code_of(pending.pop()):
            if code in seen:
                continue
            seen.add(code)
            new = set(_names_in_code(code)) - names
            if new & _DYNAMIC:
                return None
            names |= new
            pending.extend(namespace.get(name) for name in new)
    return frozenset(names)


def _user_code_of(value: Any) -> list[types.CodeType]:
    """The code of a user function, of a user class's methods, or of the methods of
    an instance of a user class."""
    if value is None or isinstance(value, types.ModuleType):
        return []
    try:
        fn = user_function(value) if callable(value) else None
        if fn is not None and not isinstance(value, type):
            return [fn.__code__] if in_scope(fn.__code__.co_filename) else []
        cls: type = value if isinstance(value, type) else type(value)
        return [
            member.__code__
            for klass in cls.__mro__
            for member in vars(klass).values()
            if isinstance(member, types.FunctionType)
            and in_scope(member.__code__.co_filename)
        ]
    except Exception:
        return []


def _names_in_code(code: types.CodeType) -> list[str]:
    names = [*code.co_names, *code.co_freevars, *code.co_cellvars]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names.extend(_names_in_code(const))
    return names
