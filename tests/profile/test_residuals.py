"""js.residuals on real differentiated programs: the same residuals, on the same
lines, as JAX's own print_saved_residuals; checkpoint policies and what they
recompute; the compiled program's residuals at the memory peak."""

from __future__ import annotations

import contextlib
import io
import re

import jax
import jax.numpy as jnp
import pytest
from jax.ad_checkpoint import print_saved_residuals

from jaxscope._profile.residuals import (
    ResidualsView,
    aval_bytes,
    policy_name,
    residuals,
)

from . import programs
from . import remat_programs as rp
from .programs import line_of
from .remat_programs import PROGRAMS

_JAX_ROW = re.compile(r"^(\S+) (.*?)(?: from (.+?):(\d+):\d+ \(.*\))?$")


def jax_rows(loss, *args) -> tuple[list[str], list[tuple[str, str, str, int]]]:
    """JAX's print_saved_residuals, as (shapes of arguments and constants, rows)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print_saved_residuals(loss, *args)
    inputs, rows = [], []
    for text in out.getvalue().splitlines():
        match = _JAX_ROW.match(text.strip())
        assert match is not None, text
        shape, what, file, line = match.groups()
        if what.startswith(("from the argument", "from a constant")):
            inputs.append(shape)
        else:
            rows.append((shape, what, file, int(line)))
    return sorted(inputs), sorted(rows)


def ours(view: ResidualsView) -> tuple[list[str], list[tuple[str, str, str, int]]]:
    inputs = sorted(r.shape for r in view.residuals if r.argument is not None)
    rows = sorted(
        (r.shape, r.what, r.origin.file, r.origin.line)
        for r in view.residuals
        if r.argument is None and r.origin is not None
    )
    return inputs, rows


@pytest.fixture(scope="module", params=sorted(PROGRAMS))
def program(request):
    step, args, loss, loss_args = PROGRAMS[request.param]()
    return request.param, residuals(step, compile=False)(*args), loss, loss_args


def test_same_residuals_and_lines_as_print_saved_residuals(program):
    _, view, loss, loss_args = program
    assert ours(view) == jax_rows(loss, *loss_args)
    assert view.residuals
    assert view.bytes == sum(r.bytes for r in view.residuals if r.argument is None)


def test_checkpoint_policies_and_what_they_recompute(program):
    name, view, _, _ = program
    expected = {
        "jax_remat": ("save_only_these_names('h')",),
        "nnx_remat": ("save_only_these_names('up')",),
        "eqx_remat": ("nothing_saveable",),
        "linen_remat": ("nothing_saveable",),
    }.get(name, ())
    assert view.policies == expected
    assert bool(view.recomputed) == bool(expected)
    if expected:
        assert view.recompute_flops > 0
        assert all(c.policy in expected for c in view.recomputed)


def test_remat_lines_say_saved_or_recomputed():
    step, args, _, _ = rp.jax_remat()
    view = residuals(step, compile=False)(*args)
    named = view.by_line[(rp.__file__, line_of(rp.layer, "named"))]
    assert [r.name for r in named.residuals] == ["h", "h"]
    assert named.recomputed == 0
    sin = view.by_line[(rp.__file__, line_of(rp.layer, "sin"))]
    assert not sin.residuals and sin.recomputed > 0
    # x @ w (2·4·8·8) and sin, twice: once per checkpointed call
    assert sin.recompute_flops == 2 * (2 * 4 * 8 * 8 + 4 * 8)


def test_residuals_stacked_by_a_scan_are_on_the_body_line():
    step, args, _, _ = rp.scan_layers()
    view = residuals(step, compile=False)(*args)
    body = view.by_line[(rp.__file__, line_of(rp.scan_loss, "scanned"))]
    assert body.residuals and all(r.stacked for r in body.residuals)
    assert all(r.shape.startswith("f32[6,") for r in body.residuals)


def test_optax_step_residuals_live_at_the_peak():
    fn, args = programs.optax_mlp()
    view = residuals(fn)(*args)
    relu = view.by_line[(programs.__file__, line_of(programs.optax_predict, "relu"))]
    assert relu.bytes > 0 and relu.peak_bytes
    assert view.memory is not None
    assert view.memory.kinds["residual"] > 0
    # a subset of what print_saved_residuals reports for the loss: JAX's own list
    # also has relu's zeros, which the jitted step's backward pass never reads
    params, _, x, y = args
    inputs, rows = jax_rows(lambda p: programs.optax_loss(p, x, y), params)
    mine_inputs, mine_rows = ours(view)
    assert set(mine_rows) <= set(rows) and len(rows) - len(mine_rows) <= 1
    assert mine_inputs == inputs
    text = str(view)
    assert "saved for the backward pass" in text and "optax_predict" not in text


def test_a_loss_is_differentiated_as_print_saved_residuals_does():
    # no gradient inside: every argument differentiated, as JAX's own tool does
    params, x = rp.plain_grad()[1]
    view = residuals(rp.tanh_loss, compile=False)(params, x)
    assert view.differentiated
    assert ours(view) == jax_rows(rp.tanh_loss, params, x)
    assert {r.argument for r in view.residuals if r.argument} == {
        "params['w1']",
        "params['w2']",
        "x",
    }
    assert "differentiated here with respect to every argument" in str(view)


def test_no_backward_pass_no_residuals():
    fn, args = programs.transformer()
    view = residuals(lambda p, x: jnp.argmax(fn(p, x)), compile=False)(*args)
    assert view.residuals == [] and view.lines == [] and view.recomputed == []
    assert not view.differentiated
    assert "no backward pass found" in str(view)


def test_small_helpers():
    assert aval_bytes("f32[4,8]") == 128
    assert aval_bytes("bf16[2]") == 4 and aval_bytes("bool[3]") == 3
    assert aval_bytes("f32[]") == 4
    assert policy_name(None) == "nothing_saveable"
    assert policy_name("<function dots_saveable at 0x1>") == "dots_saveable"
    assert policy_name(repr(names.dots_saveable)) == "dots_saveable"
    assert policy_name(repr(names.save_any_names_but_these("a"))) == (
        "save_any_names_but_these('a')"
    )
    assert (
        policy_name("SaveOnlyTheseNames(saveable_names=frozenset({'b', 'a'}))")
        == "save_only_these_names('a', 'b')"
    )
    assert jax.__version__


names = jax.checkpoint_policies


def kinds(view: ResidualsView) -> list[str]:
    return sorted(f.kind for f in view.findings)


def test_no_policy_finding_on_correct_programs(program):
    _, view, _, _ = program
    assert view.findings == []


def test_a_checkpoint_name_no_policy_refers_to():
    step, args = rp.remat_step_with(names.dots_saveable)
    view = residuals(step, compile=False)(*args)
    assert kinds(view) == ["unused_checkpoint_name"]
    finding = view.findings[0]
    assert finding.source is not None
    assert finding.source.line == line_of(rp.layer, "named")
    assert "save_only_these_names('h')" in finding.fix
    # the fix, applied
    step, args = rp.remat_step_with(names.save_only_these_names("h"))
    assert residuals(step, compile=False)(*args).findings == []


def test_a_policy_name_the_program_never_produces():
    step, args = rp.remat_step_with(names.save_only_these_names("hidden"))
    view = residuals(step, compile=False)(*args)
    assert kinds(view) == ["policy_name_not_produced", "unused_checkpoint_name"]
    missing = next(f for f in view.findings if f.kind == "policy_name_not_produced")
    assert "'hidden'" in missing.message and "names produced: 'h'" in missing.message
    # an offload policy goes by names too
    offload = names.save_and_offload_only_these_names(
        names_which_can_be_saved=[],
        names_which_can_be_offloaded=["hidden"],
        offload_src="device",
        offload_dst="pinned_host",
    )
    step, args = rp.remat_step_with(offload)
    found = residuals(step, compile=False)(*args).findings
    assert any("offloads 'hidden'" in f.message for f in found)
    step, args = rp.remat_step_with(names.save_only_these_names("h"))
    assert residuals(step, compile=False)(*args).findings == []


def test_a_checkpoint_that_saves_everything():
    step, args = rp.remat_step_with(names.everything_saveable)
    view = residuals(step, compile=False)(*args)
    assert "checkpoint_saves_everything" in kinds(view)
    assert not view.recomputed
    step, args = rp.remat_step_with(names.save_only_these_names("h"))
    fixed = residuals(step, compile=False)(*args)
    assert fixed.findings == [] and fixed.recomputed


def test_stacked_scan_residuals_that_dominate_the_peak():
    step, args = rp.deep_scan(checkpointed=False)
    view = residuals(step)(*args)
    assert kinds(view) == ["stacked_residuals"]
    finding = view.findings[0]
    assert "jax.checkpoint(body)" in finding.fix
    assert finding.bytes >= 0.5 * view.memory.peak_bytes
    # the fix, applied: the body checkpointed
    step, args = rp.deep_scan(checkpointed=True)
    fixed = residuals(step)(*args)
    assert fixed.findings == []
    assert fixed.memory.peak_bytes < view.memory.peak_bytes


def test_a_policy_sweep_compiles_each_policy_and_ranks_them():
    from jaxscope._profile.residuals import memory_policies

    def make(policy):
        return rp.remat_step_with(policy)[0]

    _, args = rp.remat_step_with(None)
    candidates = [
        None,
        names.dots_saveable,
        names.everything_saveable,
        names.save_only_these_names("h"),
    ]
    rows = memory_policies(make, candidates)(*args)
    by_name = {r.policy: r for r in rows}
    assert set(by_name) == {
        "nothing_saveable",
        "dots_saveable",
        "everything_saveable",
        "save_only_these_names('h')",
    }
    assert by_name["everything_saveable"].recompute_flops == 0
    assert (
        by_name["nothing_saveable"].recompute_flops
        > by_name["save_only_these_names('h')"].recompute_flops
    )
    assert [r.recompute_flops for r in rows] == sorted(r.recompute_flops for r in rows)
    assert all(r.fits is None for r in rows)
    # a target: what does not fit goes last, the cheapest that fits first
    smallest = min(r.peak_bytes for r in rows)
    fitted = memory_policies(make, candidates, fits=smallest)(*args)
    assert fitted[0].fits and fitted[0].peak_bytes == smallest
    assert all(r.fits == (r.peak_bytes <= smallest) for r in fitted)


def test_a_policy_sweep_rejects_bad_input_in_one_line():
    from jaxscope._exceptions import InvalidCallError
    from jaxscope._profile.residuals import memory_policies

    with pytest.raises(InvalidCallError, match="builds the step from a policy"):
        memory_policies(3, [None])  # type: ignore[arg-type]
    with pytest.raises(InvalidCallError, match="fits"):
        memory_policies(lambda p: p, [None], fits=-1)
