"""js.sharding on real arrays over the 8 fake CPU devices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope._exceptions import ShardingInputError, ShardingValueError
from jaxscope._sharding.layout import ShardInfo, build_layout


def norm(index, shape):
    return tuple(
        (s.indices(d)[0], s.indices(d)[1]) for s, d in zip(index, shape, strict=True)
    )


def assert_matches_addressable_shards(view, x):
    by_device = {s.device_id: s for s in view.shards}
    assert len(view.shards) == len(x.sharding.device_set)
    for shard in x.addressable_shards:
        mine = by_device[shard.device.id]
        assert norm(mine.index, x.shape) == norm(shard.index, x.shape)
        assert mine.shape == shard.data.shape
        assert mine.replica_id == shard.replica_id
        assert mine.bytes == shard.data.nbytes
        assert mine.addressable
        assert mine.process_index == shard.device.process_index
        assert mine.device_kind == shard.device.device_kind


def test_2d_mesh_fully_sharded_matches_addressable_shards(mesh):
    x = jax.device_put(
        jnp.arange(64 * 32, dtype=jnp.float32).reshape(64, 32),
        NamedSharding(mesh, P("data", "model")),
    )
    v = js.sharding(x)
    assert v.shape == (64, 32)
    assert v.dtype == "float32"
    assert v.spec == "P('data', 'model')"
    assert v.mesh == {"data": 4, "model": 2}
    assert v.replication == 1
    assert v.bytes_per_device == 16 * 16 * 4
    assert_matches_addressable_shards(v, x)
    layout = v.layout
    assert layout.row_edges == (0, 16, 32, 48, 64)
    assert layout.col_edges == (0, 16, 32)
    assert layout.cell(1, 1).device_ids == (3,)
    assert layout.n_groups == 8


def test_partially_replicated_shards_have_replica_ids(mesh):
    w = jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("model", None)))
    v = js.sharding(w)
    assert_matches_addressable_shards(v, w)
    assert v.replication == 4
    assert sorted(s.replica_id for s in v.shards) == [0, 0, 1, 1, 2, 2, 3, 3]
    assert [c.device_ids for c in v.layout.cells] == [(0, 2, 4, 6), (1, 3, 5, 7)]


def test_fully_replicated_array_is_one_tile_on_every_device(mesh):
    r = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P()))
    v = js.sharding(r)
    assert v.spec == "P()"
    assert v.replication == 8
    assert len(v.layout.cells) == 1
    assert v.layout.cells[0].device_ids == tuple(range(8))
    assert_matches_addressable_shards(v, r)


def test_1d_mesh_vector(mesh1d):
    x = jax.device_put(jnp.ones(64, jnp.int8), NamedSharding(mesh1d, P("i")))
    v = js.sharding(x)
    assert v.layout.row_dim is None and v.layout.col_dim == 0
    assert len(v.layout.col_edges) == 9
    assert [s.bytes for s in v.shards] == [8] * 8
    assert_matches_addressable_shards(v, x)


def test_3d_mesh_rank4_array_draws_the_two_most_sharded_dims(mesh3d):
    x = jax.device_put(
        jnp.ones((2, 4, 8, 3)), NamedSharding(mesh3d, P(None, "a", ("b", "c")))
    )
    v = js.sharding(x)
    assert_matches_addressable_shards(v, x)
    assert (v.layout.row_dim, v.layout.col_dim) == (1, 2)
    assert v.layout.collapsed == (0, 3)
    assert len(v.layout.row_edges) - 1 == 2
    assert len(v.layout.col_edges) - 1 == 4
    other = v.with_dims(0, 3)
    assert (other.layout.row_dim, other.layout.col_dim) == (0, 3)
    # every device holds a part of the single (0, 3) tile
    assert other.layout.cells[0].device_ids == tuple(range(8))


def test_explicit_axes_mesh_is_supported(devices):
    mesh = jax.make_mesh((2, 4), ("x", "y"))  # Explicit axes by default since jax 0.9
    x = jax.device_put(jnp.ones((4, 8)), NamedSharding(mesh, P("x", "y")))
    v = js.sharding(x)
    assert v.mesh == {"x": 2, "y": 4}
    assert set(v.axis_types) == {"x", "y"}
    assert_matches_addressable_shards(v, x)


def test_committed_single_device_array(devices):
    x = jax.device_put(jnp.ones((3, 5)), devices[3])
    v = js.sharding(x)
    assert v.committed is True
    assert v.mesh is None
    assert v.spec == "SingleDevice(cpu:3)"
    assert [s.device_id for s in v.shards] == [3]
    assert v.shards[0].index == (slice(0, 3), slice(0, 5))
    assert_matches_addressable_shards(v, x)


def test_uncommitted_array_and_scalar(devices):
    v = js.sharding(jnp.ones(3))
    assert v.committed is False
    assert v.sharding_type == "SingleDeviceSharding"
    s = js.sharding(jnp.float32(2.0))
    assert s.shape == () and s.shards[0].index == () and s.shards[0].bytes == 4


def test_shape_dtype_struct_with_sharding(mesh):
    sds = jax.ShapeDtypeStruct(
        (16, 6), jnp.bfloat16, sharding=NamedSharding(mesh, P("data"))
    )
    v = js.sharding(sds)
    assert v.committed is None
    assert v.spec == "P('data')"  # the same text on every JAX version
    assert {s.shape for s in v.shards} == {(4, 6)}
    assert v.bytes_per_device == 4 * 6 * 2
    assert v.replication == 2


def test_spec_text_is_stable_across_jax_versions():
    from jaxscope._sharding.mesh import spec_text

    assert spec_text(P("data", None, ("a", "b"))) == "P('data', None, ('a', 'b'))"
    assert spec_text(P()) == "P()"
    assert spec_text(P(("x",))) == "P('x')"


def test_planning_view_from_spec_and_mesh_dict(devices):
    v = js.sharding((1024, 512), spec=P("data", "model"), mesh={"data": 4, "model": 2})
    assert v.mesh == {"data": 4, "model": 2}
    assert v.shards[0].shape == (256, 256)


def test_pytree_lists_each_leaf_with_its_path(mesh):
    params = {
        "w": jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("model", None))),
        "b": [jax.device_put(jnp.ones(16), NamedSharding(mesh, P()))],
    }
    v = js.sharding(params)
    assert v.is_tree
    paths = [p for p, _ in v.leaves]
    assert paths == ["['b'][0]", "['w']"]
    leaf = dict(v.leaves)["['w']"]
    assert leaf.spec == "P('model', None)"
    assert v.mesh == {"data": 4, "model": 2}
    assert v.total_bytes == 32 * 16 * 4 + 16 * 4


def test_uneven_shards_lay_out_by_their_own_ranges():
    # JAX 0.10 refuses to build unevenly sharded arrays, so the layout is fed records.
    def shard(dev, a, b):
        return ShardInfo(
            device_id=dev,
            device_kind="cpu",
            platform="cpu",
            process_index=0,
            index=(slice(a, b),),
            shape=(b - a,),
            bytes=(b - a) * 4,
            replica_id=0,
            addressable=True,
        )

    layout = build_layout(
        (10,), [shard(0, 0, 3), shard(1, 3, 6), shard(2, 6, 9), shard(3, 9, 10)]
    )
    assert layout.col_edges == (0, 3, 6, 9, 10)
    assert [c.device_ids for c in layout.cells] == [(0,), (1,), (2,), (3,)]


def test_indivisible_planning_shape_is_one_clear_error(devices):
    with pytest.raises(
        ShardingValueError, match=r"cannot lay out shape \(10, 3\)"
    ) as err:
        js.sharding((10, 3), spec=P("data"), mesh={"data": 4})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    "value, pattern",
    [
        (3, r"x is a builtins.int \(3\), not a JAX array"),
        (np.ones(3), r"x is a numpy.ndarray .* jax.device_put it first"),
        ("abc", r"x is a builtins.str"),
    ],
)
def test_non_array_is_one_clear_error(value, pattern):
    with pytest.raises(ShardingInputError, match=pattern) as err:
        js.sharding(value)
    assert "\n" not in str(err.value)
    assert isinstance(err.value, TypeError)


def test_non_array_leaf_names_its_path(mesh):
    with pytest.raises(ShardingInputError, match=r"x\['lr'\] is a builtins.float"):
        js.sharding({"w": jnp.ones(2), "lr": 0.1})


def test_deleted_array_is_one_clear_error():
    x = jnp.ones(4)
    x.delete()
    with pytest.raises(ShardingValueError, match="x was deleted") as err:
        js.sharding(x)
    assert "\n" not in str(err.value)


def test_mesh_larger_than_devices_is_one_clear_error(devices):
    with pytest.raises(ShardingValueError, match=r"needs 16 devices but only 8") as err:
        js.sharding((16, 16), spec=P("x"), mesh={"x": 16})
    assert "\n" not in str(err.value)
    assert "xla_force_host_platform_device_count=16" in str(err.value)


def test_shape_dtype_struct_without_sharding_is_an_error():
    with pytest.raises(ShardingValueError, match="without a sharding"):
        js.sharding(jax.ShapeDtypeStruct((3,), jnp.float32))


def test_tracer_points_to_the_program_view():
    seen = []

    @jax.jit
    def f(x):
        try:
            js.sharding(x)
        except ShardingInputError as exc:
            seen.append(str(exc))
        return x

    f.trace(jnp.ones(2))
    assert seen and "js.shardings(f)" in seen[0]


def test_bad_dims_are_errors(mesh3d):
    x = jax.device_put(jnp.ones((2, 4, 8)), NamedSharding(mesh3d, P(None, "a", "b")))
    with pytest.raises(ShardingValueError, match="out of range"):
        js.sharding(x, dims=(0, 5))
    with pytest.raises(ShardingValueError, match="two distinct"):
        js.sharding(x, dims=(1, 1))
    with pytest.raises(ShardingValueError, match="spec= and mesh= go together"):
        js.sharding(x, spec=P("a"))


def test_view_holds_no_array(mesh):
    import gc
    import weakref

    x = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("data")))
    ref = weakref.ref(x)
    v = js.sharding(x)
    del x
    gc.collect()
    assert ref() is None
    assert len(v.shards) == 8


def test_single_device_sharding_type_name(devices):
    x = jax.device_put(jnp.ones(2), SingleDeviceSharding(devices[1]))
    assert js.sharding(x).shards[0].device_id == 1


def test_abstract_mesh_is_laid_out_on_present_devices_or_refused(devices):
    small = jax.sharding.AbstractMesh((4, 2), ("data", "model"))
    sds = jax.ShapeDtypeStruct(
        (8, 8), jnp.float32, sharding=NamedSharding(small, P("data"))
    )
    v = js.sharding(sds)
    assert v.mesh == {"data": 4, "model": 2}
    assert {s.shape for s in v.shards} == {(2, 8)}
    big = jax.sharding.AbstractMesh((16,), ("x",))
    sds = jax.ShapeDtypeStruct((16,), jnp.float32, sharding=NamedSharding(big, P("x")))
    with pytest.raises(ShardingValueError, match="needs 16 devices but only 8") as err:
        js.sharding(sds)
    assert "\n" not in str(err.value)
