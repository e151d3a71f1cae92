"""The text parsers and analysis normalisers, on hand-written module texts.

JAX's printed forms are pinned here as they are documented (the compact StackFrames
tables of jax >= 0.9, the inline metadata before it, MLIR location chains), so a
format change shows as a precise failure.
"""

from __future__ import annotations

from types import SimpleNamespace

from jaxscope._hlo.model import normalize_cost, normalize_memory
from jaxscope._hlo.ops import parse_hlo
from jaxscope._hlo.parse import short_shape
from jaxscope._hlo.stablehlo import parse_stablehlo

COMPACT = """\
HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[]}

FileNames
1 "/src/model.py"
2 "/src/train.py"

FunctionNames
1 "layer"
2 "main"

FileLocations
1 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=4 end_column=9}
2 {file_name_id=2 function_name_id=2 line=40 end_line=40 column=8 end_column=20}

StackFrames
1 {file_location_id=2 parent_frame_id=1}
2 {file_location_id=1 parent_frame_id=2}


%fused_computation (param_0: f32[8]) -> f32[] {
  %param_0 = f32[8]{0} parameter(0)
  %sin.1 = f32[8]{0} sine(%param_0), metadata={op_name="jit(f)/sin" stack_frame_id=2}
  %c = f32[] constant(0)
  ROOT %reduce.1 = f32[] reduce(%sin.1, %c), dimensions={0}, to_apply=%add, metadata={op_name="jit(f)/reduce_sum" stack_frame_id=1}
}

ENTRY %main.2 (x.1: f32[8]) -> f32[] {
  %x.1 = f32[8]{0} parameter(0), metadata={op_name="x"}
  %t = (f32[8]{0}, s32[]) tuple(%x.1, %x.1)
  ROOT %sin_reduce_fusion = f32[] fusion(%x.1), kind=kLoop, calls=%fused_computation, metadata={op_name="jit(f)/<b>/reduce_sum" stack_frame_id=1}
}
"""

OLD_INLINE = """\
HloModule jit_g

ENTRY main.3 {
  Arg_0.1 = f32[3]{0} parameter(0)
  ROOT cosine.2 = f32[3]{0} cosine(Arg_0.1), metadata={op_name="jit(g)/cos" source_file="/src/g.py" source_line=7 source_column=11}
}
"""

STABLEHLO = """\
#loc1 = loc("x")
module @jit_f attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32> loc("x")) -> (tensor<f32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %arg0 : tensor<8xf32> loc(#loc7)
    %1:2 = stablehlo.while(%iterArg = %0, %iterArg_0 = %c) : tensor<8xf32>, tensor<i32>
    cond {
      %2 = stablehlo.compare  LT, %iterArg_0, %c : (tensor<i32>, tensor<i32>) -> tensor<i1> loc(#loc8)
      stablehlo.return %2 : tensor<i1> loc(#loc)
    } do {
      %2 = stablehlo.add %iterArg_0, %c : tensor<i32> loc(fused["a.py":1:1, #loc8])
      stablehlo.return %iterArg, %2 : tensor<8xf32>, tensor<i32> loc(#loc)
    } loc(#loc9)
    %3 = "stablehlo.custom_call"(%0) {call_target_name = "x{"} : (tensor<8xf32>) -> tensor<f32> loc(unknown)
    return %3 : tensor<f32> loc(#loc)
  } loc(#loc)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("/src/model.py":12:4 to :9)
#loc3 = loc("/src/train.py":40:8 to 41:2)
#loc4 = loc("layer"(#loc2))
#loc5 = loc("main"(#loc3))
#loc6 = loc(callsite(#loc4 at #loc5))
#loc7 = loc("jit(f)/sin"(#loc6))
#loc8 = loc("jit(f)/while/cond/lt"(#loc5))
#loc9 = loc("jit(f)/while"(#loc6))
"""


def test_compact_tables_give_the_innermost_frame():
    parsed = parse_hlo(COMPACT)
    ops = {op.name: op for op in parsed.ops}
    sin = ops["sin.1"]
    assert (sin.source.file, sin.source.line, sin.source.column) == (
        "/src/model.py",
        12,
        4,
    )
    assert sin.source.function == "layer"
    assert sin.op_name == "jit(f)/sin"
    reduce = ops["reduce.1"]
    assert (reduce.source.file, reduce.source.line, reduce.source.function) == (
        "/src/train.py",
        40,
        "main",
    )


def test_compact_tables_fusion_membership_and_shapes():
    parsed = parse_hlo(COMPACT)
    ops = {op.name: op for op in parsed.ops}
    assert ops["sin.1"].fusion == "sin_reduce_fusion"
    assert ops["param_0"].fusion == "sin_reduce_fusion"
    assert ops["sin.1"].computation == "fused_computation"
    assert ops["sin_reduce_fusion"].fusion is None
    assert ops["sin_reduce_fusion"].computation == "main.2"
    assert ops["sin_reduce_fusion"].op_name == "jit(f)/<b>/reduce_sum"
    assert ops["t"].shape == "(f32[8], s32[])"
    assert ops["t"].opcode == "tuple"
    assert ops["x.1"].source is None and ops["x.1"].op_name == "x"
    assert parsed.lines == [
        i for i, line in enumerate(COMPACT.splitlines()) if " = " in line
    ]


def test_parent_frames_are_followed_when_the_innermost_is_not_user_code():
    import jax

    jax_file = jax.__file__
    text = COMPACT.replace('1 "/src/model.py"', f'1 "{jax_file}"')
    parsed = parse_hlo(text)
    sin = next(op for op in parsed.ops if op.name == "sin.1")
    # frame 2 (inside JAX) has parent frame 1 (printed as parent_frame_id=2)
    assert (sin.source.file, sin.source.line) == ("/src/train.py", 40)


def test_old_inline_metadata_is_read():
    (param, cos) = parse_hlo(OLD_INLINE).ops
    assert param.source is None
    assert (cos.source.file, cos.source.line, cos.source.column) == ("/src/g.py", 7, 11)
    assert cos.opcode == "cosine" and cos.computation == "main.3"


def test_stablehlo_location_chains():
    parsed = parse_stablehlo(STABLEHLO)
    ops = {(op.opcode, op.name): op for op in parsed.ops}
    sine = ops[("stablehlo.sine", "%0")]
    assert (sine.source.file, sine.source.line, sine.source.column) == (
        "/src/model.py",
        12,
        4,
    )
    assert sine.source.function == "layer"
    assert sine.op_name == "jit(f)/sin"
    assert sine.shape == "tensor<8xf32>"
    assert sine.computation == "main"


def test_stablehlo_region_ops_fused_and_unknown_locations():
    parsed = parse_stablehlo(STABLEHLO)
    ops = {(op.opcode, op.name): op for op in parsed.ops}
    loop = ops[("stablehlo.while", "%1")]
    assert loop.source.line == 12 and loop.op_name == "jit(f)/while"
    assert loop.shape == "tensor<8xf32>, tensor<i32>"
    compare = ops[("stablehlo.compare", "%2")]
    assert (compare.source.file, compare.source.line) == ("/src/train.py", 40)
    add = ops[("stablehlo.add", "%2")]
    assert (add.source.file, add.source.line) == ("a.py", 1)
    custom = ops[("stablehlo.custom_call", "%3")]
    assert custom.source is None and custom.shape == "tensor<f32>"
    assert not any("return" in op.opcode for op in parsed.ops)
    # line numbers index the text printed without the #loc lines
    plain = [line for line in STABLEHLO.splitlines() if not line.startswith("#loc")]
    for op, at in zip(parsed.ops, parsed.lines, strict=True):
        assert op.name in plain[at]


def test_short_shape_strips_layouts():
    assert short_shape("f32[8,4]{1,0}") == "f32[8,4]"
    assert short_shape("(f32[4]{0}, s32[])") == "(f32[4], s32[])"
    assert short_shape("f32[8]{0:T(256)S(1)}") == "f32[8]"


def test_cost_normalisation():
    assert normalize_cost(None) is None
    assert normalize_cost({}) is None
    assert normalize_cost([]) is None
    cost = normalize_cost({"flops": 10, "bytes accessed": 4.0, "utilization0{}": 1.0})
    assert cost == {
        "flops": 10.0,
        "bytes_accessed": 4.0,
        "bytes accessed": 4.0,
        "utilization0{}": 1.0,
    }
    summed = normalize_cost([{"flops": 1.0, "transcendentals": 2.0}, {"flops": 3.0}])
    assert summed["flops"] == 4.0 and summed["transcendentals"] == 2.0


def test_memory_normalisation():
    assert normalize_memory(None) is None
    assert normalize_memory(SimpleNamespace()) is None
    stats = SimpleNamespace(
        argument_size_in_bytes=8,
        output_size_in_bytes=4,
        temp_size_in_bytes=0,
        alias_size_in_bytes=0,
    )
    assert normalize_memory(stats) == {
        "argument_bytes": 8,
        "output_bytes": 4,
        "temp_bytes": 0,
        "alias_bytes": 0,
        "generated_code_bytes": None,
    }


def test_garbage_text_gives_no_ops():
    assert parse_hlo("not an hlo module\n{{{\n").ops == []
    assert parse_stablehlo("").ops == []


def test_stablehlo_generic_op_with_a_region_takes_the_type_after_it():
    text = """\
module @m {
  func.func public @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = dense<0> : tensor<1x8xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %1 = stablehlo.add %a, %b : tensor<f32> loc(#loc1)
      stablehlo.return %1 : tensor<f32> loc(#loc1)
    }) : (tensor<2xf32>) -> tensor<2xf32> loc(#loc2)
    return %0 : tensor<2xf32> loc(#loc1)
  } loc(#loc1)
} loc(#loc1)
#loc1 = loc("/src/a.py":3:1)
#loc2 = loc("jit(f)/psum"("/src/a.py":9:5))
"""
    reduce, add = parse_stablehlo(text).ops
    assert (reduce.opcode, reduce.shape, reduce.op_name) == (
        "stablehlo.all_reduce",
        "tensor<2xf32>",
        "jit(f)/psum",
    )
    assert reduce.source.line == 9
    assert (add.opcode, add.shape, add.source.line) == (
        "stablehlo.add",
        "tensor<f32>",
        3,
    )


def test_one_instruction_line_read_piece_by_piece():
    from jaxscope._hlo.parse import instruction_parts, parse_instruction

    line = (
        "  ROOT %ags.1 = (f32[4,4]{1,0}, f32[16,4]{1,0}) all-gather-start("
        "f32[4,4]{1,0} %p, /*index=1*/(f32[2]{0}, s32[]) %t), channel_id=1, "
        "replica_groups=mesh['a'=4] {'a'}, dimensions={0}, "
        'sharding={devices=[4,1]<=[4]}, metadata={op_name="jit(f)/\\"q\\"" '
        "stack_frame_id=3}"
    )
    instr = parse_instruction(line, 7, "main")
    assert (instr.index, instr.computation, instr.name) == (7, "main", "ags.1")
    assert instr.shape == "(f32[4,4]{1,0}, f32[16,4]{1,0})"
    assert instr.opcode == "all-gather-start"
    assert instr.operands == ["p", "t"]
    assert instr.attr("replica_groups") == "mesh['a'=4] {'a'}"
    assert instr.attr("sharding") == "{devices=[4,1]<=[4]}"
    assert instr.attr("dimensions") == "{0}"
    assert instr.attr("channel_id") == "1"
    assert instr.metadata.startswith("metadata={")
    assert "".join(instruction_parts(line)) == line
    assert instruction_parts(line)[2:4] == ("%ags.1", " = ")
    assert parse_instruction("HloModule m") is None


def test_sharding_attributes_decoded_to_tiles():
    from jaxscope._hlo.parse import parse_sharding

    tiled = parse_sharding("{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}")
    assert tiled.kind == "tiled" and tiled.data_dims == 2
    assert tiled.tiles.tolist() == [[[0, 2, 4, 6]], [[1, 3, 5, 7]]]
    assert parse_sharding("{maximal device=3}").device == 3
    assert parse_sharding("{{replicated}, {manual}}").kind == "tuple"
    assert parse_sharding("{devices=[2,2]0,1,2}") is None
    assert parse_sharding("{unknown}") is None
