"""The layers of STYLE.md, enforced on the source by file role.

Every import of every module is read: at module level, inside functions and under
``if TYPE_CHECKING:``, relative ones resolved, and imports by name through
``importlib.import_module``, ``__import__``, compat's ``private``/``PrivateModule``,
``_features.feature_modules(role)`` and the package's ``_EXPORTS`` table. Each import
is checked against the role of the file that makes it (``RULES``); a private name
imported from another module, an import of a computed name and an import cycle over
all of those edges each fail unless an allow-list below names it, with its reason.

Each rule is proven by a probe module that it catches, written under ``tmp_path`` in a
tree laid over the package (``Package.under``), never into the package itself.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jaxscope"

PRIVATE_JAX = ("jax._src", "jax.interpreters", "jax.core")
DISPLAY_LIBS = ("rich", "ipywidgets", "anywidget", "traitlets")
IPYTHON_LIBS = ("IPython", "ipykernel")
PYTEST_LIBS = ("pytest", "_pytest", "pluggy")
FRONT_END_ROLES = ("magic", "plugin", "render", "widget")
ENTRY_POINTS = ("pytest_plugin", "_cli", "__main__")
# compat/ sits under everything else: it may use only these pure jaxscope modules.
COMPAT_MAY_IMPORT = ("jaxscope.compat", "jaxscope._exceptions", "jaxscope._format")
# Calls that import the module named by their first argument.
STRING_IMPORTERS = ("import_module", "__import__", "private", "PrivateModule")
COMPUTED = "<computed name>"

# The functions that import a module whose name is computed at run time. Anywhere
# else a computed name is a violation, since no rule could see what it imports.
DYNAMIC_LOADERS = {
    ("jaxscope/__init__.py", "__getattr__"): "the lazy public names; reads _EXPORTS, "
    "whose values are checked as string imports of jaxscope/__init__.py",
    ("jaxscope/_features.py", "feature_modules"): "role loading; each literal "
    "feature_modules(role) call is checked as an import of every feature's module",
    ("jaxscope/compat/__init__.py", "private"): "compat's private import; each literal "
    "private()/PrivateModule() call is checked as an import of that module",
    ("jaxscope/compat/__init__.py", "_load"): "PrivateModule's first attribute access; "
    "each literal PrivateModule() call is checked as an import of that module",
    ("jaxscope/compat/source.py", "register_own_frames"): "loops over the module-level "
    "constants _SIU and _TBU, both jax._src modules, inside compat",
    ("jaxscope/_display.py", "load_renderers_for"): "imports the render.py of a "
    "displayed object's feature: the protocol calls down into a render module that "
    "registers itself, so that edge is left out of the cycle graph as a registry is",
}

# Private names imported from another jaxscope module, each with why it is still there.
ALLOWED_PRIVATE_IMPORTS: dict[tuple[str, str, str], str] = {
    ("jaxscope/_ipython/help.py", "jaxscope._cli", "_parser"): "%jaxscope_help lists "
    "the CLI's commands from its argparse parser",
}

# Today's import cycles: each entry is a set of modules that reach one another through
# imports of any kind (lazy and TYPE_CHECKING ones included), with what closes it.
# Remove an entry once its cycle is gone (a test says which); a new cycle, or a listed
# one that grows, fails.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}

# The same over feature folders, counting only the edges between model modules (the
# front-ends load every feature by design): the core's features must form layers.
ALLOWED_FOLDER_CYCLES: dict[frozenset[str], str] = {
    frozenset({"jaxscope._graph", "jaxscope._jaxpr"}): "JaxprView.graph() imports "
    "_graph.view lazily, a convenience; _graph is built on _jaxpr",
    frozenset({"jaxscope._diff", "jaxscope._recompiles"}): "RecompileEvent.diff() "
    "imports _diff.events lazily, a convenience; _diff is built on _recompiles' "
    "causes",
}


# -- reading imports ------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    line: int
    module: str  # absolute, e.g. "jaxscope._display" or "jax._src.core"; or COMPUTED
    how: str  # "import", "lazy import", "TYPE_CHECKING import", "string import", ...
    name: str = ""  # `from module import name` when name is not a submodule


@dataclass(frozen=True)
class Package:
    """A source tree of jaxscope: the real one, or probe files under ``tmp_path``
    laid over it (a file under ``root`` hides the real one at the same place)."""

    root: Path  # the folder named ``jaxscope``
    under: Path | None = None  # the tree ``root`` is laid over, read, never written

    @functools.cached_property
    def _relative(self) -> frozenset[Path]:
        """The package-relative paths of its modules, listed once: write a tree's
        files before making its ``Package``."""
        found = {p.relative_to(self.root) for p in self.root.rglob("*.py")}
        if self.under:
            found |= {p.relative_to(self.under) for p in self.under.rglob("*.py")}
        return frozenset(found)

    def files(self) -> list[Path]:
        return sorted(self.root / p for p in self._relative)

    def text(self, path: Path) -> str:
        if self.under and not path.exists():
            path = self.under / path.relative_to(self.root)
        return path.read_text()

    def module_name(self, path: Path) -> str:
        parts = list(path.relative_to(self.root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root.parent).as_posix()

    @functools.cached_property
    def _modules(self) -> frozenset[str]:
        names: set[str] = set()
        for path in self._relative:
            parts = path.with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.add(".".join((self.root.name, *parts)))
        return frozenset(names)

    def is_module(self, dotted: str) -> bool:
        return dotted in self._modules

    def features(self) -> list[str]:
        """The feature folders, as ``_features.feature_names()`` finds them."""
        return sorted(
            p.parts[0]
            for p in self._relative
            if len(p.parts) == 2 and p.name == "__init__.py" and p.parts[0][0] == "_"
            if p.parts[0] not in ("_ipython", "_static")
        )


REAL = Package(PACKAGE)


def role(pkg: Package, path: Path) -> str:
    """surface, entry, compat, ipython, display, magic, plugin, render, widget, model."""
    parts = path.relative_to(pkg.root).parts
    if parts == ("__init__.py",):
        return "surface"
    if len(parts) == 1 and path.stem in ENTRY_POINTS:
        return "entry"
    if parts[0] == "compat":
        return "compat"
    if parts[0] == "_ipython":
        return "ipython"
    if parts == ("_display.py",):
        return "display"
    if len(parts) >= 2 and parts[0].startswith("_") and path.stem in FRONT_END_ROLES:
        return path.stem
    return "model"


def target_role(module: str) -> str | None:
    """The role of the jaxscope module an import names (None outside jaxscope)."""
    parts = module.split(".")
    if parts[0] != "jaxscope":
        return None
    if len(parts) == 1:
        return "surface"
    if parts[1] in ENTRY_POINTS:
        return "entry"
    if parts[1] in ("compat", "_ipython"):
        return parts[1].lstrip("_")
    if len(parts) >= 3 and parts[1].startswith("_") and parts[-1] in FRONT_END_ROLES:
        return parts[-1]
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


@dataclass(frozen=True)
class _Found:
    """An import as the source spells it, before it is resolved against a package."""

    line: int
    module: str  # absolute; COMPUTED when the name is made at run time
    how: str
    alias: str = ""  # `from module import alias`: the submodule, if there is one
    role: str = ""  # feature_modules(role): that role's module of every feature
    function: str = "<module>"  # the innermost enclosing function


class _Reader(ast.NodeVisitor):
    def __init__(self, package: tuple[str, ...], tree: ast.Module) -> None:
        self.package = list(package)
        # module-level NAME = "literal", so `private(_SIU, ...)` is read as its value
        self.constants = {
            t.id: n.value.value
            for n in tree.body
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
            for t in n.targets
            if isinstance(t, ast.Name) and isinstance(n.value.value, str)
        }
        self.found: list[_Found] = []
        self.functions: list[str] = []
        self.type_checking = False

    def absolute(self, name: str) -> str:
        dots = len(name) - len(name.lstrip("."))
        if not dots:
            return name
        base = self.package[: len(self.package) - dots + 1]
        return ".".join(base + ([name[dots:]] if name[dots:] else []))

    def add(self, line: int, module: str, string: bool = False, **kw: str) -> None:
        if self.type_checking:
            how = "TYPE_CHECKING import"
        else:
            how = "string import" if string else "import"
            how = f"lazy {how}" if self.functions else how
        where = self.functions[-1] if self.functions else "<module>"
        self.found.append(_Found(line, module, how, function=where, **kw))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.visit(decorator)
        self.functions.append(node.name)
        for stmt in node.body:
            self.visit(stmt)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.functions.append("<lambda>")
        self.generic_visit(node)
        self.functions.pop()

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" not in ast.unparse(node.test):
            self.generic_visit(node)
            return
        outer, self.type_checking = self.type_checking, True
        for stmt in node.body:
            self.visit(stmt)
        self.type_checking = outer
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.add(node.lineno, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = self.absolute("." * node.level + (node.module or ""))
        for alias in node.names:
            self.add(node.lineno, module, alias=alias.name)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = _dotted(node)
        if name and any(name.startswith(p + ".") for p in PRIVATE_JAX):
            self.add(node.lineno, name, string=True)
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        callee = (_dotted(node.func) or "").rsplit(".", 1)[-1]
        if callee not in (*STRING_IMPORTERS, "feature_modules") or not node.args:
            return
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            name: str | None = arg.value
        elif isinstance(arg, ast.Name):
            name = self.constants.get(arg.id)
        else:
            name = None
        if name is None:
            self.add(node.lineno, COMPUTED, string=True)
        elif callee == "feature_modules":
            self.add(node.lineno, "", string=True, role=name)
        else:
            self.add(node.lineno, self.absolute(name), string=True)

    def visit_Assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        self.generic_visit(node)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        exports = any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets)
        if exports and isinstance(node.value, ast.Dict):
            for value in node.value.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    self.add(value.lineno, self.absolute(value.value), string=True)

    visit_AnnAssign = visit_Assign


@functools.cache
def _scan(text: str, package: tuple[str, ...]) -> tuple[_Found, ...]:
    """The imports a source text spells; cached, as the probes' copies repeat it."""
    tree = ast.parse(text)
    reader = _Reader(package, tree)
    reader.visit(tree)
    return tuple(reader.found)


def scan(path: Path, pkg: Package = REAL) -> tuple[_Found, ...]:
    package = pkg.module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    return _scan(pkg.text(path), tuple(package))


def imports_of(path: Path, pkg: Package = REAL) -> list[Import]:
    """Every import in ``path``, relative ones resolved, lazy and by-name ones marked."""
    found: list[Import] = []
    for f in scan(path, pkg):
        if f.role:
            for feature in pkg.features():
                module = f"{pkg.root.name}.{feature}.{f.role}"
                if pkg.is_module(module):
                    found.append(Import(f.line, module, f.how))
        elif f.alias:
            # `from pkg import sub` imports the submodule when there is one.
            sub = f"{f.module}.{f.alias}"
            is_sub = pkg.is_module(sub) or sub.startswith("jax.")
            if is_sub:
                found.append(Import(f.line, sub, f.how))
            else:
                found.append(Import(f.line, f.module, f.how, name=f.alias))
        else:
            found.append(Import(f.line, f.module, f.how))
    return found


# -- the rules ------------------------------------------------------------------------

ROLES = frozenset(
    {"surface", "entry", "compat", "ipython", "display", "model", *FRONT_END_ROLES}
)


def under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


@dataclass(frozen=True)
class Rule:
    name: str
    why: str
    roles: frozenset[str]  # the roles of the files the rule binds
    forbids: Callable[[str], bool]  # on the absolute name of the imported module


def _targets(*roles: str) -> Callable[[str], bool]:
    return lambda module: target_role(module) in roles


RULES = [
    Rule(
        "private-jax",
        "private JAX outside compat/",
        ROLES - {"compat"},
        lambda m: under(m, PRIVATE_JAX),
    ),
    Rule(
        "display-library",
        "display library outside render.py/widget.py/_display.py",
        ROLES - {"render", "widget", "display"},
        lambda m: under(m, DISPLAY_LIBS),
    ),
    Rule(
        "ipython-library",
        "IPython outside magic.py/_ipython/",
        ROLES - {"magic", "ipython"},
        lambda m: under(m, IPYTHON_LIBS),
    ),
    Rule(
        "pytest-library",
        "pytest outside plugin.py and the entry points",
        ROLES - {"plugin", "entry"},
        lambda m: under(m, PYTEST_LIBS),
    ),
    Rule(
        "model-to-front-end",
        "a model module imports a front-end module (render/widget/magic/plugin)",
        frozenset({"model"}),
        _targets(*FRONT_END_ROLES),
    ),
    Rule(
        "model-to-ipython",
        "a model module imports jaxscope._ipython",
        frozenset({"model"}),
        _targets("ipython"),
    ),
    Rule(
        "model-to-entry",
        "a model module imports an entry point or the package surface",
        frozenset({"model"}),
        _targets("entry", "surface"),
    ),
    Rule(
        "render-to-front-end",
        "a render/widget module imports a magic, plugin, _ipython or entry point",
        frozenset({"render", "widget", "display"}),
        _targets("magic", "plugin", "ipython", "entry", "surface"),
    ),
    Rule(
        "compat-above",
        "compat/ imports jaxscope above it",
        frozenset({"compat"}),
        lambda m: under(m, ("jaxscope",)) and not under(m, COMPAT_MAY_IMPORT),
    ),
]


def violations(path: Path, pkg: Package = REAL) -> list[str]:
    """What ``path`` imports against its role, as ``file:line: ... [rule]`` strings."""
    file_role = role(pkg, path)
    where = pkg.rel(path)
    bad: list[str] = []
    for imp in imports_of(path, pkg):
        if imp.module == COMPUTED:
            continue
        for rule in RULES:
            if file_role in rule.roles and rule.forbids(imp.module):
                bad.append(
                    f"{where}:{imp.line}: {imp.how} of {imp.module}: {rule.why}"
                    f" [{rule.name}]"
                )
                break
        private = imp.name.startswith("_") and not imp.name.startswith("__")
        if (
            private
            and under(imp.module, (pkg.root.name,))
            and imp.module != pkg.module_name(path)
            and (where, imp.module, imp.name) not in ALLOWED_PRIVATE_IMPORTS
        ):
            bad.append(
                f"{where}:{imp.line}: {imp.how} of {imp.module}.{imp.name}: a private "
                "name of another module; make it public or move it [private-name]"
            )
    for f in scan(path, pkg):
        if f.module == COMPUTED and (where, f.function) not in DYNAMIC_LOADERS:
            bad.append(
                f"{where}:{f.line}: import of a computed name in {f.function}(): no rule "
                "can see what it imports; name the module as a string literal "
                "[computed-import]"
            )
    return bad


def rules_broken(found: list[str]) -> list[str]:
    return [line.rsplit("[", 1)[1].rstrip("]") for line in found]


@pytest.mark.parametrize("path", REAL.files(), ids=REAL.rel)
def test_module_imports_only_what_its_role_allows(path):
    assert violations(path) == []


def test_pytest_plugin_entry_imports_no_jax_at_module_level():
    tree = ast.parse((PACKAGE / "pytest_plugin.py").read_text())
    top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert not any("jax" in ast.unparse(n).split()[1] for n in top)


# -- cycles ---------------------------------------------------------------------------

Graph = dict[str, dict[str, str]]  # module -> {imported module: "how, file:line"}


def import_graph(pkg: Package = REAL) -> Graph:
    """Module -> the jaxscope modules it imports, by every kind of import."""
    root = pkg.root.name
    graph: Graph = {}
    for path in pkg.files():
        name = pkg.module_name(path)
        edges = graph.setdefault(name, {})
        for imp in imports_of(path, pkg):
            if under(imp.module, (root,)) and imp.module != name:
                edges.setdefault(imp.module, f"{imp.how}, {pkg.rel(path)}:{imp.line}")
    return graph


def folder_graph(graph: Graph) -> Graph:
    """Feature folder -> the feature folders its model modules import."""

    def folder(module: str) -> str | None:
        parts = module.split(".")
        is_feature = len(parts) >= 3 and parts[1].startswith("_")
        if not is_feature or target_role(module) != "model" or parts[1] == "_ipython":
            return None
        return ".".join(parts[:2])

    folders: Graph = {}
    for module, edges in graph.items():
        for imported, how in edges.items():
            a, b = folder(module), folder(imported)
            if a and b and a != b:
                folders.setdefault(a, {}).setdefault(
                    b, f"{module} -> {imported}: {how}"
                )
    return folders


def cycles(graph: Graph | dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found, key=sorted)


def describe(cycle: frozenset[str], graph: Graph) -> str:
    return "; ".join(
        f"{a} -> {b} ({graph[a][b]})"
        for a in sorted(cycle)
        for b in sorted(graph[a].keys() & cycle)
    )


def new_cycles(pkg: Package = REAL) -> list[str]:
    """Each cycle not allowed, as ``module-cycle: a -> b (how, file:line); ...``."""
    graph = import_graph(pkg)
    folders = folder_graph(graph)
    return [
        f"module-cycle: {describe(c, graph)}"
        for c in cycles(graph)
        if c not in ALLOWED_CYCLES
    ] + [
        f"folder-cycle: {describe(c, folders)}"
        for c in cycles(folders)
        if c not in ALLOWED_FOLDER_CYCLES
    ]


def test_no_import_cycles_but_the_allowed_ones():
    assert new_cycles() == []


def test_every_allowed_cycle_still_exists():
    graph = import_graph()
    gone = [
        *(set(ALLOWED_CYCLES) - set(cycles(graph))),
        *(set(ALLOWED_FOLDER_CYCLES) - set(cycles(folder_graph(graph)))),
    ]
    assert not gone, (
        f"cycles gone, remove from the allow-list: {sorted(map(sorted, gone))}"
    )


def test_every_dynamic_loader_still_exists():
    seen = {
        (REAL.rel(path), f.function)
        for path in REAL.files()
        for f in scan(path)
        if f.module == COMPUTED
    }
    assert set(DYNAMIC_LOADERS) - seen == set(), "remove from DYNAMIC_LOADERS"


def test_every_allowed_private_import_still_exists():
    seen = {
        (REAL.rel(path), imp.module, imp.name)
        for path in REAL.files()
        for imp in imports_of(path)
    }
    assert set(ALLOWED_PRIVATE_IMPORTS) - seen == set(), "remove from the allow-list"


def test_cycle_finder_finds_every_cycle_and_only_cycles():
    graph = {
        "a": {"b"},
        "b": {"c"},
        "c": {"a"},
        "d": {"a", "e"},
        "e": {"d"},
        "f": set(),
    }
    assert cycles(graph) == [frozenset("abc"), frozenset("de")]


# -- every rule proven by a probe it catches ------------------------------------------

# checked by violations() and new_cycles() outside RULES
OTHER_RULES = ("private-name", "computed-import", "module-cycle", "folder-cycle")
ALL_RULES = (*(r.name for r in RULES), *OTHER_RULES)


@dataclass(frozen=True)
class Probe:
    rule: str  # the one rule it must break, or "" for a control that breaks none
    files: dict[str, str]  # package-relative path -> source (added to an existing file)
    also: tuple[str, ...] = ()  # rules it cannot help breaking too

    def __str__(self) -> str:
        return f"{self.rule or 'allowed'}: " + " | ".join(
            f"{where}: {text!r}" for where, text in self.files.items()
        )


def _probes() -> Iterator[Probe]:
    rule = ""  # the rule the probes below break

    def model(text: str) -> Probe:
        """A probe in a model module of a feature."""
        return Probe(rule, {"_probe/core.py": text})

    rule = "private-jax"
    yield model("import jax._src.core\n")
    yield model("from jax._src import api\n")
    yield model("from jax import _src\n")
    yield model("from jax import interpreters\n")
    yield model("from jax import core\n")
    yield model("from jax.interpreters import mlir\n")
    yield model("import jax\nx = jax.core.Var\n")
    yield model("import jax\ny = jax._src.config\n")
    yield model("def f():\n    import jax._src.core\n")
    yield model(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jax._src\n"
    )
    yield model('import importlib\nimportlib.import_module("jax._src.core")\n')
    yield model('from importlib import import_module\nimport_module("jax._src.pjit")\n')
    yield model('__import__("jax.interpreters.partial_eval")\n')
    yield model(
        'from jaxscope.compat import PrivateModule\nm = PrivateModule("jax._src.core", "x")\n'
    )
    yield model(
        "from jaxscope.compat import private\n"
        'def f():\n    return private("jax._src.pjit", "x")\n'
    )
    yield model('import importlib\n_M = "jax._src.core"\nimportlib.import_module(_M)\n')
    yield Probe(rule, {"_probe/render.py": "from jax._src import core\n"})
    rule = "display-library"
    yield model("import rich\n")
    yield model("def f():\n    from rich.text import Text\n")
    yield model("import ipywidgets\n")
    yield model("import traitlets\n")
    yield Probe(rule, {"_probe/magic.py": "import anywidget\n"})
    yield Probe(
        rule,
        {"compat/_probe.py": 'import importlib\nimportlib.import_module("rich")\n'},
    )
    rule = "ipython-library"
    yield model("from IPython import get_ipython\n")
    yield model('__import__("IPython")\n')
    yield model("from ipykernel.comm import Comm\n")
    yield Probe(rule, {"_probe/render.py": "from IPython.display import HTML\n"})
    yield Probe(rule, {"_probe/plugin.py": "def f():\n    import IPython\n"})
    rule = "pytest-library"
    yield model("import pytest\n")
    yield model('import importlib\nimportlib.import_module("pluggy")\n')
    yield Probe(rule, {"_probe/magic.py": "from _pytest.config import Config\n"})
    rule = "model-to-front-end"
    yield model("from jaxscope._graph.render import x\n")
    yield model("from jaxscope._stepper import widget\n")
    yield model("from .._jaxpr import magic\n")
    yield model("def f():\n    from jaxscope._leaks.plugin import x\n")
    yield model(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from jaxscope._graph.widget import GraphWidget\n"
    )
    yield model('import importlib\nimportlib.import_module("jaxscope._hlo.render")\n')
    yield model('import importlib\nimportlib.import_module(".render", __package__)\n')
    yield Probe(
        rule, {"_probe/core.py": "from . import render\n", "_probe/render.py": ""}
    )
    yield model(
        'from jaxscope._features import feature_modules\nfeature_modules("render")\n'
    )
    rule = "model-to-ipython"
    yield model("from jaxscope._ipython.common import show\n")
    yield model("from jaxscope import _ipython\n")
    yield model("def f():\n    from .._ipython import callparse\n")
    yield model('import importlib\nimportlib.import_module("jaxscope._ipython")\n')
    yield Probe(
        rule, {"_probe_core.py": "def _probe():\n    import jaxscope._ipython\n"}
    )
    rule = "model-to-entry"
    yield model("import jaxscope.pytest_plugin\n")
    yield model("from jaxscope._cli import main\n")
    yield model("from jaxscope import __main__\n")
    yield model("def f():\n    import jaxscope\n")
    yield model("from jaxscope import jaxpr\n")
    rule = "render-to-front-end"
    yield Probe(rule, {"_probe/render.py": "from jaxscope._jaxpr.magic import x\n"})
    yield Probe(
        rule, {"_probe/render.py": "from jaxscope._recompiles.plugin import x\n"}
    )
    yield Probe(
        rule, {"_probe/widget.py": "from jaxscope._ipython.common import show\n"}
    )
    yield Probe(rule, {"_probe/render.py": "def f():\n    from jaxscope import _cli\n"})
    yield Probe(
        rule,
        {"_display.py": "def _probe():\n    import jaxscope._ipython\n"},
        also=("module-cycle",),  # _ipython's modules import _display
    )
    yield Probe(
        rule,
        {
            "_probe/widget.py": "from jaxscope._features import feature_modules\n"
            'feature_modules("magic")\n'
        },
    )
    rule = "compat-above"
    yield Probe(rule, {"compat/_probe.py": "from jaxscope._display import html\n"})
    yield Probe(rule, {"compat/_probe.py": "def f():\n    from .. import _source\n"})
    yield Probe(rule, {"compat/_probe.py": "from jaxscope._jaxpr.render import x\n"})
    rule = "private-name"
    yield model("from jaxscope._jaxpr.builder import _Walk\n")
    yield model("def f():\n    from .._graph.model import _path_id\n")
    yield Probe(
        rule, {"_probe/render.py": "from jaxscope._display import _loaded_features\n"}
    )
    rule = "computed-import"
    yield model(
        "import importlib\ndef f(name):\n    return importlib.import_module(name)\n"
    )
    yield model('def f(x):\n    return __import__(f"jax.{x}")\n')
    yield model(
        "from jaxscope._features import feature_modules\n"
        "def f(role):\n    return feature_modules(role)\n"
    )
    yield Probe(
        rule,
        {
            "compat/_probe.py": "from jaxscope.compat import private\n"
            'def f(n):\n    return private(n, "x")\n'
        },
    )
    rule = "module-cycle"
    a, b = "_probe/a.py", "_probe/b.py"
    yield Probe(rule, {a: "from . import b\n", b: "from . import a\n"})
    yield Probe(rule, {a: "from . import b\n", b: "def f():\n    from . import a\n"})
    yield Probe(
        rule,
        {
            a: "from jaxscope._probe import b\n",
            b: "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from jaxscope._probe.a import A\n",
        },
    )
    yield Probe(
        rule,
        {
            a: "import jaxscope._probe.b\n",
            b: 'import importlib\nimportlib.import_module("jaxscope._probe.a")\n',
        },
    )
    # an allowed cycle that grows is a new one (a top-level probe: no folder cycle)
    for member in sorted(min(ALLOWED_CYCLES, key=sorted, default=())):
        path = member.removeprefix("jaxscope.").replace(".", "/")
        where = f"{path}/__init__.py" if (PACKAGE / path).is_dir() else f"{path}.py"
        yield Probe(
            rule,
            {
                "_probe_grow.py": f"import {member}\n",
                where: "def _probe():\n    import jaxscope._probe_grow\n",
            },
        )
        break
    rule = "folder-cycle"
    yield Probe(
        rule,
        {
            a: "import jaxscope._hlo.model\n",
            "_hlo/model.py": "def _probe():\n    import jaxscope._probe.b\n",
        },
    )
    # controls: what the layers allow is not flagged
    rule = ""
    yield model(
        "import jax\nimport jax.numpy as jnp\nfrom jax.extend import core\n"
        "z = jax.extend.core.Var\nfrom jax import tree_util\n"
    )
    yield model(
        "from jaxscope._display import Renderable\nfrom jaxscope._records import SourceLoc\n"
        "from jaxscope.compat import private, PrivateModule\n"
        "from jaxscope._jaxpr.records import Region\nfrom .._graph import view\n"
    )
    yield Probe(
        rule,
        {
            "_probe/render.py": "import rich\nfrom jaxscope._display import html\n"
            "from jaxscope._jaxpr.view import JaxprView\n"
        },
    )
    yield Probe(rule, {"_probe/widget.py": "import anywidget\nimport traitlets\n"})
    yield Probe(
        rule,
        {
            "_probe/magic.py": "from IPython.core.magic import Magics\n"
            "from jaxscope._ipython.common import x\n"
            "from jaxscope._jaxpr.render import y\n"
        },
    )
    yield Probe(
        rule,
        {
            "_probe/plugin.py": "import pytest\nfrom jaxscope._recompiles.records "
            "import x\nfrom jaxscope._leaks.magic import y\n"
        },
    )
    yield Probe(
        rule,
        {
            "compat/_probe.py": "from jax._src import core\nimport importlib\n"
            'importlib.import_module("jax._src.pjit")\n'
            "from jaxscope._exceptions import JaxscopeError\n"
        },
    )
    yield Probe(
        rule,
        {
            "_ipython/_probe.py": "from IPython import get_ipython\n"
            "from jaxscope._features import feature_modules\n"
            'feature_modules("plugin")\nfrom jaxscope import _cli\n'
        },
    )
    yield Probe(
        rule,
        {a: "from . import b\n", b: "def f():\n    from jaxscope import _format\n"},
    )


PROBES = list(_probes())


@pytest.fixture
def overlay(tmp_path: Path) -> Package:
    """An empty tree under ``tmp_path`` laid over the package, with an empty feature
    folder ``_probe/``: a probe writes its files there, never into the package."""
    root = tmp_path / "jaxscope"
    (root / "_probe").mkdir(parents=True)
    (root / "_probe" / "__init__.py").write_text("")
    return Package(root, under=PACKAGE)


def findings(pkg: Package, probe: Probe) -> list[str]:
    """The rules ``pkg`` breaks once ``probe``'s files are written in."""
    paths = []
    for where, text in probe.files.items():
        path = pkg.root / where
        hidden = pkg.under / where if pkg.under else path
        old = path if path.exists() else hidden
        before = old.read_text() if old.exists() else ""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(before + text)
        paths.append(path)
    pkg = Package(pkg.root, pkg.under)  # lists the tree with the probe's files
    found = [rule for path in paths for rule in rules_broken(violations(path, pkg))]
    return found + [line.split(":", 1)[0] for line in new_cycles(pkg)]


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: f"{p.rule or 'allowed'}")
def test_probe_breaks_exactly_its_rule(overlay, probe):
    expected = {probe.rule, *probe.also} - {""}
    assert set(findings(overlay, probe)) == expected, probe


def test_the_overlay_without_probes_breaks_no_rule(overlay):
    assert findings(overlay, Probe("", {})) == []


def test_every_rule_has_a_probe():
    assert {p.rule for p in PROBES} - {""} == set(ALL_RULES)


def test_a_probe_leaves_the_package_alone(overlay):
    before = {p: p.read_text() for p in REAL.files()}
    probe = Probe("", {"_display.py": "\n", "_probe/core.py": "\n"})
    findings(overlay, probe)
    assert (overlay.root / "_display.py").read_text().endswith("\n\n")
    assert {p: p.read_text() for p in REAL.files()} == before
