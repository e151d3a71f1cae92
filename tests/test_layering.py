"""The layers of SPEC.md, enforced on the source: private JAX only in compat, no
display libraries at the top of core modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxscope"
FILES = sorted(p for p in PACKAGE.rglob("*.py") if "node_modules" not in p.parts)

PRIVATE_JAX = ("jax._src", "jax.interpreters", "jax.core")
DISPLAY_LIBS = ("IPython", "ipywidgets", "anywidget", "rich")


def rel(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def is_compat(path: Path) -> bool:
    return path.relative_to(PACKAGE).parts[0] == "compat"


def is_front_or_render(path: Path) -> bool:
    """Renderers, front-ends, views and widgets may import display libraries."""
    parts = path.relative_to(PACKAGE).parts
    name = path.name
    return (
        parts[0] in ("_render", "_ipython", "_pytest")
        or name in ("pytest_plugin.py", "_cli.py", "__main__.py", "_views.py")
        or (name.startswith("_") and name.endswith("_view.py"))
        or "widget" in name
    )


def _hits(module: str | None, prefixes: tuple[str, ...]) -> bool:
    return module is not None and any(
        module == p or module.startswith(p + ".") for p in prefixes
    )


def dotted(node: ast.AST) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def private_jax_uses(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, f"import {a.name}")
                for a in node.names
                if _hits(a.name, PRIVATE_JAX)
            ]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            mod = node.module or ""
            if _hits(mod, PRIVATE_JAX):
                found.append((node.lineno, f"from {mod} import ..."))
            elif mod == "jax":
                found += [
                    (node.lineno, f"from jax import {a.name}")
                    for a in node.names
                    if f"jax.{a.name}" in PRIVATE_JAX
                ]
        elif isinstance(node, ast.Attribute):
            name = dotted(node)
            if name and any(name.startswith(p + ".") for p in PRIVATE_JAX):
                found.append((node.lineno, name))
    return found


def _type_checking_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def top_level_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """Imports run at import time: module body, including top-level if/try blocks."""
    found: list[tuple[int, str]] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if _type_checking_block(node):
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.append((node.lineno, node.module or ""))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody"):
                stack.extend(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                stack.extend(handler.body)
    return found


def test_the_package_has_files_to_check():
    names = {rel(p) for p in FILES}
    assert "jaxscope/_jaxpr.py" in names and "jaxscope/compat/source.py" in names


@pytest.mark.parametrize("path", [p for p in FILES if not is_compat(p)], ids=rel)
def test_only_compat_touches_private_jax(path):
    uses = private_jax_uses(ast.parse(path.read_text(), str(path)))
    assert not uses, "; ".join(
        f"{rel(path)}:{line} uses {what}: move it into jaxscope/compat/"
        for line, what in uses
    )


@pytest.mark.parametrize(
    "path", [p for p in FILES if not is_front_or_render(p)], ids=rel
)
def test_core_modules_do_not_import_display_libraries_at_top_level(path):
    imports = top_level_imports(ast.parse(path.read_text(), str(path)))
    bad = [(line, mod) for line, mod in imports if _hits(mod, DISPLAY_LIBS)]
    assert not bad, "; ".join(
        f"{rel(path)}:{line} imports {mod} at module level: import it lazily in "
        "the renderer or front-end that needs it"
        for line, mod in bad
    )


def test_the_checker_catches_every_spelling():
    src = (
        "import jax._src.core\n"
        "from jax._src import api\n"
        "from jax import _src, interpreters, core\n"
        "from jax.interpreters import mlir\n"
        "import jax\n"
        "x = jax.core.Var\n"
        "y = jax._src.config\n"
        "from jax.extend import core as ok\n"
        "z = jax.extend.core.Var\n"
    )
    lines = sorted({line for line, _ in private_jax_uses(ast.parse(src))})
    assert lines == [1, 2, 3, 4, 6, 7]
    top = (
        "import rich\nif True:\n    from IPython import display\n"
        "def f():\n    import ipywidgets\nif TYPE_CHECKING:\n    import anywidget\n"
    )
    mods = {m for _, m in top_level_imports(ast.parse(top))}
    assert mods == {"rich", "IPython"}
