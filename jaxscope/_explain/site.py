"""The failing expression in the user's source: the lines around it, its AST node,
its statement and the function it is in."""

from __future__ import annotations

import ast
import linecache
import types
from dataclasses import dataclass
from typing import TypeGuard

_AST_CACHE: dict[tuple[str, int, int], ast.Module | None] = {}
_AST_CACHE_SIZE = 64


def source_lines(
    filename: str, line: int, before: int = 2, after: int = 1
) -> tuple[tuple[int, str], ...]:
    """``(number, text)`` of ``line`` and a little context: up to ``before`` lines
    above (leading blanks dropped), up to ``after`` below within the same block."""
    lines = linecache.getlines(filename)
    if not lines or line < 1 or line > len(lines):
        return ()
    current = lines[line - 1]
    indent = len(current) - len(current.lstrip())
    out = [
        (n, lines[n - 1].rstrip("\n")) for n in range(max(1, line - before), line + 1)
    ]
    while len(out) > 1 and not out[0][1].strip():
        out.pop(0)
    for n in range(line + 1, min(len(lines), line + after) + 1):
        text = lines[n - 1].rstrip("\n")
        if not text.strip() or len(text) - len(text.lstrip()) < indent:
            break  # the next block is not this code's context
        out.append((n, text))
    return tuple(out)


def _module_ast(filename: str) -> tuple[ast.Module | None, str]:
    lines = linecache.getlines(filename)
    source = "".join(lines)
    key = (filename, len(source), hash(source))
    if key not in _AST_CACHE:
        try:
            _AST_CACHE[key] = ast.parse(source)
        except (SyntaxError, ValueError):
            _AST_CACHE[key] = None
        if len(_AST_CACHE) > _AST_CACHE_SIZE:
            _AST_CACHE.pop(next(iter(_AST_CACHE)))
    return _AST_CACHE[key], source


@dataclass(frozen=True, slots=True)
class Site:
    """The failing expression and its statement, parsed from the user's source.

    ``node`` is the expression at the failing columns (None when they are unknown),
    ``stmt`` the innermost statement on the line, ``scope`` the innermost function
    (the module when there is none).
    """

    source: str
    node: ast.AST | None
    stmt: ast.stmt | None
    scope: ast.AST | None

    def text(self, node: ast.AST | None) -> str:
        """The source text of ``node`` ("" for None)."""
        if node is None:
            return ""
        return ast.get_source_segment(self.source, node) or ast.unparse(node)


NO_SITE = Site("", None, None, None)


def site_at(filename: str, line: int, col: int | None, end_col: int | None) -> Site:
    """The site of the expression at ``line``, columns ``col`` to ``end_col``."""
    tree, source = _module_ast(filename)
    if tree is None:
        return Site(source, None, None, None)
    best: ast.AST | None = None
    stmt: ast.stmt | None = None
    scope: ast.AST | None = None
    for node in ast.walk(tree):
        lineno = getattr(node, "lineno", None)
        end = getattr(node, "end_lineno", None)
        if lineno is None or end is None or not lineno <= line <= end:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and (
            scope is None or contains(scope, node)
        ):
            scope = node
        if _is_simple_stmt(node) and (stmt is None or contains(stmt, node)):
            stmt = node
        if (
            col is not None
            and end_col is not None
            and lineno == end == line
            and getattr(node, "col_offset", None) == col
            and getattr(node, "end_col_offset", None) == end_col
            and isinstance(node, ast.expr)
        ):
            best = node
    return Site(source, best, stmt, scope if scope is not None else tree)


def function_node(filename: str, code: types.CodeType) -> ast.AST | None:
    """The definition (``def`` or ``lambda``) that compiled to ``code``, if found."""
    tree, _source = _module_ast(filename)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if node.name == code.co_name and code.co_firstlineno in (
                first,
                node.lineno,
            ):
                return node
        elif (
            isinstance(node, ast.Lambda)
            and code.co_name == "<lambda>"
            and node.lineno == code.co_firstlineno
        ):
            return node
    return None


def _is_simple_stmt(node: ast.AST) -> TypeGuard[ast.stmt]:
    return isinstance(node, ast.stmt) and not isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    )


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    """Whether ``inner``'s source range lies within ``outer``'s."""
    return (getattr(outer, "lineno", 0), getattr(outer, "col_offset", 0)) <= (
        getattr(inner, "lineno", 0),
        getattr(inner, "col_offset", 0),
    ) and (getattr(inner, "end_lineno", 0), getattr(inner, "end_col_offset", 0)) <= (
        getattr(outer, "end_lineno", 0),
        getattr(outer, "end_col_offset", 0),
    )
