"""js.memory on real programs: the peak agrees with XLA's memory_analysis, and the
buffers live there are told apart and mapped to the lines that define them."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxscope._exceptions import InvalidCallError
from jaxscope._profile.buffers import parse_buffer_assignment, parse_live_ranges
from jaxscope._profile.memory import MemoryView, largest_buffers_at_peak, memory

from . import programs
from .programs import line_of


def xla_total(view: MemoryView) -> int:
    a = view.analysis
    assert a is not None
    return a["argument_bytes"] + a["output_bytes"] + a["temp_bytes"] - a["alias_bytes"]  # type: ignore[operator]


@pytest.mark.parametrize(
    "build", [programs.scan_rnn, programs.transformer, programs.sharded]
)
def test_peak_agrees_with_memory_analysis(build):
    fn, args = build()
    view = memory(fn)(*args)
    assert view.peak_bytes == pytest.approx(xla_total(view), rel=0.05)
    assert view.argument_bytes == view.analysis["argument_bytes"]
    assert view.temp_live_bytes <= view.temp_bytes
    assert max(view.timeline) == view.peak_bytes == view.timeline[view.peak_position]
    assert sum(b.peak_bytes for b in view.buffers) == view.peak_bytes
    assert sum(view.kinds.values()) == view.peak_bytes


def test_mlp_step_buffers_kinds_donation_and_lines(mlp_memory: MemoryView):
    view = mlp_memory
    assert view.peak_bytes == pytest.approx(xla_total(view), rel=0.05)
    analysis = view.analysis
    assert analysis is not None
    assert view.alias_bytes == analysis["alias_bytes"] > 0  # params are donated
    kinds = {b.kind for b in view.buffers}
    assert {"donated", "argument", "temporary", "output"} <= kinds
    donated = {b.argument for b in view.buffers if b.kind == "donated"}
    assert donated == {"params['b1']", "params['w1']", "params['w2']"}
    assert {b.argument for b in view.buffers if b.kind == "argument"} == {"x", "y"}
    largest = view.largest(3)
    assert [b.bytes for b in largest] == sorted(
        (b.bytes for b in largest), reverse=True
    )
    # temporaries come from the user's lines, shaped as XLA placed them
    temps = [b for b in view.buffers if b.kind == "temporary" and b.bytes > 1024]
    assert temps and all(b.source is not None for b in temps)
    assert all(b.source.file == programs.__file__ for b in temps)
    hidden = line_of(programs.mlp_loss, "hidden")
    assert (programs.__file__, hidden) in view.by_line
    line = view.by_line[(programs.__file__, hidden)]
    assert line.bytes == sum(
        b.bytes
        for b in view.buffers
        if b.source
        and b.source.key == line.key
        and b.kind not in ("argument", "donated")
    )
    assert line.code.startswith("h = jnp.tanh(")
    assert all(0 < m.share <= 1 for m in view.lines)


def test_largest_buffers_at_peak_for_an_explainer():
    fn, args = programs.transformer()
    traced = fn.trace(*args)
    from_traced = largest_buffers_at_peak(traced, n=3)
    from_lowered = largest_buffers_at_peak(traced.lower(), n=3)
    assert [b.bytes for b in from_traced] == [b.bytes for b in from_lowered]
    assert len(from_traced) == 3 and from_traced[0].bytes >= from_traced[-1].bytes
    view = memory(fn)(*args)
    assert largest_buffers_at_peak(view, n=2) == view.largest(2)
    with pytest.raises(InvalidCallError, match=r"MemoryView, jax\.stages\.Lowered"):
        largest_buffers_at_peak(fn)


def test_memory_never_runs_the_function_and_leaves_config_alone():
    calls = []

    def f(x):
        calls.append(1)  # traced once, never executed on the device
        return jnp.sin(x) @ x

    before = jax.config.values["jax_enable_compilation_cache"]
    view = memory(f)(jnp.ones((32, 32)))
    assert calls == [1]
    assert jax.config.values["jax_enable_compilation_cache"] == before
    assert view.peak_bytes >= 2 * 32 * 32 * 4


DUMP = """\
BufferAssignment:
allocation 0: size 64, parameter 0, shape |f32[16]| at ShapeIndex {}, maybe-live-out:
 value: <1 p.1 @0> (size=64,offset=0): f32[16]{0}
 value: <4 out.1 @0> (size=64,offset=0): f32[16]{0}
allocation 1: size 12, output shape is |(f32[16], f32[])|, maybe-live-out:
 value: <5 tuple.1{} @0> (size=12,offset=0): (f32[16]{0}, f32[]{})
allocation 2: size 4, thread-local:
 value: <6 add.9 @0> (size=4,offset=0): f32[]
allocation 3: size 96, preallocated-temp:
 value: <2 a.2 @0> (size=64,offset=0): f32[16]{0}
 value: <3 b.3{1} (phi) @0> (size=32,offset=64): f32[8]{0}
 value: <7 c.4 @0> (size=64,offset=0): f32[16]{0}

Total bytes used: 176
"""

LIVE = """\
HloLiveRange (max 5):
  InstructionSequence:
    0:p.1
    1:a.2
    2:b.3
    3:c.4
    4:out.1
  BufferLiveRange:
    p.1{}:0-5
    a.2{}:1-2
    b.3{1}:2-3
    c.4{}:3-4
    out.1{}:4-5
  Live ranges at 2 (peak):
    p.1{}: 64 bytes (cumulative: 64 bytes)
"""


def test_dump_parsers_read_allocations_values_and_ranges():
    allocations = parse_buffer_assignment(DUMP)
    assert [(a.index, a.kind, a.live_out) for a in allocations] == [
        (0, "parameter", True),
        (1, "output", True),
        (2, "thread-local", False),
        (3, "temp", False),
    ]
    assert allocations[0].parameter == 0
    assert [v.name for v in allocations[3].values] == ["a.2{}", "b.3{1}", "c.4{}"]
    assert allocations[3].values[1].instruction == "b.3"
    schedule, ranges = parse_live_ranges(LIVE)
    assert schedule == ["p.1", "a.2", "b.3", "c.4", "out.1"]
    assert ranges["b.3{1}"] == (2, 3) and ranges["p.1{}"] == (0, 5)


def test_peak_over_the_schedule_counts_each_temp_slot_once():
    from jaxscope._profile.buffers import BufferDump
    from jaxscope._profile.peak import find_peak

    schedule, ranges = parse_live_ranges(LIVE)
    peak = find_peak(BufferDump(parse_buffer_assignment(DUMP), schedule, ranges))
    # fixed: 64 (donated parameter) + 12 (output tuple); temps a.2 + b.3 at 2
    assert peak.fixed == 76
    assert peak.live == (76, 140, 172, 172, 140)
    assert peak.position == 2 and peak.bytes == 172
    names = sorted(h.value.name for h in peak.at_peak if h.value is not None)
    assert names == ["a.2{}", "b.3{1}", "p.1{}", "tuple.1{}"]
    assert sum(h.counted for h in peak.at_peak) == peak.bytes


def test_library_arguments_are_named_as_the_user_wrote_them():
    pytest.importorskip("equinox")
    from ..libraries import programs as library

    fn, args = library.PROGRAMS["eqx_mlp"]()
    view = memory(fn)(*args)
    names = {b.argument for b in view.arguments}
    assert {"x", "model.layers[0].weight", "model.layers[2].bias"} <= names
    assert view.peak_bytes == pytest.approx(xla_total(view), rel=0.05)


_ITEMSIZE = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2}
_ITEMSIZE |= {"f32": 4, "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u64": 8}


def own_bytes(shape: str) -> int:
    """The bytes of one array shaped ``f32[64,1,1]`` (a scalar: ``f32[]``)."""
    dtype, dims = shape.rstrip("]").split("[")
    count = 1
    for d in filter(None, dims.split(",")):
        count *= int(d)
    return count * _ITEMSIZE[dtype]


def test_optax_step_buffers_have_their_own_size_and_kind(optax_memory: MemoryView):
    # XLA places temporaries (the cross-entropy's broadcasts and gathers) in the
    # output allocations before the outputs are written; they are temporaries of
    # their own size, never outputs of the allocation's size
    view = optax_memory
    arrays = [b for b in view.buffers if not b.shape.startswith("(")]
    assert arrays
    for b in arrays:
        assert b.bytes == own_bytes(b.shape), b
    fn, args = programs.optax_mlp()
    outputs = jax.tree.leaves(jax.eval_shape(fn, *args))
    kept = sorted(b.bytes for b in arrays if b.kind == "output")
    assert kept == sorted(o.size * o.dtype.itemsize for o in outputs)
    xent = line_of(programs.optax_loss, "xent")
    on_xent = [b for b in view.buffers if b.source and b.source.line == xent]
    # the loss is the line's one output; its broadcasts and gathers are temporaries
    assert [b.shape for b in on_xent if b.kind == "output"] == ["f32[]"]
    assert any(b.kind == "temporary" for b in on_xent)
    # what the peak holds adds up, per buffer, per line (arguments aside) and per kind
    assert sum(b.peak_bytes for b in view.buffers) == view.peak_bytes
    line = view.by_line[(programs.__file__, xent)]
    assert line.bytes == sum(b.peak_bytes for b in view.buffers_at(*line.key))
    assert sum(view.kinds.values()) == view.peak_bytes
    assert view.peak_bytes == pytest.approx(xla_total(view), rel=0.05)


def test_buffers_at_the_peak_by_kind(optax_memory: MemoryView):
    view = optax_memory
    states = {b.argument for b in view.buffers if b.kind == "optimizer_state"}
    assert "opt_state[0].mu[0]['w']" in states and "opt_state[0].count" in states
    args = {b.argument for b in view.buffers if b.kind == "argument"}
    assert args == {"x", "y"} | {f"params[{i}]['{k}']" for i in (0, 1) for k in "wb"}
    # the relu activations and the softmax are kept for the backward pass
    saved = {b.source.line for b in view.buffers if b.kind == "residual" and b.source}
    relu = line_of(programs.optax_predict, "relu")
    assert relu in saved
    assert saved <= {relu, line_of(programs.optax_loss, "xent")}
    assert view.kinds["residual"] == sum(
        b.peak_bytes for b in view.buffers if b.kind == "residual"
    )
    # the optimizer's own temporaries are no residuals
    adam = line_of(programs.optax_step, "adam")
    assert all(
        b.kind != "residual" for b in view.buffers if b.source and b.source.line == adam
    )


def test_no_residual_or_optimizer_state_where_there_is_none(mlp_memory: MemoryView):
    fn, args = programs.transformer()
    forward_only = memory(fn)(*args)
    assert {b.kind for b in forward_only.buffers} <= {"argument", "output", "temporary"}
    # params named params are parameters, never optimizer state
    assert "optimizer_state" not in mlp_memory.kinds


@pytest.mark.parametrize(
    ("name", "is_state"),
    [
        ("opt_state[0].mu['w']", True),
        ("optimizer.opt_state.0.mu.kernel", True),
        ("state.opt_state[1].nu", True),
        ("opt[0].count", True),
        ("options['lr']", False),
        ("optimal_w", False),
        ("params['opt']", False),
        ("model.adapter.kernel", False),
    ],
)
def test_optimizer_state_is_told_by_the_argument_name(name: str, is_state: bool):
    from jaxscope._profile.at_peak import is_optimizer_state

    assert is_optimizer_state(name) is is_state


def test_out_of_memory_facts_of_a_step_too_big_to_allocate():
    # compile-only, from shapes: nothing of this size is ever allocated
    from jaxscope._profile.memory import out_of_memory_facts

    from . import remat_programs as rp

    f32 = jnp.float32
    params = {
        "w1": jax.ShapeDtypeStruct((4096, 8192), f32),
        "w2": jax.ShapeDtypeStruct((8192, 4), f32),
    }
    x = jax.ShapeDtypeStruct((1 << 16, 4096), f32)
    view = memory(rp.tanh_step)(params, x)
    assert view.peak_bytes > 2 * 2**30
    facts, fixes = out_of_memory_facts(view)
    assert facts[0].startswith("memory peak ") and "residual" in facts[0]
    hidden = line_of(rp.tanh_loss, "hidden")
    assert facts[1].startswith("peak by line: ")
    assert f"tests/profile/remat_programs.py:{hidden} 2 GiB" in facts[1]
    assert fixes[0].startswith(f"tests/profile/remat_programs.py:{hidden} keeps 2 GiB")
    assert "jax.checkpoint" in fixes[0]
    assert any("donate_argnames=('params',)" in f for f in fixes)
    # no checkpoint advice where no residual holds much of the peak
    fn, args = programs.transformer()
    assert not any("checkpoint" in f for f in out_of_memory_facts(memory(fn)(*args))[1])
