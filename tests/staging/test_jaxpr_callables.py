"""js.jaxpr on every kind of callable, with each equation mapped to the user's line."""

from __future__ import annotations

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import jaxscope as js

THIS_FILE = os.path.abspath(__file__)


def line_of(fn, marker):
    import inspect

    fn = inspect.unwrap(fn)
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(marker)


def eqns_of(view, primitive):
    return [e for e in view.eqns if e.primitive == primitive]


def the_eqn(view, primitive):
    found = eqns_of(view, primitive)
    assert found, f"no {primitive} in {[e.primitive for e in view.eqns]}"
    return found[0]


def assert_at(eqn, fn, marker):
    assert eqn.source is not None, f"{eqn.primitive} at {eqn.path} has no source"
    assert eqn.source.file == THIS_FILE
    assert eqn.source.line == line_of(fn, marker), (eqn.primitive, eqn.source)


def sin_twice(x):
    y = jnp.sin(x)  # mark: sin
    return y * 2.0  # mark: mul


def total(x):
    return jnp.sum(jnp.sin(x) * 2.0)  # mark: body


X4 = jnp.arange(4.0)


def test_plain_function_eqns_have_paths_types_and_user_lines():
    v = js.jaxpr(sin_twice)(X4)
    assert [e.primitive for e in v.eqns] == ["sin", "mul"]
    sin, mul = v.eqns
    assert sin.path == (0,) and mul.path == (1,)
    assert sin.depth == 0 and mul.depth == 0
    assert sin.inputs == [("a", "f32[4]")]
    assert sin.outputs == [("b", "f32[4]")]
    assert mul.inputs[0] == ("b", "f32[4]")
    assert mul.inputs[1][1] == "f32[]"
    assert_at(sin, sin_twice, "mark: sin")
    assert_at(mul, sin_twice, "mark: mul")
    assert sin.source.function == "sin_twice"
    assert sin.source.column is not None


def test_jitted_function_is_traced_through_its_own_jit():
    v = js.jaxpr(jax.jit(sin_twice))(X4)
    assert [e.primitive for e in v.eqns] == ["sin", "mul"]
    assert_at(v.eqns[0], sin_twice, "mark: sin")


def scaled(x, mode):
    if mode == "sin":
        return jnp.sin(x)  # mark: sin
    return jnp.cos(x)  # mark: cos


def test_jit_with_its_own_static_argnums_accepts_a_string_static():
    v = js.jaxpr(jax.jit(scaled, static_argnums=1))(X4, "cos")
    assert [e.primitive for e in v.eqns] == ["cos"]
    assert_at(v.eqns[0], scaled, "mark: cos")


def test_jit_with_its_own_static_argnames():
    v = js.jaxpr(jax.jit(scaled, static_argnames="mode"))(X4, mode="sin")
    assert [e.primitive for e in v.eqns] == ["sin"]


def test_static_argnums_and_static_argnames_of_js_jaxpr():
    v = js.jaxpr(scaled, static_argnums=1)(X4, "sin")
    assert [e.primitive for e in v.eqns] == ["sin"]
    w = js.jaxpr(scaled, static_argnames=("mode",))(X4, mode="cos")
    assert [e.primitive for e in w.eqns] == ["cos"]
    assert_at(w.eqns[0], scaled, "mark: cos")


def test_grad_maps_derivative_equations_to_the_primal_line():
    v = js.jaxpr(jax.grad(total))(X4)
    cos = the_eqn(v, "cos")
    assert_at(cos, total, "mark: body")
    assert v.eqns[0].inputs == [("a", "f32[4]")]


def test_value_and_grad_has_two_outputs():
    v = js.jaxpr(jax.value_and_grad(total))(X4)
    assert [a for _, a in v.top.outvars] == ["f32[]", "f32[4]"]
    assert_at(the_eqn(v, "sin"), total, "mark: body")


def test_vmap_batches_the_avals():
    v = js.jaxpr(jax.vmap(sin_twice))(jnp.ones((3, 4)))
    sin = the_eqn(v, "sin")
    assert sin.outputs[0][1] == "f32[3,4]"
    assert_at(sin, sin_twice, "mark: sin")


def test_pmap_over_eight_cpu_devices():
    assert jax.device_count() == 8
    v = js.jaxpr(jax.pmap(sin_twice))(jnp.ones((8, 3)))
    sin = the_eqn(v, "sin")
    assert sin.depth >= 1
    assert sin.outputs[0][1].endswith("[3]") or sin.outputs[0][1].endswith("[1,3]")
    assert_at(sin, sin_twice, "mark: sin")


def _shard_map():
    fn = getattr(jax, "shard_map", None)
    if fn is None:  # jax 0.9.0 may only have the experimental one
        from jax.experimental.shard_map import shard_map as fn
    return fn


def test_shard_map_body_lines():
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()), ("i",))
    kwargs = {"mesh": mesh, "in_specs": P("i"), "out_specs": P("i")}
    sharded = _shard_map()(sin_twice, **kwargs)
    v = js.jaxpr(sharded)(jnp.ones(16))
    sm = the_eqn(v, "shard_map")
    assert sm.n_subjaxprs == 1
    sin = the_eqn(v, "sin")
    assert sin.path[: len(sm.path)] == sm.path
    assert sin.outputs[0][1] == "f32[2]"
    assert_at(sin, sin_twice, "mark: sin")


def with_nested_jit(x):
    inner = jax.jit(sin_twice)
    return inner(x) + 1.0  # mark: call


def test_nested_jit_eqn_and_its_body_are_mapped():
    v = js.jaxpr(with_nested_jit)(X4)
    call = the_eqn(v, "jit")
    assert call.path == (0,) and call.n_subjaxprs == 1
    assert call.params["name"] == "sin_twice"
    assert call.params["jaxpr"] == "{2 eqns}"
    assert_at(call, with_nested_jit, "mark: call")
    sin = the_eqn(v, "sin")
    assert sin.path == (0, 0, 0) and sin.depth == 1 and sin.region == "jaxpr"
    assert_at(sin, sin_twice, "mark: sin")
    assert_at(the_eqn(v, "add"), with_nested_jit, "mark: call")


def scanned(xs):
    def body(carry, x):
        new = carry + jnp.sin(x)  # mark: scan body
        return new, new * 2.0

    return lax.scan(body, 0.0, xs)  # mark: scan call


def test_scan_body_equations_carry_the_body_lines():
    v = js.jaxpr(scanned)(X4)
    scan = the_eqn(v, "scan")
    assert_at(scan, scanned, "mark: scan call")
    assert scan.params["length"] == "4"
    sin = the_eqn(v, "sin")
    assert sin.depth == 1 and sin.path[:2] == (*scan.path, 0)
    assert_at(sin, scanned, "mark: scan body")


def looped(x):
    def cond(c):
        return c[0] < 10  # mark: while cond

    def body(c):
        return (c[0] + 1, jnp.cos(c[1]))  # mark: while body

    _n, y = lax.while_loop(cond, body, (0, x))  # mark: while call
    z = lax.fori_loop(0, 3, lambda i, a: a * 3.0, y)  # mark: fori
    return z


def test_while_and_fori_loop_cond_and_body():
    v = js.jaxpr(looped)(X4)
    loop = the_eqn(v, "while")
    assert loop.n_subjaxprs == 2
    assert_at(loop, looped, "mark: while call")
    assert loop.inputs[0] == ("0:i32[]", "i32[]")
    assert_at(the_eqn(v, "lt"), looped, "mark: while cond")
    assert_at(the_eqn(v, "cos"), looped, "mark: while body")
    regions = {e.region for e in v.eqns if e.depth == 1}
    assert {"cond_jaxpr", "body_jaxpr"} <= regions
    # fori_loop with static bounds lowers to a scan (a while where bounds are traced)
    fori = [e for e in v.eqns if e.primitive in ("scan", "while") and e is not loop]
    assert_at(fori[0], looped, "mark: fori")
    mul = [e for e in v.eqns if e.primitive == "mul" and e.depth >= 1]
    assert_at(mul[0], looped, "mark: fori")


def branching(p, x):
    y = lax.cond(p > 0, lambda a: jnp.sin(a), lambda a: jnp.cos(a), x)  # mark: cond
    return lax.switch(
        2,
        [
            lambda a: a + 1.0,  # mark: branch 0
            lambda a: a - 1.0,  # mark: branch 1
            lambda a: jnp.tanh(a),  # mark: branch 2
        ],
        y,
    )


def test_cond_and_switch_branches():
    v = js.jaxpr(branching)(1.0, X4)
    conds = eqns_of(v, "cond")
    assert conds, [e.primitive for e in v.eqns]
    assert conds[0].n_subjaxprs == 2
    assert conds[0].params["branches"] == "({1 eqn}, {1 eqn})"
    sin, cos = the_eqn(v, "sin"), the_eqn(v, "cos")
    assert {sin.region, cos.region} == {"branches[0]", "branches[1]"}
    assert_at(sin, branching, "mark: cond")
    assert_at(cos, branching, "mark: cond")
    assert_at(the_eqn(v, "tanh"), branching, "mark: branch 2")


@jax.custom_jvp
def soft(x):
    return jnp.log1p(jnp.exp(x))  # mark: primal


@soft.defjvp
def soft_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft(x), t * jax.nn.sigmoid(x)  # mark: rule


def test_custom_jvp_primal_and_rule_lines():
    v = js.jaxpr(soft)(X4)
    call = the_eqn(v, "custom_jvp_call")
    assert call.n_subjaxprs >= 1
    exp = the_eqn(v, "exp")
    assert exp.depth == 1
    assert_at(exp, soft, "mark: primal")
    g = js.jaxpr(jax.grad(lambda x: soft(x).sum()))(X4)
    logistic = the_eqn(g, "logistic")
    assert_at(logistic, soft_jvp, "mark: rule")


@jax.custom_vjp
def clipped(x):
    return jnp.sin(x)  # mark: vjp primal


def clipped_fwd(x):
    return jnp.sin(x), jnp.cos(x)  # mark: fwd


def clipped_bwd(res, g):
    return (jnp.clip(g * res, -1.0, 1.0),)  # mark: bwd


clipped.defvjp(clipped_fwd, clipped_bwd)


def clipped_loss(x):
    return clipped(x).sum()  # mark: vjp call


def test_custom_vjp_primal_and_fwd_lines_and_bwd_at_the_call_site():
    v = js.jaxpr(clipped)(X4)
    the_eqn(v, "custom_vjp_call")
    assert_at(the_eqn(v, "sin"), clipped, "mark: vjp primal")
    g = js.jaxpr(jax.grad(clipped_loss))(X4)
    assert_at(the_eqn(g, "cos"), clipped_fwd, "mark: fwd")
    # JAX traces bwd under the user context of the primal call, so its equations
    # belong to the line that called the custom_vjp function.
    assert_at(the_eqn(g, "max"), clipped_loss, "mark: vjp call")


def rematted(x):
    f = jax.checkpoint(lambda a: jnp.sin(jnp.sin(a)))  # mark: remat
    return f(x)


def test_checkpoint_nests_the_body():
    v = js.jaxpr(rematted)(X4)
    remat = [
        e
        for e in v.eqns
        if e.primitive.startswith("remat") or e.primitive == "checkpoint"
    ]
    assert remat and remat[0].n_subjaxprs == 1
    sins = eqns_of(v, "sin")
    assert len(sins) == 2 and all(e.depth == 1 for e in sins)
    assert_at(sins[0], rematted, "mark: remat")


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: jax.Array
    b: jax.Array


def model(params, batch, *, scale):
    h = batch["x"] @ params.w + params.b  # mark: dense
    return [h * scale, (batch["y"],)]


def test_pytree_dataclass_dict_list_tuple_and_keyword_args():
    params = Params(w=jnp.ones((3, 2)), b=jnp.zeros(2))
    batch = {"x": jnp.ones((5, 3)), "y": jnp.ones(5, jnp.int32)}
    v = js.jaxpr(model)(params, batch, scale=2.0)
    assert [a for _, a in v.top.invars] == [
        "f32[3,2]",
        "f32[2]",
        "f32[5,3]",
        "i32[5]",
        "f32[]",
    ]
    assert len(v.top.outvars) == 2
    dot = the_eqn(v, "dot_general")
    assert dot.outputs[0][1] == "f32[5,2]"
    assert_at(dot, model, "mark: dense")
    names = v.arg_names
    assert names is not None and any("w" in n for n in names)
    assert any("scale" in n for n in names)


def test_shape_dtype_struct_arguments_need_no_data():
    spec = jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16)
    v = js.jaxpr(sin_twice)(spec)
    assert v.eqns[0].inputs == [("a", "bf16[1024,1024]")]


def test_literals_and_dropvars_are_named_like_jax():
    v = js.jaxpr(sin_twice)(X4)
    assert v.eqns[1].inputs[1] == ("2.0:f32[]", "f32[]")


def test_by_line_groups_equations_per_source_line():
    v = js.jaxpr(scanned)(X4)
    key = (THIS_FILE, line_of(scanned, "mark: scan body"))
    assert key in v.by_line
    assert {e.primitive for e in v.by_line[key]} >= {"sin", "add"}
    total_mapped = sum(len(es) for es in v.by_line.values())
    assert total_mapped == sum(1 for e in v.eqns if e.source is not None)
    for (file, line), es in v.by_line.items():
        assert all(e.source.key == (file, line) for e in es)
    assert v.source_text[key].startswith("new = carry + jnp.sin(x)")


def test_tracing_never_runs_on_device_and_retraces_each_call():
    calls = {"python": 0, "device": 0}

    def bump(_):
        calls["device"] += 1

    def effectful(x):
        calls["python"] += 1
        jax.debug.callback(bump, x)
        return x + 1.0

    js.jaxpr(effectful)(X4)
    js.jaxpr(effectful)(X4)
    jax.effects_barrier()
    assert calls == {"python": 2, "device": 0}


def test_a_jitted_function_view_reflects_jax_trace_cache():
    calls = []

    @jax.jit
    def once(x):
        calls.append(1)
        return x * 2.0

    first = js.jaxpr(once)(X4)
    second = js.jaxpr(once)(X4)
    assert len(calls) == 1  # JAX's own trace cache answered the second view
    assert [e.primitive for e in first.eqns] == [e.primitive for e in second.eqns]


def test_repr_and_len_summary():
    v = js.jaxpr(sin_twice)(X4)
    assert repr(v) == "<JaxprView of sin_twice: 2 equations>"


def test_unused_outputs_print_as_underscore_like_jax():
    v = js.jaxpr(lambda x: jax.vjp(jnp.sin, x)[1](x))(1.0)
    assert v.eqns[0].primitive == "sin"
    assert v.eqns[0].outputs == [("_", "f32[]")]
    assert v.eqns[1].outputs == [("b", "f32[]")]


class Layer:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, x):
        return jnp.sin(x) * self.scale  # mark: call method

    def apply(self, x):
        return jnp.cos(x) * self.scale  # mark: method


def test_partial_callable_object_and_bound_method():
    import functools

    v = js.jaxpr(functools.partial(scaled, mode="cos"))(X4)
    assert [e.primitive for e in v.eqns] == ["cos"]
    layer = Layer(3.0)
    v = js.jaxpr(layer)(X4)
    assert_at(the_eqn(v, "sin"), Layer.__call__, "mark: call method")
    v = js.jaxpr(layer.apply)(X4)
    assert_at(the_eqn(v, "cos"), Layer.apply, "mark: method")
    assert v.function_name == "Layer.apply"
