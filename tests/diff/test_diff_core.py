"""``js.diff`` on real programs: each change a user makes shows at its own line, and
the same program twice shows nothing."""

from __future__ import annotations

import functools
import gc
import itertools
import weakref

import jax
import jax.numpy as jnp
import pytest
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope._diff.align import align


def _line(d, fn, marker, line_of):
    found = d.line(line_of(fn, marker))
    assert found is not None, [line.where for line in d.lines]
    return found


# ------------------------------------------------------------------ alignment


def _lcs_length(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
            )
    return table[len(a)][len(b)]


def test_alignment_is_a_longest_common_subsequence():
    import random

    rng = random.Random(0)
    for _ in range(400):
        a = [rng.randint(0, 4) for _ in range(rng.randint(0, 25))]
        b = [rng.randint(0, 4) for _ in range(rng.randint(0, 25))]
        pairs = align(a, b, max_edits=1000)
        assert all(a[i] == b[j] for i, j in pairs)
        assert all(p < q for (p, _), (q, _) in itertools.pairwise(pairs))
        assert all(p < q for (_, p), (_, q) in itertools.pairwise(pairs))
        assert len(pairs) == _lcs_length(a, b)


def test_alignment_past_its_edit_bound_still_pairs_only_equal_items():
    a = list(range(300)) + [7] * 50
    b = [x for x in range(300) if x % 3] + list(range(1000, 1100)) + [7] * 60
    pairs = align(a, b, max_edits=20)
    assert all(a[i] == b[j] for i, j in pairs)
    assert all(p < q for (p, _), (q, _) in itertools.pairwise(pairs))
    assert len(pairs) >= 200 + 50  # the unique items anchor, the tail aligns


# ------------------------------------------------------------------ identical programs


def mlp(w, x):
    h = jnp.tanh(x @ w)
    return (h @ w.T).sum()


def test_the_same_call_twice_differs_in_nothing_at_every_level():
    w, x = jnp.ones((16, 16)), jnp.ones((4, 16))
    d = js.diff(mlp)((w, x), (w, x))
    assert d.empty
    assert d.summary() == ["no differences"]
    assert "no differences" in str(d)
    assert set(d.levels) == {"jaxpr", "hlo"}


def test_a_renamed_copy_defined_elsewhere_pairs_line_by_line():
    def mlp_copy(weights, inputs):
        h = jnp.tanh(inputs @ weights)
        return (h @ weights.T).sum()

    w, x = jnp.ones((16, 16)), jnp.ones((4, 16))
    d = js.diff(mlp, mlp_copy, hlo=False)(w, x)
    assert d.empty, d.summary()
    assert all(line.status == "same" for line in d.lines)


# ------------------------------------------------------------------ real changes


def step(p, g, lr):
    update = lr * g  # <- lr
    return p - update


def test_learning_rate_from_python_float_to_array_shows_the_weak_type(line_of):
    p = g = jnp.ones((8, 8))
    d = js.diff(step, hlo=False)((p, g, 0.1), (p, g, jnp.asarray(0.1, jnp.float32)))
    assert [(c.kind, c.path) for c in d.causes] == [("weak_type", "lr")]
    line = _line(d, step, "# <- lr", line_of)
    assert [(c.kind, c.primitive) for c in line.changes] == [
        ("removed", "convert_element_type")
    ]
    assert [x.where for x in d.changed_lines] == [line.where]
    assert d.summary()[0] == "cause: weak_type lr: f32[] (weak: Python scalar) → f32[]"


def bf16_mlp(w, x):
    h = jnp.tanh(x @ w)  # <- first matmul
    return (h @ w.T).sum()


def test_bf16_to_f32_params_changes_the_matmul_dtype_and_its_flops(line_of):
    args = (jnp.ones((16, 16), jnp.bfloat16), jnp.ones((4, 16), jnp.bfloat16))
    d = js.diff(bf16_mlp)(args, (jnp.ones((16, 16)), jnp.ones((4, 16))))
    assert {(c.kind, c.path, c.before, c.after) for c in d.causes} == {
        ("dtype", "w", "bf16", "f32"),
        ("dtype", "x", "bf16", "f32"),
    }
    line = _line(d, bf16_mlp, "# <- first matmul", line_of)
    dot = next(c for c in line.changes if c.primitive == "dot_general")
    assert dot.kind == "changed"
    assert "result dtype: bf16 → f32" in dot.details
    assert "dot_general now f32 instead of bf16" in line.summary()
    assert line.numbers["bytes"][0] < line.numbers["bytes"][1]


def _remat_grad(policy):
    def loss(w, x):
        @functools.partial(jax.checkpoint, policy=policy)
        def block(x):
            h = jnp.sin(x @ w)  # <- remat body
            return jnp.sin(h @ w)

        return block(x).sum()  # <- remat call

    return jax.grad(loss), loss


def test_a_changed_remat_policy_moves_residuals_out_of_the_recompute(line_of):
    policies = jax.checkpoint_policies
    before, loss = _remat_grad(policies.nothing_saveable)
    after, _ = _remat_grad(policies.everything_saveable)
    w, x = jnp.ones((32, 32)), jnp.ones((8, 32))
    d = js.diff(before, after, hlo=False)(w, x)
    call = _line(d, loss, "# <- remat call", line_of)
    remat = next(c for c in call.changes if c.kind == "changed")
    assert "policy: <nothing_saveable> → <everything_saveable>" in remat.details
    body = _line(d, loss, "# <- remat body", line_of)
    # the forward matmul and sin are no longer recomputed inside the remat
    removed = {c.before.primitive for c in body.changes if c.kind == "removed"}
    assert {"dot_general", "sin"} <= removed
    assert any(c.kind == "changed" and c.primitive == "cos" for c in body.changes)


@pytest.fixture(scope="module")
def mesh():
    if len(jax.devices()) < 8:
        pytest.fail("XLA_FLAGS=--xla_force_host_platform_device_count=8 is not set")
    return jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


def test_a_removed_sharding_annotation_shows_the_new_collective_at_its_line(
    mesh, line_of
):
    def annotated(x, w):
        w = jax.lax.with_sharding_constraint(w, NamedSharding(mesh, P(None, "x")))
        h = jnp.tanh(x @ w)
        return h.sum(axis=0)  # <- reduce

    def plain(x, w):
        h = jnp.tanh(x @ w)
        return h.sum(axis=0)  # <- reduce

    x = jax.device_put(jnp.ones((64, 256)), NamedSharding(mesh, P("x", None)))
    w = jax.device_put(jnp.ones((256, 256)), NamedSharding(mesh, P("x", None)))
    d = js.diff(jax.jit(annotated), jax.jit(plain))(x, w)
    reduce = _line(d, plain, "# <- reduce", line_of)
    assert reduce.collectives_added == {"all-reduce": 1}
    assert "+1 all-reduce" in reduce.summary()
    removed = [line for line in d.changed_lines if line.status == "removed"]
    assert any("with_sharding_constraint" in line.code for line in removed)
    assert d.totals["collectives"][0] is not None


def test_two_program_sharding_views_compare_collectives_by_line(mesh, line_of):
    def annotated(x):
        x = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(None, None)))
        return jnp.sin(x).sum(axis=0)  # <- sum

    def plain(x):
        return jnp.sin(x).sum(axis=0)  # <- sum

    x = jax.device_put(jnp.ones((64, 8)), NamedSharding(mesh, P("x", None)))
    a = js.shardings(jax.jit(annotated))(x)
    b = js.shardings(jax.jit(plain))(x)
    d = js.diff(a, b)
    assert d.levels == ("collectives",)
    constraint = _line(d, annotated, "with_sharding_constraint", line_of)
    assert constraint.collectives_removed == {"all-gather": 1}
    assert constraint.summary().endswith(": -1 all-gather (-2 KiB moved)")
    total = _line(d, plain, "# <- sum", line_of)
    assert total.collectives_added == {"all-reduce": 1}
    assert total.summary().endswith(": +1 all-reduce (+32 B moved)")
    assert js.diff(a, js.shardings(jax.jit(annotated))(x)).empty


def big_product(x):
    y = jnp.sin(x) @ x.T  # <- product
    return y.sum()


def test_two_memory_views_compare_the_peak_and_its_lines(line_of):
    a = js.memory(big_product)(jnp.ones((64, 16)))
    b = js.memory(big_product)(jnp.ones((512, 16)))
    d = js.diff(a, b)
    assert set(d.levels) == {"hlo", "memory"}
    peak = d.totals["peak_bytes"]
    assert peak == (a.peak_bytes, b.peak_bytes) and peak[0] < peak[1]
    line = _line(d, big_product, "# <- product", line_of)
    assert line.numbers["peak_bytes"][0] < line.numbers["peak_bytes"][1]
    assert "at peak" in line.summary()


class MLP(nnx.Module):
    def __init__(self, n_layers: int, rngs: nnx.Rngs):
        self.layers = nnx.List([nnx.Linear(8, 8, rngs=rngs) for _ in range(n_layers)])

    def __call__(self, x):
        for layer in self.layers:
            x = nnx.relu(layer(x))  # <- layer
        return x


@nnx.jit
def forward(model, x):
    return model(x).sum()


def test_an_nnx_model_with_one_more_layer_adds_one_block_and_aligns_the_rest(
    line_of,
):
    x = jnp.ones((2, 8))
    small, large = MLP(2, nnx.Rngs(0)), MLP(3, nnx.Rngs(0))
    one_layer = len(js.jaxpr(forward)(MLP(1, nnx.Rngs(0)), x).eqns)
    two_layers = len(js.jaxpr(forward)(small, x).eqns)
    d = js.diff(forward, hlo=False)((small, x), (large, x))
    layer = _line(d, MLP.__call__, "# <- layer", line_of)
    assert {c.kind for c in layer.changes} == {"added"}
    assert len(layer.changes) == two_layers - one_layer
    assert [line.where for line in d.changed_lines] == [layer.where]
    assert [c.kind for c in d.causes] == ["tree_structure"]


def unrolled(x, n):
    for _ in range(n):
        x = jnp.sin(x) * 0.5  # <- loop body
    return x


def test_a_python_loop_of_10_then_20_iterations_grows_its_line(line_of):
    x = jnp.ones(4)
    d = js.diff(unrolled, static_argnums=1, hlo=False)((x, 10), (x, 20))
    assert [(c.kind, c.before, c.after) for c in d.causes] == [
        ("static_arg", "10", "20")
    ]
    body = _line(d, unrolled, "# <- loop body", line_of)
    assert body.numbers["equations"] == (20.0, 40.0)
    assert [c.kind for c in body.changes] == ["added"] * 20
    assert "+20 equations" in body.summary()


# ------------------------------------------------------------------ views and events


def test_two_jaxpr_views_word_their_input_changes_as_causes():
    a = js.jaxpr(step)(jnp.ones(3), jnp.ones(3), 0.1)
    b = js.jaxpr(step)(jnp.ones(4), jnp.ones(4), 0.1)
    d = js.diff(a, b)
    assert {(c.kind, c.path) for c in d.causes} == {("shape", "p"), ("shape", "g")}
    assert not d.empty


def test_two_hlo_views_compare_ops_and_costs():
    a = js.hlo(mlp, stage="optimized")(jnp.ones((16, 16)), jnp.ones((4, 16)))
    b = js.hlo(mlp, stage="optimized")(jnp.ones((16, 16)), jnp.ones((8, 16)))
    d = js.diff(a, b)
    assert d.levels == ("hlo",)
    flops = d.totals["flops"]
    assert flops[0] is not None and flops[1] == pytest.approx(2 * flops[0], rel=0.1)
    assert js.diff(a, a).empty


def test_recompile_event_diff_is_lazy_and_keeps_no_argument_alive():
    @jax.jit
    def train(p, lr):
        return p - lr * jnp.sin(p)

    p = jnp.ones(3)
    lr = jnp.asarray(0.1, jnp.float32)
    lr_ref = weakref.ref(lr)
    with js.watch_recompiles() as log:
        train(p, 0.1)
        train(p, lr)
    del lr
    gc.collect()
    assert lr_ref() is None  # the events hold no argument
    event = log.events[-1]
    # the watcher kept weak references to the programs JAX's caches hold, nothing more
    assert all(isinstance(ref, weakref.ref) for ref in event.programs)
    d = event.diff()
    assert d.causes == event.causes
    assert [c.primitive for line in d.changed_lines for c in line.changes] == [
        "convert_element_type"
    ]
    with pytest.raises(js.InvalidCallError, match="first compile"):
        log.events[0].diff()


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (1, 2, "js.diff: a is an int, neither a view nor a function"),
        (
            "view",
            "hlo",
            "a is a JaxprView but b is an? HloView; pass two views of the same kind",
        ),
        ("view", None, "one view given"),
        ("view", 3, "b is an int, not a view js.diff can compare"),
    ],
)
def test_bad_inputs_get_one_line_naming_the_fix(a, b, message):
    x = jnp.ones(3)
    views = {
        "view": js.jaxpr(jnp.sin)(x),
        "hlo": js.hlo(jnp.sin)(x),
    }
    a, b = views.get(a, a), views.get(b, b)
    with pytest.raises(js.InvalidCallError, match=message) as info:
        js.diff(a, b) if b is not None else js.diff(a)
    assert "\n" not in str(info.value)


def test_bad_options_get_one_line():
    with pytest.raises(js.InvalidCallError, match="tolerances must map"):
        js.diff(mlp, tolerances={"flops": -1})
    with pytest.raises(js.InvalidCallError, match="hlo must be True or False"):
        js.diff(mlp, hlo="yes")
    with pytest.raises(js.InvalidCallError, match="two argument sets"):
        js.diff(mlp)((1,), (2,), extra=3)


def test_two_compile_profiles_compare_equations_and_ops_by_line(line_of):
    x = jnp.ones(4)
    ten = js.compile_profile(unrolled, static_argnums=1)(x, 10)
    twenty = js.compile_profile(unrolled, static_argnums=1)(x, 20)
    d = js.diff(ten, twenty)
    body = _line(d, unrolled, "# <- loop body", line_of)
    assert body.numbers["equations"] == (20.0, 40.0)
    assert [c.kind for c in body.changes] == ["added"] * 20
    assert d.totals["equations"][1] == d.totals["equations"][0] + 20
    # stage seconds are shown, and count as a change only under a tolerance
    assert "compile_seconds" in d.totals and "compile_seconds" not in d.changed_totals
    again = js.compile_profile(unrolled, static_argnums=1)(x, 10)
    assert js.diff(ten, again).empty
    timed = js.diff(ten, again, tolerances={"compile_seconds": 0.0})
    assert timed.empty == (ten.stages.compile == again.stages.compile)
