"""Text and HTML of the sharding views: readable, coloured by device group, escaped."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope import (
    Collective,
    OpSharding,
    ProgramShardingView,
    ShardInfo,
    ShardingView,
)
from jaxscope._display import to_html, to_text
from jaxscope._format import format_bytes
from jaxscope._records import SourceLoc
from jaxscope._sharding.layout import build_layout


def test_plain_text_draws_the_grid_and_the_shard_table(mesh):
    w = jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("model", None)))
    text = str(js.sharding(w))
    assert "float32[32, 16]  P('model', None)  mesh: data=4 x model=2" in text
    assert "each shard on 4 devices" in text
    assert "│ CPU 0,2,4,6 │" in text
    assert "│ CPU 1,3,5,7 │" in text
    assert "[16:32, 0:16]" in text
    assert "\x1b[" not in text  # str() is colourless


def test_rank3_text_says_which_dims_are_collapsed(mesh3d):
    x = jax.device_put(jnp.ones((2, 4, 8)), NamedSharding(mesh3d, P(None, "a", "b")))
    text = str(js.sharding(x))
    assert "rows = dim 1, columns = dim 2; dims 0 collapsed" in text


def test_html_grid_colours_groups_and_has_hover_details(mesh):
    w = jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("model", None)))
    page = to_html(js.sharding(w))
    assert page.count('class="jxs-cell"') == 2
    assert 'title="devices: CPU 0, CPU 2, CPU 4, CPU 6' in page
    assert "dim 0: 0:16" in page
    assert "background:#a6cee3" in page and "background:#b2df8a" in page
    bundle = js.sharding(w)._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}


def test_pytree_table_escapes_paths(mesh):
    tree = {"<script>alert(1)</script>": jnp.ones(3)}
    view = js.sharding(tree)
    page = to_html(view)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;script&gt;" in page and "bytes/device" in page
    assert "['<script>alert(1)</script>']" in str(view)


def remote_view() -> ShardingView:
    shards = [
        ShardInfo(
            device_id=i if i < 4 else 2048 + i - 4,
            device_kind="cpu",
            platform="cpu",
            process_index=0 if i < 4 else 1,
            index=(slice(2 * i, 2 * i + 2),),
            shape=(2,),
            bytes=8,
            replica_id=0,
            addressable=i < 4,
        )
        for i in range(8)
    ]
    return ShardingView(
        shape=(16,),
        dtype="float32",
        spec="P('x')",
        mesh={"x": 8},
        shards=shards,
        layout=build_layout((16,), shards),
    )


def test_non_addressable_shards_are_marked_with_their_process():
    view = remote_view()
    text = str(view)
    assert "│ CPU 2048 │" in text and "│ (proc 1) │" in text
    assert "1 (remote)" in text
    page = to_html(view)
    assert page.count("jxs-remote") == 4 + 1  # four tiles, plus the CSS rule
    assert "not addressable from this process" in page


def test_program_view_text_and_html_escape_user_strings():
    loc = SourceLoc(file="<b>nb.py</b>", line=7, function="f")
    view = ProgramShardingView(
        function_name="<img src=x>",
        inputs=[("params['<w>']", "P('data')")],
        outputs=[("out", "P()")],
        ops=[
            OpSharding(
                name="dot.1",
                opcode="dot",
                sharding="{replicated}",
                source=loc,
                shape="f32[4]{0}",
                spec="replicated",
            )
        ],
        collectives=[
            Collective(
                name="ar",
                kind="all-reduce",
                bytes=3 * 2**20,
                replica_groups=((0, 1),),
                source=loc,
                axes=("data",),
                op_name="jit(f)/<dot>",
            ),
            Collective(
                name="ag",
                kind="all-gather",
                bytes=2**20,
                replica_groups=None,
                source=loc,
                groups_text="{{0,1}}",
            ),
        ],
        mesh={"data": 2},
        hlo_text="",
        num_devices=2,
    )
    text = str(view)
    assert "line <b>nb.py</b>:7: 1 all-reduce, 1 all-gather, 4 MiB" in text
    assert "all-reduce   3 MiB" in text
    page = to_html(view)
    assert "<img" not in page and "&lt;img src=x&gt;" in page
    assert "<b>nb.py" not in page and "&lt;b&gt;nb.py&lt;/b&gt;:7" in page
    assert "params[&#x27;&lt;w&gt;&#x27;]" in page
    assert "<td>&lt;dot&gt;</td>" in page and "<dot>" not in page  # op name shortened


def test_real_program_html_has_collective_table(mesh):
    x = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("data", "model")))
    view = js.shardings(lambda a: jnp.sum(a))(x)
    page = to_html(view)
    assert "collectives</div>" in page
    assert "all-reduce" in page
    assert "per source line" in str(view)


@pytest.mark.parametrize("n", [40])
def test_large_grids_are_elided(n):
    shards = [
        ShardInfo(
            device_id=i,
            device_kind="cpu",
            platform="cpu",
            process_index=0,
            index=(slice(i, i + 1),),
            shape=(1,),
            bytes=4,
            replica_id=0,
            addressable=True,
        )
        for i in range(n)
    ]
    view = ShardingView(
        shape=(n,),
        dtype="float32",
        spec="P('x')",
        mesh={"x": n},
        shards=shards,
        layout=build_layout((n,), shards),
    )
    text = to_text(view, width=400)
    assert "…" in text
    assert "CPU 39" in text and "CPU 20" not in text.split("\n")[2]
    assert "… 24 more" in text


def test_mesh_diagram_names_axes_and_colours_devices_like_tiles(mesh, mesh3d):
    w = jax.device_put(jnp.ones((32, 16)), NamedSharding(mesh, P("model", None)))
    view = js.sharding(w)
    grid = view.mesh_grid
    assert grid.axes == ("data", "model")
    assert grid.row_labels == ("data=0", "data=1", "data=2", "data=3")
    assert grid.col_labels == ("model=0", "model=1")
    assert grid.rows == ((0, 1), (2, 3), (4, 5), (6, 7))
    text = str(view)
    assert "mesh (data x model): device ids" in text
    assert "model=0" in text and "data=3" in text
    page = to_html(view)
    # device 0 holds the first tile (colour 0), device 1 the second (colour 1)
    assert '<td style="background:#a6cee3;color:#111">0</td>' in page
    assert '<td style="background:#b2df8a;color:#111">1</td>' in page
    g3 = js.sharding(
        jax.device_put(jnp.ones((4, 4)), NamedSharding(mesh3d, P("a", "b")))
    ).mesh_grid
    assert g3.col_labels == ("b=0 c=0", "b=0 c=1", "b=1 c=0", "b=1 c=1")
    assert len(g3.rows) == 2


def test_single_device_and_1d_mesh_grids(mesh1d):
    assert js.sharding(jnp.ones(2)).mesh_grid is None
    x = jax.device_put(jnp.ones(8), NamedSharding(mesh1d, P("i")))
    grid = js.sharding(x).mesh_grid
    assert grid.rows == (tuple(range(8)),)
    assert grid.col_labels[0] == "i=0"


def test_program_view_shows_its_mesh(mesh):
    x = jax.device_put(jnp.ones((16, 8)), NamedSharding(mesh, P("data", "model")))
    view = js.shardings(lambda a: a * 2)(x)
    assert view.mesh_grid.rows == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert "mesh (data x model): device ids" in str(view)
    assert "jxs-mesh" in to_html(view)


def test_collapsed_cells_tell_replicas_from_different_blocks(mesh3d):
    x = jax.device_put(jnp.ones((4, 4, 4)), NamedSharding(mesh3d, P("a", "b", "c")))
    v = js.sharding(x, dims=(0, 1))
    cell = v.layout.cell(0, 0)
    assert cell.device_ids == (0, 1) and cell.pieces == 2
    assert "2 different blocks along the collapsed dimensions" in to_html(v)
    r = js.sharding(jax.device_put(jnp.ones((4, 4)), NamedSharding(mesh3d, P("a"))))
    assert r.layout.cell(0, 0).pieces == 1
    assert "4 replicas of one block" in to_html(r)


def test_pinned_host_memory_kind_is_named(mesh):
    try:
        s = NamedSharding(mesh, P("data"), memory_kind="pinned_host")
        x = jax.device_put(jnp.ones((8, 2)), s)
    except Exception as exc:  # pragma: no cover - backends without host memory
        pytest.skip(f"no pinned_host memory here: {exc}")
    view = js.sharding(x)
    assert view.memory_kind == "pinned_host"
    assert "memory: pinned_host" in str(view)


def test_pytree_over_two_meshes_says_mixed(mesh, mesh3d):
    tree = {
        "a": jax.device_put(jnp.ones(8), NamedSharding(mesh, P("data"))),
        "b": jax.device_put(jnp.ones(8), NamedSharding(mesh3d, P("a"))),
    }
    view = js.sharding(tree)
    assert view.mesh is None
    assert "2 arrays, mesh: mixed (data=4 x model=2; a=2 x b=2 x c=2)" in str(view)
    assert "mesh: mixed" in to_html(view)


def test_pytree_header_lists_mesh_axes_in_mesh_order(devices):
    mesh = jax.make_mesh((2, 4), ("x", "a"))
    w = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("x", "a")))
    view = js.sharding({"w": w, "b": w})
    assert str(view).splitlines()[0] == "2 arrays, mesh: x=2 x a=4"
    assert "mesh: x=2 x a=4" in to_html(view)


def test_pytree_of_single_device_arrays_says_where_they_are():
    view = js.sharding({"w": jnp.ones(3), "b": jnp.zeros(2)})
    assert str(view).splitlines()[0] == "2 arrays, single device: cpu:0"
    assert "single device: cpu:0" in to_html(view)
    one = js.sharding({"w": jnp.ones(3)})
    assert "1 array, single device: cpu:0" in str(one)


def test_program_header_totals_collective_bytes(mesh):
    x = jax.device_put(jnp.ones((64, 32)), NamedSharding(mesh, P("data", "model")))
    view = js.shardings(lambda a: jnp.sum(a, axis=1))(x)
    assert view.collective_bytes == sum(c.bytes * c.runs for c in view.collectives) > 0
    assert f"moving {format_bytes(view.collective_bytes)} per device" in str(view)
