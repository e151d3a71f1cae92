"""The public surface is the product contract: written out here so every change to
it is deliberate, and every name must resolve to a real object."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import jaxscope

EXPECTED = [
    # records and errors
    "EqnInfo",
    "InvalidCallError",
    "JaxscopeCompatError",
    "JaxscopeError",
    "OpInfo",
    "SourceLoc",
    "TraceError",
    "TracerLeakError",
    "BreakpointError",
    "GraphvizMissingError",
    "HloError",
    "JaxRecompileWarning",
    "ProfileError",
    "RecompileWatchError",
    "ShardingInputError",
    "ShardingValueError",
    "StepError",
    "StepperFinishedError",
    # staging views
    "GraphView",
    "HloDisplay",
    "HloView",
    "JaxprDisplay",
    "JaxprView",
    "graph",
    "hlo",
    "jaxpr",
    # recompilation
    "Cause",
    "RecompileEvent",
    "RecompileLog",
    "RecompileSummary",
    "watch_recompiles",
    # tracer leaks
    "Leak",
    "LeakReport",
    "LeakSummary",
    "check_leaks",
    # sharding
    "Collective",
    "CollectiveReason",
    "OpSharding",
    "ProgramShardingView",
    "ReplicationFinding",
    "ShardInfo",
    "ShardingView",
    "sharding",
    "shardings",
    # stepping
    "NanInInput",
    "Stepper",
    "find_nan",
    "step",
    # purity
    "PurityFinding",
    "PurityLog",
    "PuritySummary",
    "stale",
    "watch_purity",
    # time and memory per source line
    "Buffer",
    "FunctionTime",
    "Hotspot",
    "LineMemory",
    "LineTime",
    "MemoryView",
    "OpTime",
    "ProfileView",
    "memory",
    "profile",
    # values of the compiled program
    "ProbeValue",
    "ProbeView",
    "probe",
    # program diffs
    "EqnChange",
    "LineDiff",
    "ProgramDiff",
    "diff",
    # compile cost by source line
    "CompileDiagnosis",
    "CompileProfile",
    "CompileStages",
    "LineCompileCost",
    "compile_profile",
    "PolicyMemory",
    "Residual",
    "ResidualLine",
    "ResidualsView",
    "memory_policies",
    "residuals",
    # errors
    "ErrorReport",
    "explain",
]


def test_all_is_exactly_the_contract():
    extra = sorted(set(jaxscope.__all__) - set(EXPECTED))
    missing = sorted(set(EXPECTED) - set(jaxscope.__all__))
    assert not extra, (
        f"new public names {extra}: if intended, add them to EXPECTED in "
        "tests/test_public_api.py (and to the README/user guide)"
    )
    assert not missing, f"public names {missing} vanished from jaxscope.__all__"
    assert jaxscope.__all__ == sorted(jaxscope.__all__)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_public_name_resolves(name):
    importlib.import_module(jaxscope._EXPORTS[name], "jaxscope")
    value = getattr(jaxscope, name)
    assert value is not None
    assert name in dir(jaxscope)
    if isinstance(value, type) or callable(value):
        assert getattr(value, "__doc__", None), f"jaxscope.{name} has no docstring"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        jaxscope.nothing_here  # noqa: B018


def test_extension_entry_points_and_version():
    assert callable(jaxscope.load_ipython_extension)
    assert callable(jaxscope.unload_ipython_extension)
    assert isinstance(jaxscope.__version__, str) and jaxscope.__version__[0].isdigit()


def test_errors_refine_builtins():
    assert issubclass(jaxscope.InvalidCallError, ValueError)
    assert issubclass(jaxscope.TraceError, RuntimeError)
    for name in (
        "InvalidCallError",
        "TraceError",
        "TracerLeakError",
        "BreakpointError",
        "GraphvizMissingError",
        "HloError",
        "RecompileWatchError",
        "ShardingInputError",
        "ShardingValueError",
        "StepError",
        "StepperFinishedError",
        "ProfileError",
        "JaxscopeCompatError",
    ):
        assert issubclass(getattr(jaxscope, name), jaxscope.JaxscopeError)


def test_type_checkers_see_every_public_name_from_its_module():
    """The ``if TYPE_CHECKING:`` mirror names each export from the module it loads from."""
    import ast

    tree = ast.parse(Path(jaxscope.__file__).read_text())
    block = next(
        n
        for n in tree.body
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)
    )
    mirrored = {
        alias.asname: "." * node.level + (node.module or "")
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.asname == alias.name
    }
    assert mirrored == jaxscope._EXPORTS


def test_every_exception_class_is_exported():
    from jaxscope import _exceptions

    classes = {
        name
        for name, value in vars(_exceptions).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    assert classes <= set(jaxscope.__all__)


def test_recompile_warning_is_a_user_warning():
    assert issubclass(jaxscope.JaxRecompileWarning, UserWarning)
