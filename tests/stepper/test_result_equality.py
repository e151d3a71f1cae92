"""The stepper's result equals ``f(*args)`` on a broad set of real programs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxscope as js


def _assert_same(got, want, *, exact=True):
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for a, b in zip(
        jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=False
    ):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        if exact:
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7)


def _step_to_end(stepper):
    count = 0
    while not stepper.done:
        stepper.step()
        count += 1
    return count


@pytest.fixture(scope="module")
def key():
    return jax.random.PRNGKey(0)


def test_mlp_training_step_with_value_and_grad_and_pytree_params(programs, key):
    params = programs.mlp_init(key)
    x = jax.random.normal(key, (5, 4))
    y = jax.nn.one_hot(jnp.arange(5) % 3, 3)
    s = js.step(programs.train_step)(params, x, y)
    assert _step_to_end(s) > 20
    # XLA fuses the jitted program; op-by-op float results agree to rounding.
    _assert_same(s.result, programs.train_step(params, x, y), exact=False)


def test_scan_rnn_result_equals_the_compiled_loop(programs, key):
    p = {
        "wh": jax.random.normal(key, (4, 4)) * 0.3,
        "wx": jax.random.normal(key, (2, 4)),
    }
    xs = jax.random.normal(key, (6, 2))
    s = js.step(programs.rnn)(p, xs)
    _step_to_end(s)
    # Some jaxlib versions fuse the compiled loop body (tanh of dot + dot): rounding only.
    _assert_same(s.result, programs.rnn(p, xs), exact=False)


def test_scan_with_elementwise_body_is_bitwise_equal():
    def f(xs):
        return lax.scan(lambda c, x: (c * 0.5 + x, c - x), 0.0, xs)

    xs = jnp.linspace(-1.0, 1.0, 7)
    _assert_same(js.step(f)(xs).run().result, f(xs))


def test_loops_custom_linear_solve_debug_print_and_shard_map(capfd):
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))

    def sharded(x):
        body = lambda v: v * 2 + lax.psum(v.sum(), "x")  # noqa: E731
        return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)

    cases = [
        (lambda x, n: lax.fori_loop(0, n, lambda i, v: v * 2 + i, x), (jnp.ones(2), 4)),
        (lambda a, b: jnp.linalg.solve(a, b), (jnp.eye(3) * 2 + 0.1, jnp.ones(3))),
        (lambda x: lax.map(jnp.sin, x), (jnp.ones((3, 2)),)),
        (lambda x: (jax.debug.print("seen {x}", x=x), x * 2)[1], (jnp.ones(2),)),
        (sharded, (jnp.arange(8.0),)),
    ]
    for f, args in cases:
        s = js.step(f)(*args)
        _step_to_end(s)
        _assert_same(s.result, jax.jit(f)(*args), exact=False)
    assert "seen [1. 1.]" in capfd.readouterr().out


def test_while_loop_solver_result_is_bitwise_equal(programs):
    s = js.step(programs.newton_sqrt)(jnp.float32(2.0))
    _step_to_end(s)
    _assert_same(s.result, programs.newton_sqrt(jnp.float32(2.0)))
    assert int(s.result[1]) > 2


@pytest.mark.parametrize("k", [0, 1, 2, 7])
def test_cond_and_switch_take_the_right_branch(programs, k):
    x = jnp.arange(3.0) - (1.5 if k == 7 else 0.0)
    s = js.step(programs.branchy)(x, k)
    _step_to_end(s)
    _assert_same(s.result, programs.branchy(x, k))


def test_custom_jvp_function_and_its_gradient(programs):
    x = jnp.arange(3.0)
    _assert_same(js.step(programs.custom_fn)(x).run().result, programs.custom_fn(x))
    g = jax.grad(programs.custom_fn)
    _assert_same(js.step(g)(x).run().result, g(x))


def test_custom_vjp_function_and_its_gradient(programs):
    x = jnp.arange(3.0)
    _assert_same(js.step(programs.vjp_fn)(x).run().result, programs.vjp_fn(x))
    g = jax.grad(programs.vjp_fn)
    _assert_same(js.step(g)(x).run().result, g(x))


def test_vmap_of_grad(programs):
    xs = jnp.linspace(-1, 1, 6).reshape(3, 2)
    _assert_same(
        js.step(programs.vmap_of_grad)(xs).run().result, programs.vmap_of_grad(xs)
    )


def test_remat_gradient(programs):
    x = jnp.arange(3.0)
    s = js.step(programs.remat_fn)(x)
    _step_to_end(s)
    _assert_same(s.result, programs.remat_fn(x))


def test_pytree_in_and_out_with_none_leaf_and_keyword(programs):
    tree = {"a": jnp.ones(2), "bc": (jnp.arange(2.0), jnp.arange(2.0))}
    got = js.step(programs.pytree_fn)(tree, scale=3.0).run().result
    _assert_same(got, programs.pytree_fn(tree, scale=3.0))
    assert got["prod"][1] is None


def test_static_args_of_a_jitted_function_and_given_to_step(programs):
    x = jnp.ones(2)
    _assert_same(
        js.step(programs.static_fn)(x, 3).run().result, programs.static_fn(x, 3)
    )

    def g(x, n, *, mode):
        return x * n if mode == "mul" else x + n

    s = js.step(g, static_argnums=1, static_argnames="mode")(x, 4, mode="mul")
    _assert_same(s.run().result, g(x, 4, mode="mul"))


def test_integer_program_is_bitwise_equal(programs):
    x = jnp.arange(5)
    _assert_same(js.step(programs.int_fn)(x).run().result, jax.jit(programs.int_fn)(x))


def test_random_keys_give_the_same_samples(programs, key):
    _assert_same(js.step(programs.random_fn)(key).run().result, programs.random_fn(key))


def test_python_scalar_and_numpy_arguments_and_constant_output():
    def f(x, y):
        return x * y, 1.0, y

    got = js.step(f)(2.0, np.arange(3, dtype=np.float32)).run().result
    want = jax.jit(f)(2.0, np.arange(3, dtype=np.float32))
    _assert_same(got, want)
    assert got[1].weak_type == want[1].weak_type


def test_zero_length_scan():
    def f(xs):
        return jax.lax.scan(lambda c, x: (c + x.sum(), x * 2), 0.0, xs)

    xs = jnp.zeros((0, 3))
    _assert_same(js.step(f)(xs).run().result, f(xs))
