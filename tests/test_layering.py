"""The layers, enforced on the source by file role: every import of every module,
relative and lazy (inside functions) included, is checked against the role of the
file that makes it."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxscope"
FILES = sorted(PACKAGE.rglob("*.py"))

PRIVATE_JAX = ("jax._src", "jax.interpreters", "jax.core")
DISPLAY_LIBS = ("rich", "ipywidgets", "anywidget", "traitlets")
FRONT_END_ROLES = ("magic", "plugin", "render", "widget")
# compat/ sits under everything else: it may use only these pure jaxscope modules.
COMPAT_MAY_IMPORT = ("jaxscope.compat", "jaxscope._exceptions", "jaxscope._format")


@dataclass(frozen=True)
class Import:
    line: int
    module: str  # absolute, e.g. "jaxscope._display" or "jax._src.core"
    lazy: bool  # inside a function body or an `if TYPE_CHECKING:` block


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def rel(path: Path) -> str:
    return path.relative_to(PACKAGE.parent).as_posix()


def role(path: Path) -> str:
    """compat, ipython, magic, plugin, render, widget, display, entry or model."""
    parts = path.relative_to(PACKAGE).parts
    if parts[0] == "compat":
        return "compat"
    if parts[0] == "_ipython":
        return "ipython"
    if path.name == "_display.py":
        return "display"
    if path.name in ("pytest_plugin.py", "_cli.py", "__main__.py"):
        return "entry"
    if len(parts) == 2 and path.stem in FRONT_END_ROLES:
        return path.stem
    return "model"


def _dotted(node: ast.AST) -> str | None:
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
        return ".".join(reversed(names))
    return None


def imports_of(path: Path) -> list[Import]:
    """Every import in ``path``, with relative ones resolved and lazy ones marked."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    lazy_lines: set[int] = set()
    for node in ast.walk(tree):
        type_checking = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(
            node.test
        )
        if type_checking or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    lazy_lines.add(inner.lineno)
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                Import(node.lineno, a.name, node.lineno in lazy_lines)
                for a in node.names
            ]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from pkg import sub` imports the submodule when there is one.
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                target = sub if _is_module(sub) or sub.startswith("jax.") else module
                found.append(Import(node.lineno, target, node.lineno in lazy_lines))
        elif isinstance(node, ast.Attribute):
            name = _dotted(node)
            if name and any(name.startswith(p + ".") for p in PRIVATE_JAX):
                found.append(Import(node.lineno, name, True))
    return found


def _is_module(dotted: str) -> bool:
    if not dotted.startswith("jaxscope"):
        return False
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def violations(path: Path) -> list[str]:
    """What ``path`` imports against its role, as ``file:line: why`` strings."""
    file_role = role(path)
    bad: list[str] = []
    for imp in imports_of(path):
        why = None
        if under(imp.module, PRIVATE_JAX) and file_role != "compat":
            why = "private JAX outside compat/"
        elif under(imp.module, DISPLAY_LIBS) and file_role not in (
            "render",
            "widget",
            "display",
        ):
            why = "display library outside render.py/widget.py/_display.py"
        elif under(imp.module, ("IPython",)) and file_role not in ("magic", "ipython"):
            why = "IPython outside magic.py/_ipython/"
        elif under(imp.module, ("pytest", "_pytest", "pluggy")) and file_role not in (
            "plugin",
            "entry",
        ):
            why = "pytest outside plugin.py"
        elif (
            file_role in ("model", "compat")
            and imp.module.startswith("jaxscope.")
            and imp.module.rsplit(".", 1)[-1] in FRONT_END_ROLES
            and imp.module.count(".") == 2
        ):
            why = "a model module imports a front-end/render module"
        elif (
            file_role == "compat"
            and imp.module.startswith("jaxscope.")
            and not under(imp.module, COMPAT_MAY_IMPORT)
        ):
            why = "compat/ imports jaxscope above it"
        if why:
            kind = "lazy import" if imp.lazy else "import"
            bad.append(f"{rel(path)}:{imp.line}: {kind} of {imp.module}: {why}")
    return bad


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_module_imports_only_what_its_role_allows(path):
    assert violations(path) == []


def test_pytest_plugin_entry_imports_no_jax_at_module_level():
    tree = ast.parse((PACKAGE / "pytest_plugin.py").read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any("jax" in ast.unparse(n).split()[1] for n in top)


def eager_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in FILES:
        name = module_name(path)
        graph[name] = {
            imp.module
            for imp in imports_of(path)
            if not imp.lazy and imp.module.startswith("jaxscope") and imp.module != name
        }
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            # importing a submodule imports its package first
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles_between_modules():
    assert find_cycle(eager_graph()) is None


# The checker itself must catch what it is for (else every test above passes vacuously).


def test_checker_sees_relative_and_lazy_imports(tmp_path, monkeypatch):
    feature = PACKAGE / "_jaxpr" / "builder.py"
    found = imports_of(feature)
    assert any(i.module == "jaxscope._records" for i in found)
    src = PACKAGE / "_leaks" / "checker.py"
    assert any(i.lazy for i in imports_of(src))


def test_checker_flags_each_kind_of_violation(tmp_path, monkeypatch):
    fake = PACKAGE / "_jaxpr" / "_layering_probe.py"
    fake.write_text(
        "def f():\n"
        "    from jax._src import core\n"
        "    import rich\n"
        "    from IPython import get_ipython\n"
        "    from . import render\n"
        "    import pytest\n"
    )
    try:
        bad = violations(fake)
    finally:
        fake.unlink()
    assert [b.split(": ", 2)[2] for b in bad] == [
        "private JAX outside compat/",
        "display library outside render.py/widget.py/_display.py",
        "IPython outside magic.py/_ipython/",
        "a model module imports a front-end/render module",
        "pytest outside plugin.py",
    ]


def test_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_checker_catches_every_spelling_of_private_jax(tmp_path):
    probe = PACKAGE / "_jaxpr" / "_layering_probe.py"
    probe.write_text(
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
    try:
        lines = sorted({int(b.split(":")[1]) for b in violations(probe)})
    finally:
        probe.unlink()
    assert lines == [1, 2, 3, 4, 6, 7]
