"""jaxscope: see inside JAX programs.

Jaxprs, HLO, recompilation causes, tracer leaks, per-device sharding, a stepping
debugger and source-mapped errors, in notebooks, terminal IPython, scripts and pytest.

Public names are loaded on first use so ``import jaxscope`` costs little beyond
``import jax``; IPython, ipywidgets and rich are imported only by the parts that draw.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from jaxscope.compat import source as _csource

__version__ = "0.1.0.dev0"

# jaxscope's own frames must never be taken for the user's line.
_csource.register_own_frames(os.path.dirname(os.path.abspath(__file__)))

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
    # staging views
    "jaxpr": "._jaxpr.api",
    "hlo": "._hlo.api",
    "graph": "._graph.api",
    "JaxprView": "._jaxpr.view",
    "HloView": "._hlo.view",
    "GraphView": "._graph.view",
    # recompilation
    "watch_recompiles": "._recompiles.watcher",
    "RecompileLog": "._recompiles.watcher",
    "RecompileEvent": "._recompiles.watcher",
    "RecompileSummary": "._recompiles.watcher",
    "Cause": "._recompiles.watcher",
    # tracer leaks
    "check_leaks": "._leaks.checker",
    "LeakReport": "._leaks.checker",
    "Leak": "._leaks.checker",
    # sharding
    "sharding": "._sharding.model",
    "shardings": "._sharding.model",
    "ShardingView": "._sharding.model",
    "ProgramShardingView": "._sharding.model",
    "ShardInfo": "._sharding.model",
    "OpSharding": "._sharding.model",
    "Collective": "._sharding.model",
    # stepping
    "step": "._stepper.stepper",
    "find_nan": "._stepper.stepper",
    "Stepper": "._stepper.stepper",
    # purity
    "watch_purity": "._purity.watcher",
    "stale": "._purity.watcher",
    "PurityLog": "._purity.watcher",
    "PurityFinding": "._purity.watcher",
    # errors
    "explain": "._explain.explainer",
    "ErrorReport": "._explain.explainer",
}

__all__ = sorted(_EXPORTS)


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


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from jaxscope._exceptions import InvalidCallError as InvalidCallError
    from jaxscope._exceptions import JaxscopeCompatError as JaxscopeCompatError
    from jaxscope._exceptions import JaxscopeError as JaxscopeError
    from jaxscope._exceptions import TraceError as TraceError
    from jaxscope._exceptions import TracerLeakError as TracerLeakError
    from jaxscope._graph.api import graph as graph
    from jaxscope._hlo.api import hlo as hlo
    from jaxscope._hlo.view import HloView as HloView
    from jaxscope._jaxpr.api import jaxpr as jaxpr
    from jaxscope._jaxpr.view import JaxprView as JaxprView
    from jaxscope._records import EqnInfo as EqnInfo
    from jaxscope._records import OpInfo as OpInfo
    from jaxscope._records import SourceLoc as SourceLoc
