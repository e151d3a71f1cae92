"""The HLO text parsers behind js.shardings: every spelling XLA uses."""

from __future__ import annotations

import pytest

from jaxscope._format import format_bytes
from jaxscope._hlo.parse import parse_replica_groups, shape_bytes
from jaxscope._sharding.collectives import parse_collectives
from jaxscope._sharding.mesh import axes_of_groups, spec_of_hlo_sharding
from jaxscope._sharding.ops import parse_stack_frames

MESH = {"data": 4, "model": 2}


@pytest.mark.parametrize(
    "text, groups",
    [
        ("{{0,1},{2,3},{4,5},{6,7}}", ((0, 1), (2, 3), (4, 5), (6, 7))),
        ("{}", ()),
        ("[4,2]<=[8]", ((0, 1), (2, 3), (4, 5), (6, 7))),
        ("[2,4]<=[4,2]T(1,0)", ((0, 2, 4, 6), (1, 3, 5, 7))),
        (
            "mesh['axis_0'=4,'axis_1'=1,'axis_2'=2] {'axis_0'}",
            ((0, 2, 4, 6), (1, 3, 5, 7)),
        ),
        ("mesh['a'=2,'b'=4] {'a','b'}", ((0, 1, 2, 3, 4, 5, 6, 7),)),
        ("something new", None),
    ],
)
def test_replica_group_spellings(text, groups):
    assert parse_replica_groups(text) == groups


def test_groups_map_to_mesh_axes():
    assert axes_of_groups(((0, 1), (2, 3), (4, 5), (6, 7)), MESH) == ("model",)
    assert axes_of_groups(((0, 2, 4, 6), (1, 3, 5, 7)), MESH) == ("data",)
    assert axes_of_groups((tuple(range(8)),), MESH) == ("data", "model")
    assert axes_of_groups(((0, 3), (1, 2), (4, 7), (5, 6)), MESH) is None
    assert axes_of_groups(((0, 1),), None) is None


@pytest.mark.parametrize(
    "text, spec",
    [
        ("{devices=[4,2]<=[8]}", "P('data', 'model')"),
        ("{devices=[4,1,2]<=[8] last_tile_dim_replicate}", "P('data', None)"),
        ("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}", "P('model', None)"),
        ("{devices=[8,1]<=[8]}", "P(('data', 'model'), None)"),
        ("{devices=[2,4]0,2,4,6,1,3,5,7}", "P('model', 'data')"),
        ("{replicated}", "replicated"),
        ("{manual}", "manual"),
        ("{maximal device=3}", "device 3"),
        ("{{replicated}, {manual}}", None),
        ("{devices=[2,4]0,3,1,2,4,7,5,6}", None),
    ],
)
def test_hlo_sharding_as_mesh_spec(text, spec):
    assert spec_of_hlo_sharding(text, MESH) == spec


def test_shape_bytes_and_format():
    assert shape_bytes("f32[16,16]{1,0}") == 1024
    assert shape_bytes("(bf16[2,3]{1,0}, s8[4]{0}, pred[])") == 12 + 4 + 1
    assert shape_bytes("f32[]") == 4
    assert format_bytes(3 * 2**20) == "3 MiB"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(12) == "12 B"


OLD_FORMAT = """HloModule m, num_partitions=2

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0), sharding={devices=[2]<=[2]}
  ROOT %ar = f32[8]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, to_apply=%add, metadata={op_name="jit(f)/psum" source_file="/home/u/model.py" source_line=42}
}
"""

ASYNC = """HloModule m, num_partitions=4

FileNames
1 "/home/u/a \\"quoted\\".py"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=9 end_line=9 column=4 end_column=10}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

%body (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %c = f32[4]{0} copy(%x)
}

ENTRY %main (p: f32[4,4]) -> f32[16,4] {
  %p = f32[4,4]{1,0} parameter(0)
  %ags = (f32[4,4]{1,0}, f32[16,4]{1,0}) all-gather-start(%p), channel_id=1, replica_groups=[1,4]<=[4], dimensions={0}, metadata={op_name="jit(f)/all_gather" stack_frame_id=1}
  ROOT %agd = f32[16,4]{1,0} all-gather-done(%ags)
}
"""


def test_old_inline_source_metadata():
    (c,) = parse_collectives(OLD_FORMAT)
    assert c.kind == "all-reduce"
    assert (c.source.file, c.source.line) == ("/home/u/model.py", 42)
    assert c.bytes == 32


def test_async_start_is_one_collective_with_frames_table():
    frames = parse_stack_frames(ASYNC)
    assert frames[1].file == '/home/u/a "quoted".py'
    assert (frames[1].line, frames[1].column, frames[1].function) == (9, 4, "f")
    (c,) = parse_collectives(ASYNC, mesh={"x": 4})
    assert c.kind == "all-gather"
    assert c.bytes == 16 * 4 * 4
    assert c.replica_groups == ((0, 1, 2, 3),)
    assert c.axes == ("x",)
    assert c.source.line == 9


LOOPS = """HloModule m, num_partitions=2

%inner (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %ar = f32[4]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, to_apply=%add
}

%outer (q: f32[4]) -> f32[4] {
  %q = f32[4]{0} parameter(0)
  %ag = f32[8]{0} all-gather(%q), channel_id=2, replica_groups={{0,1}}, dimensions={0}
  ROOT %w = f32[4]{0} while(%q), condition=%cond, body=%inner, backend_config={"known_trip_count":{"n":"4"}}
}

%unknown (r: f32[4]) -> f32[4] {
  %r = f32[4]{0} parameter(0)
  ROOT %cp = f32[4]{0} collective-permute(%r), channel_id=3, source_target_pairs={{0,1},{1,0}}
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %w1 = f32[4]{0} while(%x), condition=%cond, body=%outer, backend_config={"known_trip_count":{"n":"3"}}
  %w2 = f32[4]{0} while(%w1), condition=%cond, body=%unknown
  ROOT %rs = f32[2]{0} reduce-scatter(%w2), channel_id=4, replica_groups={{0,1}}, dimensions={0}, to_apply=%add
}
"""


def test_collectives_in_nested_loops_count_their_runs():
    runs = {c.name: c.runs for c in parse_collectives(LOOPS)}
    assert runs == {"ar": 12, "ag": 3, "cp": None, "rs": 1}
    rs = next(c for c in parse_collectives(LOOPS) if c.name == "rs")
    assert rs.bytes == 16  # the larger of its input (16 B) and output (8 B)


def test_empty_replica_groups_mean_every_device():
    text = OLD_FORMAT.replace("replica_groups={{0,1}}", "replica_groups={}")
    (c,) = parse_collectives(text, mesh={"x": 2})
    assert c.replica_groups == ((0, 1),)
    assert c.axes == ("x",)


def test_op_names_are_unescaped_as_the_hlo_view_shows_them():
    text = OLD_FORMAT.replace('op_name="jit(f)/psum"', 'op_name="jit(f)/\\"q\\"/psum"')
    (c,) = parse_collectives(text)
    assert c.op_name == 'jit(f)/"q"/psum'
