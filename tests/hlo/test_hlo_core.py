"""js.hlo on real programs: each stage's text, the op table, source lines, fusions, cost."""

from __future__ import annotations

import functools
import os
import re
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxscope as js
from jaxscope import HloError
from jaxscope._hlo.model import capture
from jaxscope._staging import trace

HERE = os.path.abspath(__file__)


def dense(x, w):
    with jax.named_scope("dense"):
        y = x @ w  # MARK dot
    return jnp.tanh(y).sum()  # MARK tanh


@jax.jit
def inner(x):
    return jnp.sin(x) * 2.0  # MARK inner sin


def outer(x):
    y = inner(x) + 1.0  # MARK call inner
    return jnp.cos(y)  # MARK outer cos


def scanned(xs):
    def body(carry, x):
        carry = carry + jnp.exp(x)  # MARK scan exp
        return carry, carry * 2.0

    total, ys = lax.scan(body, jnp.zeros(xs.shape[1:]), xs)
    return total, ys


def fusable(x):
    a = jnp.sin(x)  # MARK fuse sin
    b = a * 3.0  # MARK fuse mul
    return jnp.sum(b)  # MARK fuse sum


X = jnp.ones((8, 4), jnp.float32)
W = jnp.ones((4, 4), jnp.float32)


def _ops_at(view, line):
    return view.by_line.get((HERE, line), [])


# ------------------------------------------------------------------ text is JAX's own


def test_stablehlo_text_is_exactly_lowered_as_text():
    view = js.hlo(dense, stage="stablehlo")(X, W)
    assert view.stage == "stablehlo"
    assert view.text == jax.jit(dense).lower(X, W).as_text()


def test_hlo_text_is_exactly_the_hlo_dialect_text():
    view = js.hlo(dense, stage="hlo")(X, W)
    assert view.text == jax.jit(dense).lower(X, W).as_text(dialect="hlo")


def test_default_stage_is_hlo():
    assert js.hlo(dense)(X, W).stage == "hlo"


def test_optimized_text_is_the_compiled_text():
    view = js.hlo(dense, stage="optimized")(X, W)
    expected = jax.jit(dense).lower(X, W).compile().as_text()

    # The metadata tables hold the whole Python stack of the trace (pytest's frames
    # included), which differs between two traces; the computations are the same.
    def computations(text):
        return text[text.index("\n%") :]

    assert computations(view.text) == computations(expected)
    assert view.text.startswith("HloModule jit_dense")
    assert "fusion" in view.text


# ------------------------------------------------------------------ source lines


@pytest.mark.parametrize("stage", ["stablehlo", "hlo", "optimized"])
def test_ops_carry_the_user_line_in_every_stage(stage, line_of):
    view = js.hlo(dense, stage=stage)(X, W)
    dot_line = line_of(dense, "MARK dot")
    tanh_line = line_of(dense, "MARK tanh")
    dots = _ops_at(view, dot_line)
    assert dots, f"no op mapped to line {dot_line}: {sorted(view.by_line)}"
    assert all(op.source.file == HERE for op in dots)
    assert all(op.source.function == "dense" for op in dots)
    assert any("dot" in op.opcode for op in dots)
    assert any("tanh" in op.opcode for op in _ops_at(view, tanh_line))
    # named_scope shows in the op name
    assert any("dense/dot_general" in op.op_name for op in dots)


@pytest.mark.parametrize("stage", ["stablehlo", "hlo", "optimized"])
def test_jit_inside_jit_maps_inner_ops_to_the_inner_function(stage, line_of):
    view = js.hlo(outer, stage=stage)(X)
    sin_ops = _ops_at(view, line_of(inner, "MARK inner sin"))
    assert any(op.opcode in ("sine", "stablehlo.sine") for op in sin_ops)
    assert all(op.source.function == "inner" for op in sin_ops)
    cos_ops = _ops_at(view, line_of(outer, "MARK outer cos"))
    assert any(op.opcode in ("cosine", "stablehlo.cosine") for op in cos_ops)


@pytest.mark.parametrize("stage", ["stablehlo", "hlo", "optimized"])
def test_scan_body_ops_map_to_the_body_line(stage, line_of):
    view = js.hlo(scanned, stage=stage)(jnp.ones((5, 3)))
    exp_ops = _ops_at(view, line_of(scanned, "MARK scan exp"))
    assert any(op.opcode in ("exponential", "stablehlo.exponential") for op in exp_ops)
    assert all(op.source.function.endswith("body") for op in exp_ops)


def test_source_columns_are_recorded(line_of):
    view = js.hlo(dense, stage="hlo")(X, W)
    (dot,) = [
        op for op in _ops_at(view, line_of(dense, "MARK dot")) if op.opcode == "dot"
    ]
    with open(HERE) as source:
        source_line = source.read().splitlines()[dot.source.line - 1]
    assert source_line[dot.source.column :].startswith("x @ w")


def test_by_line_lists_every_mapped_op_once():
    view = js.hlo(outer, stage="optimized")(X)
    mapped = [op for op in view.ops if op.source is not None]
    listed = [op for ops in view.by_line.values() for op in ops]
    assert len(listed) == len(mapped)
    assert {id(op) for op in listed} == {id(op) for op in mapped}


def test_hlo_parameters_are_listed_without_a_source():
    view = js.hlo(dense, stage="hlo")(X, W)
    params = [
        op
        for op in view.ops
        if op.opcode == "parameter" and op.computation.startswith("main")
    ]
    assert [op.op_name for op in params] == ["x", "w"]
    assert all(op.source is None for op in params)
    assert [op.shape for op in params] == ["f32[8,4]", "f32[4,4]"]


def test_stablehlo_ops_have_types_and_functions(line_of):
    view = js.hlo(outer, stage="stablehlo")(X)
    computations = {op.computation for op in view.ops}
    assert "main" in computations and "inner" in computations
    sine = next(op for op in view.ops if op.opcode == "stablehlo.sine")
    assert sine.shape == "tensor<8x4xf32>"
    assert sine.name.startswith("%")
    assert not any(op.opcode.endswith("return") for op in view.ops)


def test_stablehlo_while_takes_the_location_after_its_region(line_of):
    view = js.hlo(scanned, stage="stablehlo")(jnp.ones((5, 3)))
    (loop,) = [op for op in view.ops if op.opcode == "stablehlo.while"]
    assert loop.source is not None
    assert loop.source.line == line_of(scanned, "lax.scan(")


def test_op_lines_point_at_the_op_in_the_text():
    for stage in ("stablehlo", "hlo", "optimized"):
        view = js.hlo(outer, stage=stage)(X)
        lines = view.text.splitlines()
        assert len(view.op_lines) == len(view.ops)
        for op, at in zip(view.ops, view.op_lines, strict=True):
            assert at >= 0
            assert op.name in lines[at], (stage, op, lines[at])


# ------------------------------------------------------------------ fusions


def test_optimized_ops_inside_fusions_name_their_fusion(line_of):
    view = js.hlo(fusable, stage="optimized")(X)
    fusions = {op.name for op in view.ops if op.opcode == "fusion"}
    assert fusions
    members = [op for op in view.ops if op.fusion is not None]
    assert members
    assert {op.fusion for op in members} <= fusions
    sin = [
        op
        for op in _ops_at(view, line_of(fusable, "MARK fuse sin"))
        if op.opcode == "sine"
    ]
    assert sin and sin[0].fusion in fusions
    # the fused computation is listed under its own name
    assert sin[0].computation != ""
    assert not sin[0].computation.startswith("main")


def test_unoptimized_hlo_has_no_fusions():
    view = js.hlo(fusable, stage="hlo")(X)
    assert all(op.fusion is None for op in view.ops)
    assert not any(op.opcode == "fusion" for op in view.ops)


# ------------------------------------------------------------------ cost and memory


@pytest.mark.parametrize("stage", ["stablehlo", "hlo", "optimized"])
def test_cost_has_readable_and_raw_keys(stage):
    cost = js.hlo(dense, stage=stage)(X, W).cost
    assert cost is not None
    assert cost["flops"] > 0
    assert cost["bytes_accessed"] == cost["bytes accessed"]
    assert "transcendentals" in cost
    assert all(isinstance(v, float) for v in cost.values())


@pytest.mark.parametrize("stage", ["hlo", "optimized"])
def test_memory_has_byte_counts(stage):
    memory = js.hlo(dense, stage=stage)(X, W).memory
    assert memory is not None
    assert set(memory) == {
        "argument_bytes",
        "output_bytes",
        "temp_bytes",
        "alias_bytes",
        "generated_code_bytes",
    }
    assert memory["argument_bytes"] == (8 * 4 + 4 * 4) * 4
    assert memory["output_bytes"] == 4


def test_cost_of_a_program_with_no_work_is_not_a_crash():
    view = js.hlo(lambda x: x, stage="optimized")(X)
    assert view.cost is None or isinstance(view.cost, dict)
    assert view.memory is None or view.memory["argument_bytes"] is not None


# ------------------------------------------------------------------ arguments and errors


def test_shape_dtype_struct_and_static_arguments():
    def power(x, n):
        return x**n

    spec = jax.ShapeDtypeStruct((3,), jnp.float32)
    view = js.hlo(power, static_argnums=(1,), stage="hlo")(spec, 3)
    assert "f32[3]" in view.text
    view_kw = js.hlo(power, static_argnames=("n",))(spec, n=2)
    assert view_kw.ops


def test_jitted_function_with_own_static_args_and_pytrees():
    @functools.partial(jax.jit, static_argnames=("scale",))
    def f(params, *, scale):
        return params["w"] * scale + params["b"][0]

    params = {"w": np.ones(3, np.float32), "b": [np.zeros(3, np.float32)]}
    view = js.hlo(f, stage="optimized")(params, scale=2.0)
    assert view.ops
    assert view.function_name.endswith(".f")


def test_grad_and_vmap_functions():
    view = js.hlo(jax.grad(lambda x: jnp.sum(jnp.sin(x))), stage="hlo")(X)
    assert any(op.opcode == "cosine" for op in view.ops)
    view = js.hlo(jax.vmap(jnp.dot), stage="stablehlo")(X, X)
    assert any("dot" in op.opcode for op in view.ops)


def test_unknown_stage_is_rejected_before_tracing():
    calls = []

    def f(x):
        calls.append(x)
        return x

    with pytest.raises(
        js.InvalidCallError, match=r"unknown stage 'bad'.*stablehlo"
    ) as info:
        js.hlo(f, stage="bad")
    assert "\n" not in str(info.value)
    assert calls == []


def test_stage_of_wrong_type_is_rejected():
    with pytest.raises(js.InvalidCallError, match="unknown stage 3"):
        js.hlo(dense, stage=3)


def test_non_callable_is_rejected():
    with pytest.raises(js.InvalidCallError, match=r"js.hlo expects a callable"):
        js.hlo(42)


def test_untraceable_argument_is_one_line_error():
    with pytest.raises(js.InvalidCallError, match=r"x\[0\] is a str") as info:
        js.hlo(lambda x: x)(["hello"])
    assert "\n" not in str(info.value)


def test_function_raising_while_traced_is_a_trace_error():
    def bad(x):
        return x @ jnp.ones((7, 7))

    with pytest.raises(js.TraceError, match=r"bad raised TypeError") as info:
        js.hlo(bad)(X)
    assert "\n" not in str(info.value)


def test_lowering_failure_is_one_line_hlo_error():
    class Broken:
        def lower(self):
            raise RuntimeError("no backend\nsecond line")

    with pytest.raises(
        HloError, match=r"could not lower the program \(RuntimeError: no backend\)"
    ) as info:
        capture(Broken(), "hlo")
    assert "\n" not in str(info.value)
    assert isinstance(info.value, js.JaxscopeError)


def test_capture_never_executes_the_function():
    executed = []

    def f(x):
        jax.debug.callback(lambda v: executed.append(v), x)
        return x * 2

    view = js.hlo(f, stage="optimized")(X)
    view.cost, view.memory, view.ops  # noqa: B018 - the lazy parts, all of them
    assert executed == []


def test_views_from_trace_and_capture_agree():
    traced = trace(dense, (X, W), {})
    captured = capture(traced, "hlo")
    assert captured.text == js.hlo(dense)(X, W).text


def test_shard_map_collectives_map_to_the_user_line(line_of):
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

    def per_shard(a):
        return lax.psum(jnp.sin(a), "x")  # MARK psum

    fn = jax.jit(jax.shard_map(per_shard, mesh=mesh, in_specs=P("x"), out_specs=P()))
    line = line_of(per_shard, "MARK psum")
    for stage, opcode in [
        ("stablehlo", "stablehlo.all_reduce"),
        ("hlo", "all-reduce"),
        ("optimized", "all-reduce"),
    ]:
        view = js.hlo(fn, stage=stage)(jnp.ones((16,)))
        reduces = [op for op in view.ops if op.opcode == opcode]
        assert reduces, stage
        assert all(op.source is not None and op.source.line == line for op in reduces)
        assert reduces[0].shape in ("tensor<2xf32>", "f32[2]")


@jax.custom_jvp
def soft(x):
    return jnp.log1p(jnp.exp(x))  # MARK soft primal


@soft.defjvp
def _soft_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft(x), t * jax.nn.sigmoid(x)  # MARK soft rule


def branching(x, flag):
    def yes(v):
        return jnp.sin(v)  # MARK cond yes

    def no(v):
        return jnp.cos(v)  # MARK cond no

    y = lax.cond(flag, yes, no, x)
    return jax.checkpoint(lambda v: jnp.tanh(v) * 2.0)(y)  # MARK remat


@pytest.mark.parametrize("stage", ["stablehlo", "hlo", "optimized"])
def test_cond_branches_and_checkpoint_map_to_their_lines(stage, line_of):
    view = js.hlo(branching, stage=stage)(X, True)
    want = {
        "MARK cond yes": ("sine", "stablehlo.sine"),
        "MARK cond no": ("cosine", "stablehlo.cosine"),
        "MARK remat": ("tanh", "stablehlo.tanh"),
    }
    cond_line = line_of(branching, "lax.cond(")
    for marker, opcodes in want.items():
        line = line_of(branching, marker)
        ops = [op for op in view.ops if op.opcode in opcodes]
        assert ops, (stage, marker)
        # jax 0.10 records a branch's own line; 0.9 records the lax.cond call line
        assert {op.source.line for op in ops} <= {line, cond_line}, (stage, marker)
        assert all(op.source.file == HERE for op in ops)
    remat = _ops_at(view, line_of(branching, "MARK remat"))
    assert any(op.opcode in want["MARK remat"] for op in remat)


def test_custom_jvp_rule_ops_map_to_the_rule(line_of):
    view = js.hlo(jax.grad(lambda x: soft(x).sum()), stage="hlo")(X)
    rule_ops = _ops_at(view, line_of(_soft_jvp, "MARK soft rule"))
    assert rule_ops
    assert all(op.source.function == "_soft_jvp" for op in rule_ops)


def test_stage_objects_are_available_for_power_users():
    view = js.hlo(dense, stage="hlo")(X, W)
    assert isinstance(view.lowered, jax.stages.Lowered)
    assert view.lowered.as_text(dialect="hlo") == view.text
    assert isinstance(view.compiled, jax.stages.Compiled)
    assert view.compiled is view.compiled  # compiled once


class _EqxMLP(eqx.Module):
    layers: list
    activation: Any

    def __init__(self, key):
        k1, k2 = jax.random.split(key)
        self.layers = [eqx.nn.Linear(3, 8, key=k1), eqx.nn.Linear(8, 2, key=k2)]
        self.activation = jax.nn.relu

    def __call__(self, x):
        x = self.activation(self.layers[0](x))  # L:eqx-hidden
        return self.layers[1](x)


@eqx.filter_jit
def _eqx_loss(model, x, scale):
    return jnp.mean(jax.vmap(model)(x) ** 2) * scale


def _without_locations(text: str) -> str:
    lines = [line for line in text.splitlines() if not line.startswith("#loc")]
    return re.sub(r" loc\((?:[^()]|\([^()]*\))*\)", "", "\n".join(lines))


@pytest.mark.parametrize("stage", ["stablehlo", "hlo"])
def test_filter_jit_program_is_the_one_equinox_lowers(stage, line_of):
    model, x = _EqxMLP(jax.random.key(0)), jnp.ones((4, 3))
    view = js.hlo(_eqx_loss, stage=stage)(model, x, 2)
    theirs = _eqx_loss.lower(model, x, 2).lowered
    expected = theirs.as_text() if stage == "stablehlo" else theirs.as_text("hlo")
    assert _without_locations(view.text) == _without_locations(expected)
    hidden = line_of(_EqxMLP.__call__, "L:eqx-hidden")
    assert any(op.source is not None and op.source.line == hidden for op in view.ops)
