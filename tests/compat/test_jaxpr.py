"""compat.jaxpr on real programs: nested jaxprs, atoms, avals, debug info, jit statics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxscope.compat import jaxpr as cj


def test_short_dtype_and_aval_str():
    assert cj.short_dtype(np.dtype("float32")) == "f32"
    assert cj.short_dtype(np.dtype("uint8")) == "u8"
    assert cj.short_dtype(np.dtype("int64")) == "i64"
    assert cj.short_dtype(np.dtype("complex64")) == "c64"
    assert cj.short_dtype(np.dtype("bool")) == "bool"
    assert cj.short_dtype(jnp.bfloat16) == "bf16"
    closed = jax.make_jaxpr(lambda x: x.sum())(jnp.ones((3, 4)))
    assert cj.aval_str(closed.jaxpr.invars[0].aval) == "f32[3,4]"
    assert cj.aval_str(closed.jaxpr.outvars[0].aval) == "f32[]"
    key = jax.make_jaxpr(lambda k: jax.random.split(k))(jax.random.key(0))
    assert cj.aval_str(key.jaxpr.invars[0].aval).startswith("key<")


def test_literals_dropvars_and_open_jaxpr():
    closed = jax.make_jaxpr(
        lambda x: (x * 2.0, lax.scan(lambda c, v: (c, None), 0.0, x)[0])
    )(jnp.ones(3))
    jaxpr, consts = cj.open_jaxpr(closed)
    assert consts == [] and jaxpr is closed.jaxpr
    mul = jaxpr.eqns[0]
    assert cj.is_literal(mul.invars[1]) and not cj.is_literal(mul.invars[0])
    assert float(cj.literal_value(mul.invars[1])) == 2.0
    assert not cj.is_dropvar(mul.outvars[0])
    assert cj.is_jaxpr(closed) and cj.is_jaxpr(jaxpr) and not cj.is_jaxpr(mul)


def test_dropvar_is_recognised():
    from jaxscope.compat.jaxpr import _dropvar_type

    closed = jax.make_jaxpr(lambda x: jax.vjp(jnp.sin, x)[1](x))(1.0)
    sin, cos = closed.jaxpr.eqns[:2]
    assert not cj.is_dropvar(cos.outvars[0])
    assert cj.is_dropvar(_dropvar_type()(sin.outvars[0].aval))


def f_all(x, p):
    y = jax.jit(jnp.sin)(x)
    c, _ = lax.scan(lambda c, v: (c + v, v), 0.0, y)
    w = lax.while_loop(lambda a: a < 3.0, lambda a: a + 1.0, c)
    z = lax.cond(p > 0, lambda a: a, lambda a: -a, w)
    r = jax.checkpoint(jnp.cos)(z)
    return r


def test_subjaxprs_of_every_control_flow_primitive():
    closed = jax.make_jaxpr(f_all)(jnp.ones(3), 1.0)
    by_prim = {
        cj.primitive_name(e): [k for k, _ in cj.subjaxprs(e)] for e in closed.jaxpr.eqns
    }
    assert by_prim["jit"] == ["jaxpr"]
    assert by_prim["scan"] == ["jaxpr"]
    assert sorted(by_prim["while"]) == ["body_jaxpr", "cond_jaxpr"]
    assert by_prim["cond"] == ["branches[0]", "branches[1]"]
    remat = next(k for k in by_prim if k.startswith("remat") or k == "checkpoint")
    assert by_prim[remat] == ["jaxpr"]
    for e in closed.jaxpr.eqns:
        for _, sub in cj.subjaxprs(e):
            assert cj.is_jaxpr(sub)
            assert isinstance(cj.open_jaxpr(sub)[0].eqns, list)


def test_custom_jvp_and_vjp_subjaxprs():
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0]))

    @jax.custom_vjp
    def g(x):
        return jnp.cos(x)

    g.defvjp(lambda x: (g(x), None), lambda r, ct: (ct,))
    closed = jax.make_jaxpr(lambda x: f(x) + g(x))(1.0)
    prims = {cj.primitive_name(e): e for e in closed.jaxpr.eqns}
    assert [k for k, _ in cj.subjaxprs(prims["custom_jvp_call"])] == ["call_jaxpr"]
    assert [k for k, _ in cj.subjaxprs(prims["custom_vjp_call"])] == ["call_jaxpr"]


def test_debug_info_arg_names_and_result_paths():
    def model(params, x, *, scale):
        return {"y": params["w"] * x * scale}

    traced = jax.jit(model).trace({"w": 1.0}, 2.0, scale=3.0)
    names = cj.jaxpr_arg_names(traced.jaxpr.jaxpr)
    assert names == ("params['w']", "x", "scale")
    paths = cj.jaxpr_result_paths(traced.jaxpr.jaxpr)
    assert paths is not None and "['y']" in paths[0]


def test_jit_static_args():
    def f(x, mode, *, k):
        return x

    jitted = jax.jit(f, static_argnums=1, static_argnames="k")
    assert cj.jit_static_args(jitted) == ((1,), ("k",))
    assert cj.jit_static_args(jax.jit(f)) == ((), ())
    assert cj.jit_static_args(f) is None


def test_scan_length_jaxpr_callable_and_input_avals():
    def body(c, x):
        return c + x, c * 2.0

    closed = jax.make_jaxpr(lambda xs: lax.scan(body, 0.0, xs))(jnp.ones(7))
    scan = next(e for e in closed.jaxpr.eqns if cj.primitive_name(e) == "scan")
    assert cj.scan_length(scan) == 7
    not_scan = jax.make_jaxpr(jnp.sin)(1.0).jaxpr.eqns[0]
    assert cj.scan_length(not_scan) is None
    inner = dict(cj.subjaxprs(scan))["jaxpr"]
    assert [(a.shape, str(a.dtype)) for a in cj.input_avals(inner)] == [
        ((), "float32"),
        ((), "float32"),
    ]
    carry, out = cj.jaxpr_callable(inner)(jnp.float32(2.0), jnp.float32(3.0))
    assert float(carry) == 5.0 and float(out) == 4.0


def test_jaxpr_function_names_the_traced_body():
    def rnn_cell(h, x):
        return jnp.tanh(h + x), h

    def f(x):
        h, _ = lax.scan(rnn_cell, 0.0, x)
        return lax.fori_loop(0, 3, lambda i, c: c * 2.0, h)

    scan, fori = jax.make_jaxpr(f)(jnp.ones(4)).jaxpr.eqns[:2]
    assert cj.jaxpr_function(scan.params["jaxpr"]) == ("rnn_cell", "scan")
    [(_, body)] = [s for s in cj.subjaxprs(fori) if "body" in s[0] or s[0] == "jaxpr"]
    assert cj.jaxpr_function(body) == ("<lambda>", "fori_loop")


def test_printed_params_follow_jaxs_own_printing_rules():
    def f(x):
        y = jax.nn.relu(x @ x)
        z = lax.scan(lambda c, v: (c + v, c), 0.0, y[0])[0]
        return jax.jit(lambda a: a * 2)(y).sum(0), z

    eqns = {e.primitive.name: e for e in jax.make_jaxpr(f)(jnp.ones((4, 4))).eqns}
    relu = dict(cj.printed_params(eqns["custom_jvp_call"]))
    # JAX names the function objects; the nested jaxpr is left to the caller
    assert relu["name"] == "relu" and relu["jvp"] == "jvp"
    assert relu["call_jaxpr"] == "" and "jvp_jaxpr_fun" not in relu
    jit = cj.printed_params(eqns["jit"])
    assert jit[0] == ("name", "<lambda>")  # name first, defaults dropped
    assert {k for k, _ in jit} == {"name", "jaxpr"}
    dot = dict(cj.printed_params(eqns["dot_general"]))
    assert dot["dimension_numbers"] == "(([1], [0]), ([], []))"
    scan = dict(cj.printed_params(eqns["scan"]))
    assert scan["length"] == "4" and scan["jaxpr"] == ""
    assert cj.printed_params(eqns["squeeze"]) == [("dimensions", "(0,)")]


def test_split_pairs_keeps_brackets_and_quotes_whole():
    pairs = cj._split_pairs("a=(1, b=2) c='x y=1' d=[p q]")
    assert pairs == [("a", "(1, b=2)"), ("c", "'x y=1'"), ("d", "[p q]")]
    assert cj._split_pairs("not pairs") is None


def test_pmap_static_argnums_reads_a_pmaps_static_broadcasted_arguments():
    def f(x, n):
        return x * n

    assert cj.pmap_static_argnums(jax.pmap(f, static_broadcasted_argnums=1)) == (1,)
    assert cj.pmap_static_argnums(jax.pmap(f)) == ()
    assert cj.pmap_static_argnums(jax.jit(f)) is None
    assert cj.pmap_static_argnums(f) is None


def test_lowered_jaxpr_drops_dead_code_as_jit_does_before_lowering():
    def f(x):
        unused = jnp.cos(x)  # noqa: F841
        return lax.fori_loop(0, 3, lambda i, c: c * 2.0, x)

    closed = jax.jit(f).trace(jnp.ones(3)).jaxpr
    jaxpr, consts = cj.lowered_jaxpr(closed)
    assert closed.jaxpr.eqns[0].primitive.name == "cos"
    assert "cos" not in [e.primitive.name for e in jaxpr.eqns]
    # the loop counter nothing reads is gone from the body too
    [scan] = [e for e in jaxpr.eqns if e.primitive.name == "scan"]
    assert len(scan.params["jaxpr"].jaxpr.eqns) == 1
    assert consts == []


def test_jit_cache_size_counts_a_jit_wrappers_programs():
    f = jax.jit(lambda x: x + 1)
    assert cj.jit_cache_size(f) == 0
    f(jnp.ones(2))
    f(jnp.ones(3))
    assert cj.jit_cache_size(f) == 2
    assert cj.jit_cache_size(lambda x: x) is None


def test_remat_policies_and_their_names():
    from jax.ad_checkpoint import checkpoint_name

    from jaxscope.compat.jaxpr import policy_names, remat_policies, saves_everything

    names = jax.checkpoint_policies
    only_h = names.save_only_these_names("h")

    def loss(x):
        def f(x):
            return jnp.sin(checkpoint_name(jnp.cos(x), "h"))

        return jax.checkpoint(f, policy=only_h)(x).sum()

    found = remat_policies(jax.make_jaxpr(jax.grad(loss))(jnp.ones(3)))
    assert found == [only_h]
    assert policy_names(only_h) == (frozenset({"h"}), frozenset())
    offload = names.save_and_offload_only_these_names(
        names_which_can_be_saved=["a"],
        names_which_can_be_offloaded=["b"],
        offload_src="device",
        offload_dst="pinned_host",
    )
    assert policy_names(offload) == (frozenset({"a"}), frozenset({"b"}))
    assert policy_names(names.dots_saveable) is None
    assert policy_names(None) is None
    assert saves_everything(names.everything_saveable)
    assert not saves_everything(names.dots_saveable) and not saves_everything(None)
