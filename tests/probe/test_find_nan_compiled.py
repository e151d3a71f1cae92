"""js.find_nan(f, mode="compiled"): the first NaN of the real compiled program, at
the user's line, in both passes, in loops and on the device that made it; and the
same answer as the interpreted hunt."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope._stepper.values import NanFinding

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("library", ["nnx", "linen", "equinox"])
@pytest.mark.parametrize(
    ("shift", "zero_row", "marker", "phase"),
    [(-1.0, False, "FORWARD", "forward"), (1.0, True, "BACKWARD", "backward")],
)
def test_a_nan_in_a_layer_of_a_train_step_is_found_at_the_users_line_in_both_modes(
    libs, library, shift, zero_row, marker, phase
):
    step, args = libs.CASES[library](shift, zero_row)
    compiled = js.find_nan(step, mode="compiled")(*args)
    step, args = libs.CASES[library](shift, zero_row)
    interpreted = js.find_nan(step)(*args)
    line = libs.marker_line(marker)
    for found in (compiled, interpreted):
        assert isinstance(found, NanFinding)
        assert found.kind == "nan"
        assert found.source.file.endswith("programs.py") and found.source.line == line
    assert compiled.phase == phase
    assert compiled.eqn.path == interpreted.eqn.path
    assert compiled.primitive == interpreted.primitive
    assert any(s.nan_count for s in compiled.outputs)
    assert not any(s.nan_count for s in compiled.inputs)


@pytest.mark.parametrize("library", ["nnx", "linen", "equinox"])
def test_a_finite_train_step_has_no_finding(libs, library):
    step, args = libs.CASES[library](1.0, False)
    assert js.find_nan(step, mode="compiled")(*args) is None


def test_a_nan_in_a_scan_names_its_iteration_as_the_interpreted_hunt_does():
    def f(xs):
        def body(c, x):
            z = jnp.sqrt(c + x)
            return z, z * 3

        return jax.lax.scan(body, 1.0, xs)

    xs = jnp.array([1.0, 1.0, -10.0, 1.0])
    compiled = js.find_nan(f, mode="compiled")(xs)
    interpreted = js.find_nan(f)(xs)
    assert compiled.primitive == "sqrt" == interpreted.primitive
    assert [fr.iteration for fr in compiled.frames] == [None, 2]
    assert [fr.iteration for fr in interpreted.frames] == [None, 2]
    assert [fr.label for fr in compiled.frames] == [
        fr.label for fr in interpreted.frames
    ]


def test_a_nan_in_a_while_loop_names_the_first_iteration_that_made_it():
    def f(x):
        def body(c):
            i, v = c
            return i + 1, jnp.log(v - 0.7)

        return jax.lax.while_loop(lambda c: c[0] < 6, body, (0, x))[1]

    x = jnp.full(3, 100.0)  # log(99.3), log(3.9), log(0.66), then a NaN
    compiled = js.find_nan(f, mode="compiled")(x)
    interpreted = js.find_nan(f)(x)
    assert compiled.primitive == "log" and compiled.frames[-1].iteration == 3
    assert interpreted.frames[-1].iteration == 3


def test_a_nan_on_one_device_of_a_shard_map_names_the_device():
    mesh = jax.make_mesh((8,), ("d",))

    @jax.jit
    def f(x):
        def local(block):
            return jnp.log(block) * 2

        return jax.shard_map(local, mesh=mesh, in_specs=P("d"), out_specs=P("d"))(x)

    x = jax.device_put(
        jnp.arange(1.0, 9.0).at[5].set(-1.0), NamedSharding(mesh, P("d"))
    )
    found = js.find_nan(f, mode="compiled")(x)
    assert found.primitive == "log" and found.kind == "nan"
    assert found.device is not None and found.device.startswith("device 5 ")
    assert "d=8" in found.device
    assert found.inputs[0].min == -1.0
    text = str(found)
    assert "device 5" in text and "forward pass" in text
    clean = jax.device_put(jnp.arange(1.0, 9.0), NamedSharding(mesh, P("d")))
    assert js.find_nan(f, mode="compiled")(clean) is None


def test_finite_programs_of_every_kind_have_no_finding(stepper_programs):
    p = stepper_programs
    key = jax.random.key(0)
    params = p.mlp_init(key)
    x, y = jnp.ones((2, 4)), jax.nn.one_hot(jnp.array([0, 1]), 3)
    rnn_params = {"wh": jnp.eye(3) * 0.5, "wx": jnp.ones((2, 3)) * 0.1}
    calls = [
        (p.train_step, (params, x, y)),
        (p.rnn, (rnn_params, jnp.ones((5, 2)))),
        (p.newton_sqrt, (jnp.float32(2.0),)),
        (p.branchy, (jnp.ones(3), 1)),
        (jax.grad(p.custom_fn), (jnp.ones(3),)),
    ]
    for fn, args in calls:
        assert js.find_nan(fn, mode="compiled")(*args) is None


def test_an_inf_that_reaches_the_outputs_is_found_and_one_discarded_is_not():
    def kept(x):
        return jnp.exp(x * 100.0)

    def discarded(x):
        return jnp.where(x > 0, jnp.log(x), 0.0)

    x = jnp.array([1.0, 10.0])
    found = js.find_nan(kept, mode="compiled")(x)
    assert found.kind == "inf" and found.primitive == "exp"
    assert js.find_nan(discarded, mode="compiled")(jnp.array([0.0, 1.0])) is None


def test_a_nan_already_in_an_argument_is_named_by_its_path():
    found = js.find_nan(lambda p: p["w"] * 2, mode="compiled")(
        {"w": jnp.array([np.nan])}
    )
    assert isinstance(found, js.NanInInput) and found.path == "p['w']"


def test_a_bad_mode_is_one_clear_line():
    with pytest.raises(
        js.InvalidCallError, match="mode must be 'interpreted' or 'compiled'"
    ):
        js.find_nan(jnp.sin, mode="fast")


def test_the_users_jit_cache_is_untouched():
    @jax.jit
    def f(x):
        return jnp.log(x)

    f(jnp.ones(2))
    before = f._cache_size()
    assert js.find_nan(f, mode="compiled")(jnp.array([-1.0, 1.0])).primitive == "log"
    assert f._cache_size() == before


def test_an_operand_that_is_an_argument_is_named_by_its_path(libs):
    from flax import nnx

    class LogScaled(nnx.Module):
        def __init__(self, rngs: nnx.Rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs)
            self.log_base = nnx.Param(jnp.array([1.0, -1.0, 2.0]))

        def __call__(self, x):
            return self.linear(x) * jnp.log(self.log_base[...])

    @nnx.jit
    def forward(model, x):
        return model(x).sum()

    found = js.find_nan(forward, mode="compiled")(
        LogScaled(nnx.Rngs(0)), jnp.ones((2, 3))
    )
    assert found.primitive == "log"
    assert [v.user_name for v in found.inputs] == ["model.log_base"]


def test_a_nan_inside_a_cond_branch_is_found_inside_the_branch():
    def f(x):
        return jax.lax.cond(x.sum() > 0, lambda v: jnp.log(v - 5.0), lambda v: v, x)

    found = js.find_nan(f, mode="compiled")(jnp.ones(3))
    assert found.primitive == "log"


def _whole_program_compiles(fn, *args) -> tuple[object, int]:
    """``js.find_nan(fn, mode="compiled")(*args)`` and how many of the programs XLA
    compiled for it take every argument (the program, not one equation re-run)."""
    import logging

    shapes = {f"{a.dtype}{list(a.shape)}".replace(" ", "") for a in args}
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Collect(logging.DEBUG)
    logger = logging.getLogger("jax")
    logger.addHandler(handler)
    try:
        with jax.log_compiles():
            found = js.find_nan(fn, mode="compiled")(*args)
    finally:
        logger.removeHandler(handler)
    compiles = [line for line in lines if line.startswith("Compiling ")]
    whole = [
        line for line in compiles if all(s in line.replace(" ", "") for s in shapes)
    ]
    return found, len(whole)


def test_a_hunt_compiles_the_program_twice_and_a_finite_program_once():
    def loss(w, b, x):
        h = jnp.tanh(x @ w + b)
        return jnp.log(h.sum(axis=1) + 1.0).mean()

    w = jnp.full((3, 5), 0.5)
    x = jnp.ones((4, 3))
    found, n = _whole_program_compiles(loss, w, jnp.full((5,), -3.0), x)
    assert found.primitive == "log"
    assert n == 2  # the flagged run, then the window: no plain run first
    found, n = _whole_program_compiles(loss, w, jnp.zeros((5,)), x)
    assert found is None
    assert n == 1  # the flagged run's outputs are finite: done


def test_values_too_big_to_leave_the_program_are_flagged_inside_it():
    # 600 x 600 float32 values are over the size whose flags the host reads
    def f(a, b):
        c = jnp.dot(a, b)
        return jnp.sqrt(c - 700.0)

    a = jnp.ones((600, 600))
    found = js.find_nan(f, mode="compiled")(a, a)
    assert found.primitive == "sqrt" and found.kind == "nan"
    assert found.inputs[0].shape == (600, 600)
    assert js.find_nan(f, mode="compiled")(a, a * 2.0) is None


def test_past_the_bytes_the_host_reads_flags_are_reduced_in_the_program(
    monkeypatch,
):
    from jaxscope._probe import nan

    monkeypatch.setattr(nan, "_RAW_TOTAL", 3 << 20)  # three 1 MiB values

    def f(w, x, shift):
        for _ in range(40):  # 20 chunks, each keeping a 1 MiB product
            x = jnp.tanh(x @ w)
            x = x * 1.0 + 0.0
        return jnp.log(x - shift)

    w, x = jnp.eye(512) * 0.5, jnp.ones((512, 512))
    found = js.find_nan(f, mode="compiled")(w, x, jnp.float32(2.0))
    assert found.primitive == "log" and found.kind == "nan"
    assert js.find_nan(f, mode="compiled")(w, x, jnp.float32(-2.0)) is None
