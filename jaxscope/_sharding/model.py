"""The public names of the sharding feature, defined in its modules:

- ``array``: ``sharding(x)`` and ``ShardingView`` (how an array lies over devices);
- ``layout``: ``ShardInfo`` and the drawn grid;
- ``program``: ``shardings(f)`` and ``ProgramShardingView`` (a compiled program);
- ``ops`` / ``collectives``: ``OpSharding`` and ``Collective``, read from its HLO;
- ``mesh``: meshes, specs and XLA's device groups in mesh terms.
"""

from __future__ import annotations

from jaxscope._sharding.array import ShardingView, sharding
from jaxscope._sharding.collectives import Collective
from jaxscope._sharding.layout import ShardInfo
from jaxscope._sharding.ops import OpSharding
from jaxscope._sharding.program import ProgramShardingView, shardings

__all__ = [
    "Collective",
    "OpSharding",
    "ProgramShardingView",
    "ShardInfo",
    "ShardingView",
    "sharding",
    "shardings",
]
