"""One process of the 2-process sharding test (run by test_multiprocess.py)."""

from __future__ import annotations

import json
import os
import sys

process_id, port = int(sys.argv[1]), sys.argv[2]
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.distributed.initialize(
    coordinator_address=f"127.0.0.1:{port}",
    num_processes=2,
    process_id=process_id,
    initialization_timeout=60,
)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import jaxscope as js  # noqa: E402

mesh = jax.make_mesh((2, 4), ("hosts", "local"))
data = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
s = NamedSharding(mesh, P(("hosts", "local")))
x = jax.make_array_from_callback(data.shape, s, lambda idx: data[idx])
v = js.sharding(x)
w = jax.make_array_from_callback(
    (4, 8), NamedSharding(mesh, P(None, "local")), lambda idx: data[:4, :][idx]
)
vw = js.sharding(w)
program = js.shardings(lambda a: jnp.sum(a, axis=0))(x)
result = {
    "process_index": jax.process_index(),
    "shards": [
        [
            sh.device_id,
            sh.process_index,
            sh.addressable,
            [sh.index[0].start, sh.index[0].stop],
        ]
        for sh in v.shards
    ],
    "own": sorted(int(sh.device.id) for sh in x.addressable_shards),
    "text": str(v),
    "replicated_remote": sorted(
        sh.replica_id for sh in vw.shards if not sh.addressable
    ),
    "all_reduces": program.count("all-reduce"),
    "inputs": program.inputs,
    "reasons": [c.reason.text if c.reason else "" for c in program.collectives],
    "replication": [f.text for f in program.replication],
}
print("RESULT " + json.dumps(result), flush=True)
jax.distributed.shutdown()
