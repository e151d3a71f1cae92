"""jaxscope: see inside JAX programs.

Jaxprs, HLO, recompilation causes, tracer leaks, per-device sharding, a stepping
debugger and source-mapped errors, in notebooks, terminal IPython, scripts and pytest.

Public names are loaded on first use, so ``import jaxscope`` loads neither JAX nor
IPython, ipywidgets or rich: each is imported by the parts that need it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0.dev0"


# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # records and errors
    "SourceLoc": "._records",
    "EqnInfo": "._records",
    "OpInfo": "._records",
    "JaxscopeError": "._exceptions",
    "InvalidCallError": "._exceptions",
    "TraceError": "._exceptions",
    "TracerLeakError": "._exceptions",
    "JaxscopeCompatError": "._exceptions",
    "ShardingInputError": "._exceptions",
    "ShardingValueError": "._exceptions",
    "RecompileWatchError": "._exceptions",
    "HloError": "._exceptions",
    "GraphvizMissingError": "._exceptions",
    "StepperFinishedError": "._exceptions",
    "BreakpointError": "._exceptions",
    "StepError": "._exceptions",
    "JaxRecompileWarning": "._exceptions",
    "ProfileError": "._exceptions",
    # staging views
    "jaxpr": "._jaxpr.api",
    "hlo": "._hlo.api",
    "graph": "._graph.api",
    "JaxprView": "._jaxpr.view",
    "JaxprDisplay": "._jaxpr.view",
    "HloView": "._hlo.view",
    "HloDisplay": "._hlo.view",
    "GraphView": "._graph.view",
    # recompilation
    "watch_recompiles": "._recompiles.watcher",
    "RecompileLog": "._recompiles.watcher",
    "RecompileEvent": "._recompiles.records",
    "RecompileSummary": "._recompiles.records",
    "Cause": "._recompiles.records",
    # tracer leaks
    "check_leaks": "._leaks.checker",
    "LeakReport": "._leaks.checker",
    "LeakSummary": "._leaks.records",
    "Leak": "._leaks.records",
    # sharding
    "sharding": "._sharding.array",
    "shardings": "._sharding.program",
    "ShardingView": "._sharding.array",
    "ProgramShardingView": "._sharding.program",
    "ShardInfo": "._sharding.layout",
    "OpSharding": "._sharding.ops",
    "Collective": "._sharding.collectives",
    "CollectiveReason": "._sharding.collectives",
    "ReplicationFinding": "._sharding.replication",
    # stepping
    "step": "._stepper.stepper",
    "find_nan": "._probe.nan",
    "Stepper": "._stepper.stepper",
    "NanInInput": "._stepper.values",
    # purity
    "watch_purity": "._purity.watcher",
    "stale": "._purity.watcher",
    "PurityLog": "._purity.watcher",
    "PuritySummary": "._purity.records",
    "PurityFinding": "._purity.records",
    # time and memory per source line
    "profile": "._profile.profile",
    "ProfileView": "._profile.profile",
    "memory": "._profile.memory",
    "MemoryView": "._profile.memory",
    "LineTime": "._profile.records",
    "OpTime": "._profile.records",
    "FunctionTime": "._profile.records",
    "Hotspot": "._profile.records",
    "Buffer": "._profile.records",
    "LineMemory": "._profile.records",
    # values of the compiled program
    "probe": "._probe.probe",
    "ProbeView": "._probe.probe",
    "ProbeValue": "._probe.probe",
    # program diffs
    "diff": "._diff.api",
    "ProgramDiff": "._diff.model",
    "LineDiff": "._diff.model",
    "EqnChange": "._diff.model",
    # compile cost by source line
    "compile_profile": "._compile.profile",
    "CompileProfile": "._compile.records",
    "LineCompileCost": "._compile.records",
    "CompileDiagnosis": "._compile.records",
    "CompileStages": "._compile.records",
    "residuals": "._profile.residuals",
    "ResidualsView": "._profile.residuals",
    "Residual": "._profile.residuals",
    "ResidualLine": "._profile.residuals",
    "memory_policies": "._profile.residuals",
    "PolicyMemory": "._profile.residuals",
    # errors
    "explain": "._explain.explainer",
    "ErrorReport": "._explain.report",
}

__all__ = sorted(_EXPORTS)  # pyright: ignore[reportUnsupportedDunderAll]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jaxscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jaxscope``: register magics, formatters and the error display."""
    from jaxscope._ipython import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jaxscope``: remove everything ``load_ipython_extension`` added."""
    from jaxscope._ipython import unload

    unload(ipython)


if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from ._compile.profile import compile_profile as compile_profile
    from ._compile.records import CompileDiagnosis as CompileDiagnosis
    from ._compile.records import CompileProfile as CompileProfile
    from ._compile.records import CompileStages as CompileStages
    from ._compile.records import LineCompileCost as LineCompileCost
    from ._diff.api import diff as diff
    from ._diff.model import EqnChange as EqnChange
    from ._diff.model import LineDiff as LineDiff
    from ._diff.model import ProgramDiff as ProgramDiff
    from ._exceptions import BreakpointError as BreakpointError
    from ._exceptions import GraphvizMissingError as GraphvizMissingError
    from ._exceptions import HloError as HloError
    from ._exceptions import InvalidCallError as InvalidCallError
    from ._exceptions import JaxRecompileWarning as JaxRecompileWarning
    from ._exceptions import JaxscopeCompatError as JaxscopeCompatError
    from ._exceptions import JaxscopeError as JaxscopeError
    from ._exceptions import ProfileError as ProfileError
    from ._exceptions import RecompileWatchError as RecompileWatchError
    from ._exceptions import ShardingInputError as ShardingInputError
    from ._exceptions import ShardingValueError as ShardingValueError
    from ._exceptions import StepError as StepError
    from ._exceptions import StepperFinishedError as StepperFinishedError
    from ._exceptions import TraceError as TraceError
    from ._exceptions import TracerLeakError as TracerLeakError
    from ._explain.explainer import explain as explain
    from ._explain.report import ErrorReport as ErrorReport
    from ._graph.api import graph as graph
    from ._graph.view import GraphView as GraphView
    from ._hlo.api import hlo as hlo
    from ._hlo.view import HloDisplay as HloDisplay
    from ._hlo.view import HloView as HloView
    from ._jaxpr.api import jaxpr as jaxpr
    from ._jaxpr.view import JaxprDisplay as JaxprDisplay
    from ._jaxpr.view import JaxprView as JaxprView
    from ._leaks.checker import LeakReport as LeakReport
    from ._leaks.checker import check_leaks as check_leaks
    from ._leaks.records import Leak as Leak
    from ._leaks.records import LeakSummary as LeakSummary
    from ._probe.nan import find_nan as find_nan
    from ._probe.probe import ProbeValue as ProbeValue
    from ._probe.probe import ProbeView as ProbeView
    from ._probe.probe import probe as probe
    from ._profile.memory import MemoryView as MemoryView
    from ._profile.memory import memory as memory
    from ._profile.profile import ProfileView as ProfileView
    from ._profile.profile import profile as profile
    from ._profile.records import Buffer as Buffer
    from ._profile.records import FunctionTime as FunctionTime
    from ._profile.records import Hotspot as Hotspot
    from ._profile.records import LineMemory as LineMemory
    from ._profile.records import LineTime as LineTime
    from ._profile.records import OpTime as OpTime
    from ._profile.residuals import PolicyMemory as PolicyMemory
    from ._profile.residuals import Residual as Residual
    from ._profile.residuals import ResidualLine as ResidualLine
    from ._profile.residuals import ResidualsView as ResidualsView
    from ._profile.residuals import memory_policies as memory_policies
    from ._profile.residuals import residuals as residuals
    from ._purity.records import PurityFinding as PurityFinding
    from ._purity.records import PuritySummary as PuritySummary
    from ._purity.watcher import PurityLog as PurityLog
    from ._purity.watcher import stale as stale
    from ._purity.watcher import watch_purity as watch_purity
    from ._recompiles.records import Cause as Cause
    from ._recompiles.records import RecompileEvent as RecompileEvent
    from ._recompiles.records import RecompileSummary as RecompileSummary
    from ._recompiles.watcher import RecompileLog as RecompileLog
    from ._recompiles.watcher import watch_recompiles as watch_recompiles
    from ._records import EqnInfo as EqnInfo
    from ._records import OpInfo as OpInfo
    from ._records import SourceLoc as SourceLoc
    from ._sharding.array import ShardingView as ShardingView
    from ._sharding.array import sharding as sharding
    from ._sharding.collectives import Collective as Collective
    from ._sharding.collectives import CollectiveReason as CollectiveReason
    from ._sharding.layout import ShardInfo as ShardInfo
    from ._sharding.ops import OpSharding as OpSharding
    from ._sharding.program import ProgramShardingView as ProgramShardingView
    from ._sharding.program import shardings as shardings
    from ._sharding.replication import ReplicationFinding as ReplicationFinding
    from ._stepper.stepper import Stepper as Stepper
    from ._stepper.stepper import step as step
    from ._stepper.values import NanInInput as NanInInput
