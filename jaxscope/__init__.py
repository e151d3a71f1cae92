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

from .compat import source as _csource

__version__ = "0.1.0.dev0"

# jaxscope's own frames must never be taken for the user's line.
_csource.register_own_frames(os.path.dirname(os.path.abspath(__file__)))

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # records and errors
    "SourceLoc": "._model",
    "EqnInfo": "._model",
    "OpInfo": "._model",
    "JaxscopeError": "._exceptions",
    "InvalidCallError": "._exceptions",
    "TraceError": "._exceptions",
    "TracerLeakError": "._exceptions",
    "JaxscopeCompatError": "._exceptions",
    # staging views
    "jaxpr": "._api",
    "hlo": "._api",
    "graph": "._api",
    "JaxprView": "._views",
    "HloView": "._hlo_view",
    "GraphView": "._graph_view",
    # recompilation
    "watch_recompiles": "._recompiles",
    "RecompileLog": "._recompiles",
    "RecompileEvent": "._recompiles",
    "RecompileSummary": "._recompiles",
    "Cause": "._recompiles",
    # tracer leaks
    "check_leaks": "._leaks",
    "LeakReport": "._leaks",
    "Leak": "._leaks",
    # sharding
    "sharding": "._sharding",
    "shardings": "._sharding",
    "ShardingView": "._sharding",
    "ProgramShardingView": "._sharding",
    "ShardInfo": "._sharding",
    "OpSharding": "._sharding",
    "Collective": "._sharding",
    # stepping
    "step": "._stepper",
    "find_nan": "._stepper",
    "Stepper": "._stepper",
    # purity
    "watch_purity": "._purity",
    "stale": "._purity",
    "PurityLog": "._purity",
    "PurityFinding": "._purity",
    # errors
    "explain": "._explain",
    "ErrorReport": "._explain",
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
    from ._ipython import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jaxscope``: remove everything ``load_ipython_extension`` added."""
    from ._ipython import unload

    unload(ipython)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from ._api import graph as graph
    from ._api import hlo as hlo
    from ._api import jaxpr as jaxpr
    from ._exceptions import InvalidCallError as InvalidCallError
    from ._exceptions import JaxscopeCompatError as JaxscopeCompatError
    from ._exceptions import JaxscopeError as JaxscopeError
    from ._exceptions import TraceError as TraceError
    from ._exceptions import TracerLeakError as TracerLeakError
    from ._model import EqnInfo as EqnInfo
    from ._model import OpInfo as OpInfo
    from ._model import SourceLoc as SourceLoc
    from ._hlo_view import HloView as HloView
    from ._views import JaxprView as JaxprView
