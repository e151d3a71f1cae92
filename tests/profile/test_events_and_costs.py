"""Reading the profiler's events (CPU host threads, GPU/TPU device planes written as
XSpace text protos) and the per-op cost estimate, against XLA's own totals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.profiler import ProfileData

from jaxscope._profile.attribution import attribute
from jaxscope._profile.compiling import compile_lowered, optimized_view
from jaxscope._profile.costs import op_cost
from jaxscope._profile.events import (
    COMMAND_BUFFERS_OFF,
    DeviceTimes,
    OpEvent,
    device_times,
    grouped_ops,
    op_events,
)
from jaxscope._profile.hlo_facts import ModuleFacts

from . import programs

KNOWN = frozenset({"fusion.1", "fusion.2", "while.3", "copy.4"})


def _event(md: int, start_ps: int, dur_ps: int, stats: str = "") -> str:
    return (
        f"events {{ metadata_id: {md} offset_ps: {start_ps} duration_ps: {dur_ps} "
        f"{stats} }}"
    )


def _stat(md: int, value: str) -> str:
    return f'stats {{ metadata_id: {md} str_value: "{value}" }}'


def _gpu_space() -> ProfileData:
    """Two GPUs: kernels carry hlo_op / hlo_module; the derived "XLA Ops" line
    repeats them (it must not count twice); a kernel of another module is ignored;
    the host plane has launch events that must be left out."""
    kernels = " ".join(
        [
            _event(1, 1_000_000, 4_000_000, _stat(1, "fusion.1") + _stat(2, "jit_f")),
            _event(1, 5_000_000, 1_000_000, _stat(1, "fusion.1") + _stat(2, "jit_f")),
            _event(1, 6_000_000, 2_000_000, _stat(1, "fusion.2") + _stat(2, "jit_f")),
            _event(1, 9_000_000, 7_000_000, _stat(1, "fusion.2") + _stat(2, "jit_g")),
        ]
    )
    derived = _event(2, 1_000_000, 5_000_000) + " " + _event(3, 6_000_000, 2_000_000)
    metadata = (
        'event_metadata { key: 1 value { id: 1 name: "loop_kernel" } } '
        'event_metadata { key: 2 value { id: 2 name: "fusion.1" } } '
        'event_metadata { key: 3 value { id: 3 name: "fusion.2" } } '
        'stat_metadata { key: 1 value { id: 1 name: "hlo_op" } } '
        'stat_metadata { key: 2 value { id: 2 name: "hlo_module" } }'
    )
    planes = [
        f'planes {{ id: {i + 1} name: "/device:GPU:{i}" '
        f'lines {{ id: 1 name: "Stream #13(compute)" {kernels} }} '
        f'lines {{ id: 2 name: "XLA Ops" {derived} }} {metadata} }}'
        for i in range(2)
    ]
    host = (
        'planes { id: 9 name: "/host:CPU" lines { id: 1 name: "launch" '
        + _event(1, 0, 100_000_000, _stat(1, "fusion.1") + _stat(2, "jit_f"))
        + " } "
        + metadata
        + " }"
    )
    return ProfileData.from_text_proto(" ".join([*planes, host]))


def test_gpu_kernels_are_summed_per_op_and_derived_lines_are_not_counted():
    events = op_events(_gpu_space(), "jit_f", KNOWN)
    assert {e.device for e in events} == {0, 1}
    assert sorted((e.op, e.duration_ns) for e in events if e.device == 0) == [
        ("fusion.1", 1000.0),
        ("fusion.1", 4000.0),
        ("fusion.2", 2000.0),
    ]
    times = device_times(events, repeat=1, control=frozenset())
    assert times[1].op_ns == {"fusion.1": 5000.0, "fusion.2": 2000.0}
    assert times[1].op_count == {"fusion.1": 2, "fusion.2": 1}
    assert times[0].span_ns == [7000.0]


def test_tpu_style_xla_ops_line_names_ops_by_the_event():
    space = ProfileData.from_text_proto(
        'planes { id: 1 name: "/device:TPU:0" lines { id: 1 name: "XLA Ops" '
        + _event(2, 0, 3_000_000)
        + " } "
        'event_metadata { key: 2 value { id: 2 name: "fusion.1" } } }'
    )
    (event,) = op_events(space, "jit_f", KNOWN)
    assert (event.op, event.device, event.duration_ns) == ("fusion.1", 0, 3000.0)


def _command_buffer_space() -> ProfileData:
    """As an H100 recorded jit_train_step (jax 0.11.2): every kernel of the CUDA graph
    carries hlo_op "command_buffer_1", which is no op of the program, and is named
    after its fusion or after a cuBLAS kernel."""
    stats = _stat(1, "command_buffer_1") + _stat(2, "jit_f")
    kernels = " ".join(
        [_event(1, 0, 2_000_000, stats), _event(2, 2_000_000, 20_000_000, stats)]
    )
    return ProfileData.from_text_proto(
        'planes { id: 1 name: "/device:GPU:0" '
        f'lines {{ id: 1 name: "Stream #14(Compute,Memset)" {kernels} }} '
        'event_metadata { key: 1 value { id: 1 name: "fusion.1" } } '
        'event_metadata { key: 2 value { id: 2 name: "sm90_xmma_gemm_f32f32" } } '
        'stat_metadata { key: 1 value { id: 1 name: "hlo_op" } } '
        'stat_metadata { key: 2 value { id: 2 name: "hlo_module" } } }'
    )


def test_kernels_inside_a_cuda_graph_are_found_as_grouped_not_as_ops():
    space = _command_buffer_space()
    assert op_events(space, "jit_f", KNOWN) == []
    assert grouped_ops(space, "jit_f", KNOWN) == {"command_buffer_1"}
    assert grouped_ops(space, "jit_other", KNOWN) == set()
    assert grouped_ops(_gpu_space(), "jit_f", KNOWN) == set()


def test_the_build_without_command_buffers_compiles_the_same_program():
    # the option is XLA GPU's; every backend accepts it, so the fallback cannot fail
    lowered = jax.jit(lambda a: jnp.tanh(a @ a).sum()).lower(jnp.ones((8, 8)))
    plain = compile_lowered(lowered, COMMAND_BUFFERS_OFF)
    assert float(plain(jnp.ones((8, 8)))) == float(lowered.compile()(jnp.ones((8, 8))))


def _ev(op: str, start: float, duration: float, run: int | None = None) -> OpEvent:
    return OpEvent(op=op, device=0, run=run, start_ns=start, duration_ns=duration)


def test_runs_without_run_ids_split_at_the_widest_gaps():
    events = [
        _ev("fusion.1", 0, 10),
        _ev("fusion.2", 12, 5),
        _ev("fusion.1", 1000, 10),
        _ev("fusion.2", 1011, 6),
        _ev("fusion.1", 5000, 8),
    ]
    times = device_times(events, repeat=3, control=frozenset())
    assert times[0].runs == 3
    assert times[0].span_ns == [17.0, 17.0, 8.0]
    assert times[0].op_count == {"fusion.1": 3, "fusion.2": 2}


def test_a_loop_keeps_only_its_own_time():
    events = [
        _ev("while.3", 0, 100, run=1),
        _ev("fusion.1", 10, 30, run=1),
        _ev("fusion.1", 50, 30, run=1),
        _ev("copy.4", 120, 5, run=1),
    ]
    times = device_times(events, repeat=1, control=frozenset({"while.3"}))
    assert times[0].op_ns == {"while.3": 40.0, "fusion.1": 60.0, "copy.4": 5.0}
    assert times[0].op_count["fusion.1"] == 2


def _facts(fn, *args) -> ModuleFacts:
    lowered = jax.jit(fn).lower(*args)
    return ModuleFacts(optimized_view(lowered, compile_lowered(lowered)))


def test_estimated_flops_match_xla_cost_analysis():
    a = programs.square(256)
    lowered = jax.jit(programs.matmul_then_elementwise).lower(a, a)
    compiled = compile_lowered(lowered)
    facts = ModuleFacts(optimized_view(lowered, compiled))
    top = [f for f in facts.ops.values() if f.op.fusion is None]
    flops = sum(op_cost(f, facts).flops for f in top)
    transcendentals = sum(op_cost(f, facts).transcendentals for f in top)
    xla = compiled.cost_analysis()
    xla = xla[0] if isinstance(xla, list) else xla
    assert flops == pytest.approx(xla["flops"], rel=0.01)
    assert transcendentals == pytest.approx(xla["transcendentals"], rel=0.01)


def test_fusion_members_and_their_weights():
    facts = _facts(programs.matmul_then_elementwise, *[programs.square(128)] * 2)
    fusions = [f for f in facts.ops.values() if f.op.opcode == "fusion"]
    members = {m.op.opcode for f in fusions for m in facts.members(f.op.name)}
    assert "dot" in members and "tanh" in members
    dot = next(
        m for f in fusions for m in facts.members(f.op.name) if m.op.opcode == "dot"
    )
    tanh = next(
        m for f in fusions for m in facts.members(f.op.name) if m.op.opcode == "tanh"
    )
    assert op_cost(dot, facts).weight > 10 * op_cost(tanh, facts).weight > 0
    assert dot.line is not None and dot.line.line == programs.line_of(
        programs.matmul_then_elementwise, "matmul"
    )


def test_module_facts_read_operands_roots_and_calls():
    facts = _facts(lambda x: jnp.sin(x).sum(), jnp.ones(8))
    reduce_like = [f for f in facts.ops.values() if f.op.opcode == "reduce"]
    assert reduce_like and reduce_like[0].operands
    assert any(f.is_root for f in facts.ops.values())
    assert facts.module_name.startswith("jit_")


def test_an_op_outside_loops_runs_once_however_many_kernels_it_launched():
    # On an H100, each cuBLAS custom-call launched two kernels: two events, one run.
    h0, xs, w = programs.scan_rnn()[1]
    facts = _facts(programs.rnn, h0, xs, w)
    in_entry = next(
        f
        for f in facts.ops.values()
        if f.op.computation == facts.entry
        and f.op.opcode not in ("parameter", "tuple")
        and f.op.opcode != "while"
        and f.line is not None
    )
    in_body = next(
        f for f in facts.ops.values() if f.op.computation != facts.entry and f.line
    )
    names = (in_entry.op.name, in_body.op.name)
    times = DeviceTimes(
        runs=1, op_ns=dict.fromkeys(names, 1000.0), op_count=dict.fromkeys(names, 2)
    )
    ops = {op.name: op for op in attribute(facts, {0: times}, lambda f, n: "").ops}
    assert ops[in_entry.op.name].count == 1
    assert ops[in_body.op.name].count == 2
