"""compat.probe: a shard_map equation's mesh axes and devices, and the equation
rebuilt around a new body, on a real shard_map program."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxscope.compat import probe as cp


def _shard_map_eqn():
    mesh = jax.make_mesh((4, 2), ("a", "b"))

    def local(block):
        return jnp.sin(block) * 2

    f = jax.shard_map(local, mesh=mesh, in_specs=P("a", "b"), out_specs=P("a", "b"))
    x = jax.device_put(jnp.arange(16.0).reshape(4, 4), NamedSharding(mesh, P("a", "b")))
    (eqn,) = jax.make_jaxpr(f)(x).eqns
    return eqn, x, mesh


def test_shard_map_axes_are_the_manual_axes_in_mesh_order():
    eqn, _, _ = _shard_map_eqn()
    assert cp.shard_map_axes(eqn) == (("a", 4), ("b", 2))


def test_shard_map_devices_follow_the_rows_of_per_device_values():
    eqn, _, mesh = _shard_map_eqn()
    assert cp.shard_map_devices(eqn) == [str(d) for d in mesh.devices.reshape(-1)]


def test_rebind_shard_map_returns_the_outputs_and_a_row_per_device():
    eqn, x, _ = _shard_map_eqn()

    def local(block):
        out = jnp.sin(block) * 2
        return (out,), {"mean": jnp.expand_dims(jnp.mean(block), 0)}

    outs, extras = jax.jit(lambda v: cp.rebind_shard_map(eqn, local, [v]))(x)
    np.testing.assert_allclose(outs[0], jnp.sin(x) * 2, rtol=1e-6)
    blocks = np.asarray(x).reshape(4, 1, 2, 2).transpose(0, 2, 1, 3).reshape(8, 2)
    np.testing.assert_allclose(np.asarray(extras["mean"]), blocks.mean(axis=1))
