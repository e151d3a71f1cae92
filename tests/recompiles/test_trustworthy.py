"""Regression tests: causes that are right whenever the watcher starts, functions told
apart by where they are defined, paths and values shown as the user wrote them."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from IPython.utils.capture import capture_output

import jaxscope as js


def _kinds(event):
    return [c.kind for c in event.causes]


# ------------------------------------------------ looked at first, then called (1)


def test_function_traced_by_make_jaxpr_then_called_is_its_first_compile():
    def looked_at(x):
        return x * 2

    f = jax.jit(looked_at)
    jax.make_jaxpr(f)(jnp.ones(3))
    with js.watch_recompiles() as log:
        f(jnp.ones(3))
    (ev,) = log.events
    assert _kinds(ev) == ["first_call"]
    assert "twice" not in ev.causes[0].hint
    assert ev.compiled


def test_function_traced_by_js_jaxpr_then_called_is_its_first_compile():
    def looked_at_js(x):
        return x + 2

    f = jax.jit(looked_at_js)
    js.jaxpr(f)(jnp.ones(3))
    with js.watch_recompiles() as log:
        f(jnp.ones(3))
    assert [_kinds(e) for e in log.events] == [["first_call"]]


def test_jaxpr_magic_then_recompiles_on_reports_a_first_call(ip):
    ip.run_cell(
        "import jax, jax.numpy as jnp\n"
        "def looked(x):\n    return x * 3\n"
        "lf = jax.jit(looked)\nxs = jnp.ones(5)"
    )
    with capture_output():
        ip.run_line_magic("jaxpr", "lf(xs)")
    ip.run_line_magic("recompiles", "on")
    try:
        with capture_output() as cap:
            ip.run_cell("lf(xs)")
        session = ip.run_line_magic("recompiles", "log")
    finally:
        ip.run_line_magic("recompiles", "off")
    assert [_kinds(e) for e in session.events] == [["first_call"]]
    assert "compiled before this watcher" not in str(cap.outputs[0].data)


def test_a_trace_only_look_at_one_shape_then_a_call_at_another_is_a_first_compile():
    # js.jaxpr on f32[24,3], then the first real call on f32[8,3]: nothing compiled
    def looked_at_24(x):
        return (x * 2).sum()

    def traced_24(x):
        return (x * 3).sum()

    step, other = jax.jit(looked_at_24), jax.jit(traced_24)
    x24, x8 = jnp.ones((24, 3)), jnp.ones((8, 3))
    other.trace(x24)
    with js.watch_recompiles() as log:
        js.jaxpr(step)(x24)  # a look while watching, too
        step(x8)
        other(x8)
    assert [_kinds(e) for e in log.events] == [["first_call"], ["first_call"]]
    assert all("traced before" in e.causes[0].hint for e in log.events)


def test_a_look_after_a_compile_does_not_stand_in_for_the_compile():
    def compiled_32(x):
        return (x * 4).sum()

    step = jax.jit(compiled_32)
    step(jnp.ones((32, 3)))
    js.jaxpr(step)(jnp.ones((24, 3)))
    with js.watch_recompiles() as log:
        step(jnp.ones((8, 3)))
    (ev,) = log.events
    assert [(c.kind, c.before, c.after) for c in ev.causes] == [
        ("shape", "f32[32,3]", "f32[8,3]")
    ]


def test_nnx_jit_compiled_before_watching_then_a_new_shape_is_a_shape_cause():
    from flax import nnx

    class Head(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(3, 2, rngs=rngs)

        def __call__(self, x):
            return self.lin(x)

    model = Head(nnx.Rngs(0))

    @nnx.jit
    def nnx_step(model, x):
        return model(x).sum()

    nnx_step(model, jnp.ones((24, 3)))
    with js.watch_recompiles() as log:
        nnx_step(model, jnp.ones((8, 3)))
        nnx_step(model, jnp.ones((8, 3)))  # a hit: nothing
    (ev,) = log.events
    assert [(c.kind, c.path, c.before, c.after) for c in ev.causes] == [
        ("shape", "x", "f32[24,3]", "f32[8,3]")
    ]


def test_compiled_before_watching_then_called_on_another_device_is_a_device_cause():
    f = jax.jit(lambda x: x - 4)
    x = jnp.ones(3)
    f(x)
    with js.watch_recompiles() as log:
        f(jax.device_put(x, jax.devices()[1]))
    (ev,) = log.events
    assert not ev.traced and ev.compiled
    assert [(c.kind, c.path) for c in ev.causes] == [("device", "x")]


# ---------------------------------------------- compiled before the watcher (2)


def test_compiled_before_watching_then_new_shape_is_a_shape_cause():
    def warm(x, y):
        return x + y.sum()

    f = jax.jit(warm)
    f(jnp.ones(3), jnp.ones(2))
    with js.watch_recompiles() as log:
        f(jnp.ones(3), jnp.ones(5))
    (ev,) = log.events
    (cause,) = ev.causes
    assert (cause.kind, cause.path, cause.before, cause.after) == (
        "shape",
        "y",
        "f32[2]",
        "f32[5]",
    )


def test_compiled_before_watching_static_and_keyword_causes():
    def warm_static(x, n, *, scale):
        return x * n * scale

    f = jax.jit(warm_static, static_argnums=1)
    f(jnp.ones(2), 2, scale=jnp.float32(1.0))
    with js.watch_recompiles() as log:
        f(jnp.ones(2), 3, scale=jnp.float32(1.0))
        f(jnp.ones(2), 2, scale=jnp.ones(2, jnp.int32))
    first, second = log.events
    assert [(c.kind, c.path, c.before, c.after) for c in first.causes] == [
        ("static_arg", "n", "2", "3")
    ]
    assert [(c.kind, c.path) for c in second.causes] == [
        ("shape", "scale (keyword)"),
        ("dtype", "scale (keyword)"),
    ]


@pytest.mark.skipif(
    jax.__version_info__ < (0, 10),
    reason="jax 0.9 does not name the options of its trace context",
)
def test_compiled_before_watching_with_x64_is_a_config_cause(x64):
    f = jax.jit(lambda x: x + 1)
    x = np.ones(3, np.float32)
    f(x)
    with js.watch_recompiles() as log, x64():
        f(x)
    assert [(c.kind, c.path) for c in log.events[0].causes] == [
        ("config", "jax_enable_x64")
    ]


def test_truly_first_call_is_still_first_call_when_other_functions_are_cached():
    warm = jax.jit(lambda x: x * 9)
    warm(jnp.ones(3))

    def fresh(x):
        return x * 8

    with js.watch_recompiles() as log:
        jax.jit(fresh)(jnp.ones(3))
    assert [_kinds(e) for e in log.events] == [["first_call"]]


# ------------------------------------------ functions keyed by definition site (3)


def _make_step(k):
    def step(x):
        return x * k

    return step


def step(x):
    return x * 2


_STEP_A = step


def step(x):  # re-defined, as a notebook cell run again with an edit
    return x - 1


_STEP_B = step


def test_two_lambdas_are_two_summary_rows():
    a = jax.jit(lambda x: x - 1)
    b = jax.jit(lambda x: x * 3)
    with js.watch_recompiles() as log:
        a(jnp.ones(3))
        b(jnp.ones(3))
        b(jnp.ones(5))
    rows = log.summary().rows
    assert len(rows) == 2
    assert [(r.compiles, r.calls) for r in rows] == [(2, 2), (1, 1)]
    assert rows[0].defined_at.line != rows[1].defined_at.line
    assert _kinds(log.events[1]) == ["first_call"]  # b's first call is not a's shape


def test_two_functions_named_step_are_told_apart():
    s1, s2 = jax.jit(_STEP_A), jax.jit(_STEP_B)
    with js.watch_recompiles() as log:
        s1(jnp.ones(3))
        s2(jnp.ones(4))
    assert [e.function for e in log.events] == ["step", "step"]
    assert [_kinds(e) for e in log.events] == [["first_call"], ["first_call"]]
    rows = log.summary().rows
    assert len(rows) == 2
    assert {r.defined_at.line for r in rows} == {
        _STEP_A.__code__.co_firstlineno,
        _STEP_B.__code__.co_firstlineno,
    }


def test_same_definition_made_twice_is_one_row_of_redefinitions():
    x = jnp.ones(3)
    with js.watch_recompiles() as log:
        for k in (1, 2):
            jax.jit(_make_step(k))(x)
    (row,) = log.summary().rows
    assert row.compiles == 2
    assert _kinds(log.events[1]) == ["redefined_function"]


# ------------------------------------------- dict keys with '.' and '[' (4)


def test_dict_keys_with_dots_are_not_cut():
    f = jax.jit(lambda params: sum(jnp.sum(v) for v in params.values()))
    w = jnp.ones(2)
    with js.watch_recompiles() as log:
        f({"encoder.layer0.bias": w, "encoder.layer0.weight": w})
        f(
            {
                "encoder.layer0.bias": w,
                "encoder.layer0.weight": w,
                "encoder.layer1.bias": w,
            }
        )
    (cause,) = log.events[-1].causes
    assert cause.kind == "tree_structure"
    assert cause.path == "params"
    assert cause.before == "without ['encoder.layer1.bias']"
    assert cause.after == "with ['encoder.layer1.bias']"


def test_dict_key_with_bracket_is_named_whole():
    f = jax.jit(lambda d: d["v"].sum())
    with js.watch_recompiles() as log:
        f({"v": jnp.ones(2)})
        f({"v": jnp.ones(2), "cache[/data]": jnp.ones(1)})
    (cause,) = log.events[-1].causes
    assert cause.path == "d"
    assert cause.after == "with ['cache[/data]']"


def test_removed_single_key_with_dots():
    f = jax.jit(lambda p: 0.0)
    w = jnp.ones(1)
    with js.watch_recompiles() as log:
        f({"a.b": w, "a.c": w})
        f({"a.b": w})
    (cause,) = log.events[-1].causes
    assert cause.path == "p"
    assert (cause.before, cause.after) == ("with ['a.c']", "without ['a.c']")


# ----------------------------------------- static objects and tree nodes (5)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    name: str = "a rather long model configuration name"
    hidden: int = 16
    activation: str = "relu"
    dropout: float = 0.1


def test_static_dataclass_shows_the_field_that_changed():
    def apply(x, cfg):
        return x * cfg.hidden

    f = jax.jit(apply, static_argnames="cfg")
    with js.watch_recompiles() as log:
        f(jnp.ones(2), cfg=ModelConfig())
        f(jnp.ones(2), cfg=ModelConfig(dropout=0.2))
    (cause,) = log.events[-1].causes
    assert cause.kind == "static_arg"
    assert cause.path == "cfg.dropout (keyword)"
    assert (cause.before, cause.after) == ("0.1", "0.2")


def test_static_nested_config_names_the_nested_field():
    def apply(x, cfg):
        return x

    f = jax.jit(apply, static_argnums=1)
    base = {"model": ModelConfig(), "lr": 1e-3}
    with js.watch_recompiles() as log:
        f(jnp.ones(2), (base["model"], "adam"))
        f(jnp.ones(2), (ModelConfig(activation="gelu"), "adam"))
    (cause,) = log.events[-1].causes
    assert cause.path == "cfg[0].activation"
    assert (cause.before, cause.after) == ("'relu'", "'gelu'")


@functools.partial(
    jax.tree_util.register_dataclass, data_fields=["w"], meta_fields=["mode"]
)
@dataclasses.dataclass
class TrainState:
    w: jax.Array
    mode: str


def test_tree_node_metadata_change_shows_the_field():
    f = jax.jit(lambda state: state.w * 2)
    long = "x" * 80
    with js.watch_recompiles() as log:
        f(TrainState(jnp.ones(2), "train-" + long))
        f(TrainState(jnp.ones(2), "eval-" + long))
    (cause,) = log.events[-1].causes
    assert cause.kind == "tree_structure"
    assert cause.path == "state.mode"
    assert cause.before.startswith("'train-") and cause.after.startswith("'eval-")


def test_tuple_versus_list_is_named():
    f = jax.jit(lambda xs: xs[0] + xs[1])
    a = jnp.ones(2)
    with js.watch_recompiles() as log:
        f((a, a))
        f([a, a])
    (cause,) = log.events[-1].causes
    assert (cause.kind, cause.path, cause.before, cause.after) == (
        "tree_structure",
        "xs",
        "tuple",
        "list",
    )


# ------------------------------------------------------------- dtype hint (6)


def test_dtype_hint_names_the_usual_dtype_not_the_last_bad_one():
    f = jax.jit(lambda x: x * 2)
    with js.watch_recompiles() as log:
        f(jnp.ones(3, jnp.float32))
        f(jnp.ones(3, jnp.float32) * 2)  # cache hit
        f(jnp.ones(3, jnp.uint8))
        f(jnp.ones(3, jnp.bfloat16))
    (cause,) = log.events[-1].causes
    assert cause.kind == "dtype"
    assert "jnp.float32" in cause.hint and "uint8" not in cause.hint


# ------------------------------------------------------------------ pmap (7)


def test_pmap_recompile_is_seen_with_its_cause():
    def per_dev(x, y):
        return x * y

    p = jax.pmap(per_dev)
    a, b = jnp.ones((8, 3)), jnp.ones((8, 3))
    with js.watch_recompiles() as log:
        p(a, b)
        p(a, jnp.ones((8, 3), jnp.int32))
    names = [e.function for e in log.events]
    assert len(names) == 2 and all(n.endswith(".per_dev)") for n in names)
    assert [(c.kind, c.path) for c in log.events[-1].causes] == [("dtype", "y")]
    assert log.events[0].defined_at.line == per_dev.__code__.co_firstlineno


def test_pmap_compiled_before_watching_then_recompiled_is_seen():
    def per_dev2(x):
        return x + 1

    p = jax.pmap(per_dev2)
    p(jnp.ones((8, 2)))
    with js.watch_recompiles() as log:
        p(jnp.ones((8, 5)))
    (ev,) = log.events
    assert [(c.kind, c.path) for c in ev.causes] == [("shape", "x")]


def test_pmap_inside_loop_is_not_a_false_redefinition():
    def per_dev3(x):
        return x * 3

    p = jax.pmap(per_dev3)
    with js.watch_recompiles() as log:
        for _ in range(3):
            p(jnp.ones((8, 2)))
    assert [_kinds(e) for e in log.events] == [["first_call"]]


@pytest.mark.parametrize("n", [2, 3])
def test_watching_sees_no_miss_on_a_warm_pmap(n):
    p = jax.pmap(lambda x: x * n)
    x = jnp.ones((8, 2))
    p(x)
    with js.watch_recompiles() as log:
        p(x)
        p(x)
    assert log.events == []
