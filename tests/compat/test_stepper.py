"""``jaxscope.compat.stepper`` on real programs (jax 0.9.0 and 0.10.2)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxscope.compat import stepper as cs


def _eqns(fn, *args):
    return jax.make_jaxpr(fn)(*args).jaxpr.eqns


def test_binder_runs_single_and_multiple_result_equations():
    x = jnp.arange(6.0).reshape(2, 3)
    (mul,) = _eqns(lambda v: v * 2.0, x)
    (out,) = cs.binder(mul)([x, 2.0])
    np.testing.assert_array_equal(out, x * 2.0)
    eqns = _eqns(lambda v: jax.lax.sort((v, -v), num_keys=1), x)
    sort = next(e for e in eqns if e.primitive.name == "sort")
    outs = cs.binder(sort)([x, -x])
    assert len(outs) == 2
    np.testing.assert_array_equal(outs[1], -x)


def test_binder_runs_a_call_primitive_through_its_subfun():
    f = jax.custom_jvp(lambda v: v * 3.0)
    f.defjvp(lambda p, t: (p[0] * 3.0, t[0] * 3.0))
    (eqn,) = _eqns(f, jnp.ones(2))
    (out,) = cs.binder(eqn)([jnp.ones(2)])
    np.testing.assert_array_equal(out, jnp.full(2, 3.0))


def test_binder_enters_the_equation_context_for_random_bits():
    key = jax.random.PRNGKey(0)
    jaxpr = jax.make_jaxpr(lambda k: jax.random.bits(k, (4,)))(key).jaxpr
    env = {jaxpr.invars[0]: key}
    for eqn in jaxpr.eqns:
        ins = [v.val if hasattr(v, "val") else env[v] for v in eqn.invars]
        for var, val in zip(eqn.outvars, cs.binder(eqn)(ins), strict=False):
            env[var] = val
    np.testing.assert_array_equal(env[jaxpr.outvars[0]], jax.random.bits(key, (4,)))


def test_jit_static_args_reads_resolved_positions_and_names():
    from jaxscope.compat import jaxpr as cj

    def f(x, n, *, mode="a"):
        return x

    assert cj.jit_static_args(jax.jit(f, static_argnames=("n",))) == ((1,), ("n",))
    assert cj.jit_static_args(jax.jit(f, static_argnums=1)) == ((1,), ("n",))
    assert cj.jit_static_args(f) is None


def test_binder_names_what_it_relies_on():
    assert "Relies on:" in cs.binder.__doc__


def test_frame_offsets_tell_two_instructions_of_one_line_apart():
    from jaxscope.compat import source as csource

    def f(x):
        return jnp.sin(x) * 2.0  # two equations of one line

    eqns = jax.make_jaxpr(f)(1.0).jaxpr.eqns
    offsets = [cs.frame_offsets(e) for e in eqns]
    frames = [csource.frames_of(csource.eqn_traceback(e)) for e in eqns]
    assert [len(o) for o in offsets] == [len(fr) for fr in frames]
    assert frames[0][0].line == frames[1][0].line  # the same line ...
    assert offsets[0][0] != offsets[1][0]  # ... but different instructions


def test_default_context_is_what_a_binder_compares_against():
    eqn = jax.make_jaxpr(lambda x: x * 2.0)(1.0).jaxpr.eqns[0]
    context = cs.default_context()
    (out,) = cs.binder(eqn, context)([3.0, 2.0])
    assert float(out) == 6.0


def test_traced_atom_names_the_jaxpr_variable_of_a_jit_and_a_grad_tracer():
    seen = {}

    def f(x):
        y = jnp.sin(x)
        seen["y"] = cs.traced_atom(y)
        seen["concrete"] = cs.traced_atom(np.ones(2))
        return y * 2.0

    jaxpr = jax.make_jaxpr(f)(jnp.ones(2)).jaxpr
    assert seen["y"] is jaxpr.eqns[0].outvars[0]
    assert seen["concrete"] is None
    primal = {}

    def g(x):
        y = jnp.sin(x)
        primal["y"] = cs.traced_atom(y)  # a linearize tracer: its primal's variable
        return y.sum()

    outvars = {
        id(v) for e in jax.make_jaxpr(jax.grad(g))(jnp.ones(2)).eqns for v in e.outvars
    }
    assert id(primal["y"]) in outvars


def test_trace_epoch_gives_the_last_equations_traced():
    epochs = []

    def f(x):
        epochs.append(cs.trace_epoch())
        y = jnp.sin(x)
        epochs.append(cs.trace_epoch())
        return jnp.cos(y)

    jaxpr = jax.make_jaxpr(f)(jnp.ones(2)).jaxpr
    assert epochs[0] == ()
    assert epochs[1][0] is jaxpr.eqns[0].outvars[0]
    assert cs.trace_epoch() == ()  # outside a trace
