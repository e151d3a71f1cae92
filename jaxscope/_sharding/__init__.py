"""Sharding: per-device layout of arrays and the shardings/collectives of compiled programs.

The modules:

- ``array``: ``sharding(x)`` and ``ShardingView`` (how an array lies over devices);
- ``layout``: ``ShardInfo`` and the drawn grid;
- ``program``: ``shardings(f)`` and ``ProgramShardingView`` (a compiled program);
- ``ops`` / ``collectives``: ``OpSharding`` and ``Collective``, read from its HLO;
- ``mesh``: meshes, specs and XLA's device groups in mesh terms.
"""
