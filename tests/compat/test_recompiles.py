"""The private hooks behind the recompile watcher, each on a real program."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxscope.compat import recompiles as crec


def test_miss_hooks_see_start_trace_lower_compile_end_and_nothing_on_hits():
    seen = []
    hooks = crec.MissHooks(
        on_start=lambda fun, ji, args, kwargs: seen.append(
            ("start", fun.__name__, len(args))
        ),
        on_end=lambda fun, err: seen.append(("end", fun.__name__, err)),
        on_test_event=lambda what: seen.append(what),
        on_duration=lambda s: seen.append("duration"),
    )

    def hooked(x):
        return x * 2

    f = jax.jit(hooked)
    x = jnp.ones(3)
    hooks.install()
    try:
        f(x)
        first = list(seen)
        seen.clear()
        f(x)
        hit = list(seen)
        y = jnp.ones(4)
        seen.clear()
        f.lower(y)  # AOT: not a call miss
        aot = [s for s in seen if isinstance(s, tuple)]
    finally:
        hooks.uninstall()
    assert first[0] == ("start", "hooked", 1)
    assert first[-1] == ("end", "hooked", None)
    for what in ("trace", "lower", "compile", "duration"):
        assert what in first
    assert hit == []
    assert not [s for s in aot if s[1] == "hooked"]
    assert not hooks.installed


def test_uninstall_restores_jax():
    from jax._src import pjit, util

    before = (
        getattr(pjit, "_infer_params", None),
        getattr(pjit, "_trace_for_jit", None),
        pjit._run_python_pjit,
        util.test_event_listener,
        pjit._pjit_call_impl_python,
    )
    hooks = crec.MissHooks(
        lambda *a: None,
        lambda *a: None,
        lambda *a: None,
        lambda *a: None,
        lambda *a: None,
    )
    hooks.install()
    hooks.uninstall()
    after = (
        getattr(pjit, "_infer_params", None),
        getattr(pjit, "_trace_for_jit", None),
        pjit._run_python_pjit,
        util.test_event_listener,
        pjit._pjit_call_impl_python,
    )
    assert before == after


def test_is_jax_internal():
    def mine(x):
        return x

    assert not crec.is_jax_internal(mine)
    assert crec.is_jax_internal(jnp.add)
    assert crec.is_jax_internal(jax.numpy.linalg.norm)


def test_jit_options_and_static_donated():
    seen = {}
    hooks = crec.MissHooks(
        on_start=lambda fun, ji, args, kwargs: (
            fun.__name__ == "g"
            and seen.update(
                opts=crec.jit_options(ji),
                sd=crec.jit_static_and_donated(ji),
                sig=crec.jit_signature(ji),
            )
        ),
        on_end=lambda *a: None,
        on_test_event=lambda *a: None,
        on_duration=lambda *a: None,
    )

    def g(x, n):
        return x * n

    hooks.install()
    try:
        jax.jit(g, static_argnums=1, donate_argnums=0)(jnp.ones(2), 3)
    finally:
        hooks.uninstall()
    assert seen["sd"][0] == (1,)
    assert seen["sd"][2] == (0,)
    assert "keep_unused" in seen["opts"]
    assert list(seen["sig"].parameters) == ["x", "n"]


def test_leaf_type_and_placement():
    assert crec.leaf_type(jnp.ones((3, 4))) == ("3,4", "f32", False)
    assert crec.leaf_type(1.0) == ("", "f32", True)
    assert crec.leaf_type(np.ones(2, np.int32)) == ("2", "i32", False)
    assert crec.leaf_placement(np.ones(2)) == ("", "", False)
    x = jax.device_put(jnp.ones(2), jax.devices()[2])
    sharding, device, committed = crec.leaf_placement(x)
    assert device.endswith(":2") and committed
    mesh = jax.make_mesh((8,), ("x",))
    y = jax.device_put(jnp.ones(8), NamedSharding(mesh, P("x")))
    sharding, device, committed = crec.leaf_placement(y)
    assert "x=8" in sharding and device == "" and committed


def test_trace_config_sees_x64():
    names = dict(crec.trace_config())
    assert names["jax_enable_x64"] == "False"
    ctx = (
        jax.enable_x64(True)
        if hasattr(jax, "enable_x64")
        else __import__("jax.experimental", fromlist=["enable_x64"]).enable_x64()
    )
    with ctx:
        assert dict(crec.trace_config())["jax_enable_x64"] == "True"


def test_pmap_user_function_found_where_pmap_is_jit_of_shard_map():
    import inspect

    from jax._src import pmap as jax_pmap

    if "def _cached_shard_map(fun, in_tree" not in inspect.getsource(jax_pmap):
        import pytest

        pytest.skip(
            "this JAX's pmap is not jit(shard_map(_fun)) with the user's fun "
            "in a closure (jax < 0.10)"
        )
    found = []
    hooks = crec.MissHooks(
        on_start=lambda fun, ji, args, kwargs: found.append(
            crec.pmap_user_function(fun)
        ),
        on_end=lambda *a: None,
        on_test_event=lambda *a: None,
        on_duration=lambda *a: None,
    )

    def per_device(x):
        return x * 2

    x = jnp.ones((8, 2))
    hooks.install()
    try:
        jax.pmap(per_device)(x)
    finally:
        hooks.uninstall()
    assert per_device in found


def test_eager_hook_sees_the_backward_pass_of_grad_of_a_jitted_function():
    seen = []
    hooks = crec.MissHooks(
        on_start=lambda *a: None,
        on_end=lambda *a: None,
        on_test_event=lambda *a: None,
        on_duration=lambda *a: None,
        on_eager_start=lambda name, source, args: seen.append((name, source)) or None,
    )

    def bwd_loss(x):
        return jnp.sum(x**2)

    f = jax.jit(bwd_loss)
    x = jnp.ones(3)
    hooks.install()
    try:
        jax.grad(f)(x)
    finally:
        hooks.uninstall()
    assert seen and all(name == "bwd_loss" for name, _ in seen)
    assert seen[-1][1].startswith("bwd_loss at ") and seen[-1][1].endswith(
        f":{bwd_loss.__code__.co_firstlineno}"
    )


def test_jax_09s_trace_cache_is_listed_only_while_no_other_thread_can_trace():
    # Listing jax 0.9's trace cache while another thread traces deadlocks (GIL and the
    # cache's lock): with a worker alive the cache is not read, and answers are None.
    import threading

    assert crec.trace_cache_readable()
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert not crec.trace_cache_readable()
        f = jax.jit(lambda x: x + 1)
        f(1.0)
        jax_09 = not hasattr(crec._pjit, "_infer_params_cached")
        expected = None if jax_09 else True
        assert crec.traced_before(f.__wrapped__) is expected
    finally:
        release.set()
        worker.join()
    assert crec.trace_cache_readable()


def test_transformed_user_function_finds_the_function_inside_jax_transforms():
    def loss(w):
        return jnp.sum(w**2)

    assert crec.transformed_user_function(jax.grad(loss)) == ("grad", loss)
    assert crec.transformed_user_function(jax.value_and_grad(loss)) == (
        "value_and_grad",
        loss,
    )
    assert crec.transformed_user_function(jax.vmap(loss)) == ("vmap", loss)
    assert crec.transformed_user_function(jax.jacrev(loss)) == ("jacobian", loss)
    assert crec.transformed_user_function(jax.checkpoint(loss)) == ("checkpoint", loss)
    assert crec.transformed_user_function(jnp.sum) is None  # JAX's own
    assert crec.transformed_user_function(loss) is None


def _jitted_of_next_miss(call):
    """The function JAX jits for the first cache miss ``call`` makes."""
    seen = []
    hooks = crec.MissHooks(
        on_start=lambda fun, ji, args, kwargs: seen.append(fun),
        on_end=lambda fun, err: None,
        on_test_event=lambda what: None,
        on_duration=lambda s: None,
    )
    hooks.install()
    try:
        call()
    finally:
        hooks.uninstall()
    return seen


def test_eager_primitive_names_the_loop_and_the_functions_it_runs():
    def cond(c):
        return c < 3.0

    def body(c):
        return c + 1.0

    funs = _jitted_of_next_miss(lambda: jax.lax.while_loop(cond, body, 0.0))
    found = [crec.eager_primitive(f) for f in funs]
    loops = [e for e in found if e is not None]
    assert [e.api for e in loops] == ["lax.while_loop"]
    assert [b[0] for b in loops[0].bodies] == ["cond", "body"]
    assert loops[0].bodies[1][2] == body.__code__.co_firstlineno
    # an elementwise op outside jit, and a user's jit, are not eager loops
    funs = _jitted_of_next_miss(lambda: jnp.sin(jnp.arange(7.0)))
    assert funs and all(crec.eager_primitive(f) is None for f in funs)
    assert crec.eager_primitive(jax.jit(body)) is None


def test_lowered_input_types_lists_compiled_traces_not_looks():
    def lowered_fn(x):
        return x * 5

    f = jax.jit(lowered_fn)
    f.trace(jnp.ones((2, 3)))  # a look: traced, never lowered
    f(jnp.ones((4, 3)))
    info = f"lowered_fn at {__file__}:{lowered_fn.__code__.co_firstlineno}"
    assert crec.lowered_input_types(info) == [(("4,3", "f32", False),)]
    assert crec.lowered_input_types("") is None


def test_pmap_in_tree_rebuilds_the_users_arguments():
    from jaxscope.compat import libraries as clib

    def in_tree_fn(params, xs):
        return params["w"] * xs

    calls = []

    def on_start(fun, jit_info, args, kwargs):  # read while the miss runs
        if crec.pmap_user_function(fun) is in_tree_fn:
            calls.append(
                (crec.pmap_in_tree(fun), clib.pmap_call(in_tree_fn, fun, args))
            )

    hooks = crec.MissHooks(on_start, lambda f, e: None, lambda w: None, lambda s: None)
    hooks.install()
    try:
        jax.pmap(in_tree_fn)({"w": jnp.ones((2, 3))}, jnp.ones((2, 3)))
    finally:
        hooks.uninstall()
    ((tree, call),) = calls
    assert tree is not None and tree.num_leaves == 2
    assert call is not None and call.api == "jax.pmap"
    assert (
        jax.tree.structure(call.args) == jax.tree.structure(({"w": 0}, 0))
        and call.kwargs == {}
    )
    assert crec.pmap_in_tree(jax.jit(in_tree_fn)) is None
