"""js.profile on real programs: time goes to the right lines, adds up, and is told
apart per loop iteration, per device and per kind of op."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxscope._exceptions import InvalidCallError, TraceError
from jaxscope._profile.profile import ProfileView, profile

from . import programs
from .programs import line_of


def test_matmul_line_is_first_and_lines_add_up_to_the_run():
    a = programs.square()
    view = profile(programs.matmul_then_elementwise, repeat=5)(a, a)
    matmul = line_of(programs.matmul_then_elementwise, "matmul")
    elementwise = line_of(programs.matmul_then_elementwise, "elementwise")
    first, *rest = view.lines
    assert first.line == matmul and first.code == "y = a @ b  # <- matmul"
    assert first.share > 0.5
    assert elementwise in {line.line for line in rest}
    assert first.flops == pytest.approx(2 * 1024**3, rel=0.01)
    summed = sum(line.time for line in view.lines) + view.unattributed
    assert summed == pytest.approx(view.total)
    assert summed == pytest.approx(view.wall, rel=0.10)


def test_matmul_beats_an_independent_elementwise_op_by_measurement():
    a = programs.square()
    view = profile(programs.matmul_and_elementwise, repeat=3)(a, a, a)
    matmul = view.by_line[
        (programs.__file__, line_of(programs.matmul_and_elementwise, "matmul"))
    ]
    elementwise = view.by_line[
        (programs.__file__, line_of(programs.matmul_and_elementwise, "elementwise"))
    ]
    assert view.lines[0] is matmul
    assert matmul.time > elementwise.time > 0
    # each ran as its own op: no split by estimate
    assert len(view.ops_at(matmul.file, matmul.line)) == 1


def test_mlp_train_step_lines_functions_and_donation(mlp_profile: ProfileView):
    view = mlp_profile
    file = view.lines[0].file
    assert file.endswith("programs.py")
    lines = {line.line for line in view.lines}
    for marker in ("hidden", "output", "loss"):
        assert line_of(programs.mlp_loss, marker) in lines, marker
    assert line_of(programs.mlp_step, "update") in lines
    assert all(line.count == 1 for line in view.lines)
    hidden = view.by_line[(file, line_of(programs.mlp_loss, "hidden"))]
    assert hidden.flops > 0 and hidden.bytes_accessed > 0 and hidden.ops
    assert hidden.code == 'h = jnp.tanh(x @ params["w1"] + params["b1"])  # <- hidden'
    # the user's call tree: the test's frame -> mlp_step -> mlp_loss
    names = [node.function for _, node in view.functions.walk()]
    assert "mlp_step" in names and "mlp_loss" in names
    step = next(n for _, n in view.functions.walk() if n.function == "mlp_step")
    loss = next(n for n in step.children if n.function == "mlp_loss")
    assert 0 < loss.time <= step.time <= view.total + 1e-12
    assert loss.share == pytest.approx(loss.time / view.total)
    assert len(view.run_times) == 3  # donated params were copied for every run


def test_scan_body_lines_count_iterations(rnn_profile: ProfileView):
    view = rnn_profile
    file = view.lines[0].file
    cell = view.by_line[(file, line_of(programs.rnn_cell, "cell"))]
    assert cell.count == programs.STEPS
    assert cell.per_iteration == pytest.approx(cell.time / programs.STEPS)
    assert view.lines[0] is cell
    assert view.iterations
    assert (
        view.by_line[(file, line_of(programs.rnn, "readout"))].count == programs.STEPS
    )
    body = [n for _, n in view.functions.walk() if n.function.endswith("body")]
    assert body and body[0].children[0].function == "rnn_cell"


def test_transformer_block_attention_and_mlp_lines(transformer_profile: ProfileView):
    view = transformer_profile
    file = view.lines[0].file
    for fn, marker in (
        (programs.attention, "qkv"),
        (programs.attention, "scores"),
        (programs.attention, "softmax"),
        (programs.block, "up"),
        (programs.block, "down"),
    ):
        line = view.by_line.get((file, line_of(fn, marker)))
        assert line is not None and line.time > 0, marker
    top = view.top(3)
    assert [spot.kind for spot in top] == ["line"] * 3
    assert top[0].time >= top[1].time >= top[2].time


def test_sharded_step_per_device_and_collectives(sharded_profile: ProfileView):
    view = sharded_profile
    assert view.devices == tuple(range(8))
    assert set(view.device_totals) == set(range(8))
    collectives = [op for op in view.ops if op.kind == "collective"]
    assert collectives and all(op.opcode.startswith("all-reduce") for op in collectives)
    rows = view.top(20)
    assert any(spot.kind == "collective" for spot in rows)
    one = view.for_device(3)
    assert one.devices_shown == (3,)
    assert one.total == pytest.approx(view.device_totals[3])
    assert {line.key for line in one.lines} <= {line.key for line in view.lines}
    with pytest.raises(InvalidCallError, match="device 9"):
        view.for_device(9)


def test_library_train_steps():
    pytest.importorskip("flax")
    pytest.importorskip("equinox")
    from ..libraries import programs as library

    for name in ("nnx_cnn", "eqx_gru"):
        fn, args = library.PROGRAMS[name]()
        view = profile(fn, repeat=2)(*args)
        files = {line.file for line in view.lines}
        assert any(f.endswith("libraries/programs.py") for f in files), name
        assert not any("site-packages" in f for f in files), name
        assert view.total > 0


def test_arguments_are_checked_before_anything_runs():
    with pytest.raises(InvalidCallError, match="repeat must be an int >= 1"):
        profile(jnp.sin, repeat=0)
    with pytest.raises(InvalidCallError, match="expects a callable"):
        profile(3)  # type: ignore[arg-type]

    def bad(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TraceError):
        profile(bad)(jnp.ones(()))


def test_a_running_trace_is_reported_not_clobbered(tmp_path):
    from jaxscope._exceptions import JaxscopeError

    jax.profiler.start_trace(str(tmp_path))
    try:
        with pytest.raises(JaxscopeError, match="stop the running trace"):
            profile(jnp.sin)(jnp.ones(4))
    finally:
        jax.profiler.stop_trace()


def test_a_program_without_user_lines_still_profiles():
    view = profile(lambda x: x, repeat=1)(jnp.ones(3))
    assert view.lines == []
    assert view.unattributed == pytest.approx(view.total)
    assert "(no source line)" in str(view)
