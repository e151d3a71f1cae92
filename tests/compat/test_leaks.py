"""The private hooks behind check_leaks, each on a real program (jax 0.9.0 and 0.10.2)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxscope.compat import leaks as cl

kept: list = []


@pytest.fixture(autouse=True)
def _clear():
    kept.clear()
    yield
    kept.clear()


def _make():
    """A fresh leaky function each time: a cached trace would not run Python again."""

    def leaky(x):
        y = jnp.sin(x) * 2  # L:compat
        kept.append(y)
        return y

    return leaky


def _line() -> int:
    with open(__file__, encoding="utf-8") as fh:
        return next(i for i, t in enumerate(fh, 1) if t.rstrip().endswith("# L:compat"))


def test_tracer_type_aval_and_trace_of_a_jit_tracer():
    jax.jit(_make())(jnp.ones(3))
    (t,) = kept
    assert isinstance(t, cl.tracer_type())
    assert cl.aval_str(t) == "f32[3]"
    assert type(cl.trace_of(t)).__name__ == "DynamicJaxprTrace"


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (lambda: jax.jit(_make())(1.0), "jit"),
        (lambda: jax.vmap(_make())(jnp.ones(2)), "vmap"),
        (lambda: jax.jvp(_make(), (1.0,), (1.0,)), "jvp"),
        (lambda: jax.grad(_make())(1.0), "grad"),
        (lambda: jax.lax.cond(True, _make(), _make(), 1.0), "cond"),
    ],
)
def test_transformation_of_names_the_transformation(run, expected):
    run()
    assert cl.transformation_of(kept[0]) == expected


def test_pmap_on_stack_inside_pmap_only():
    seen = []

    def f(x):
        seen.append(cl.pmap_on_stack())
        return x

    jax.pmap(f)(jnp.ones(1))
    jax.jit(f)(1.0)
    assert seen == [True, False]


def test_transformation_of_a_pmap_tracer_with_the_pmap_hint():
    jax.pmap(_make())(jnp.ones(1))
    assert cl.transformation_of(kept[0], "pmap") == "pmap"


def test_transformation_of_prefers_the_hint_for_linearize_traces():
    jax.vjp(_make(), 1.0)
    assert cl.transformation_of(kept[0], "vjp") == "vjp"


def test_traced_function_names_the_function_and_its_file():
    jax.jit(_make())(1.0)
    assert cl.traced_function(kept[0]).startswith("leaky at ")
    assert __file__ in cl.traced_function(kept[0])


def test_creation_traceback_of_jit_and_grad_tracers_points_at_the_line():
    from jaxscope._source import loc_of_traceback

    jax.jit(_make())(1.0)
    jax.grad(_make())(1.0)
    for t in kept:
        loc = loc_of_traceback(cl.creation_traceback(t))
        assert loc is not None and loc.line == _line()


def test_creation_traceback_of_a_vmap_argument_is_the_vmap_call():
    from jaxscope._source import loc_of_traceback

    jax.vmap(lambda x: kept.append(x) or x)(jnp.ones(2))  # L:vmap-arg
    loc = loc_of_traceback(cl.creation_traceback(kept[0]))
    with open(__file__, encoding="utf-8") as fh:
        line = next(
            i for i, t in enumerate(fh, 1) if t.rstrip().endswith("# L:vmap-arg")
        )
    assert loc is not None and loc.line == line


def test_current_traceback_is_a_jax_traceback_of_this_line():
    from jaxscope._source import loc_of_traceback

    loc = loc_of_traceback(cl.current_traceback())
    assert loc is not None and loc.file == __file__


def test_is_argument_tells_arguments_from_intermediates():
    def f(x):
        kept.append(x)
        kept.append(jnp.sin(x))
        return x

    jax.jit(f)(1.0)
    assert [cl.is_argument(t) for t in kept] == [True, False]


def test_is_jax_internal():
    jax.jit(_make())(1.0)
    assert cl.is_jax_internal(kept[0])
    assert not cl.is_jax_internal([1])
    assert not cl.is_jax_internal(object())


def _install(active=lambda: True, ended=None, bodies=None):
    return cl.install_trace_hooks(
        active,
        (lambda trace: ended.append(type(trace).__name__))
        if ended is not None
        else (lambda trace: None),
        cl.unchecked_trace_types(),
        (
            lambda trace: bodies.append(
                (type(trace).__name__, cl.api_transformation_on_stack())
            )
        )
        if bodies is not None
        else (lambda trace: None),
    )


def test_trace_end_hook_sees_a_leaking_trace_without_jax_config():
    ended = []
    undo = _install(ended=ended)
    try:
        jax.jit(_make())(1.0)
        jax.jit(lambda x: x + 1)(1.0)  # clean: the trace is gone when it ends
        jax.vmap(_make())(jnp.ones(2))
    finally:
        undo()
    assert ended == ["DynamicJaxprTrace", "BatchTrace"]
    assert jax.config.jax_check_tracer_leaks is False


def test_trace_end_hook_invalidates_the_trace_so_a_leaked_tracer_fails_when_used():
    undo = _install()
    try:
        jax.jit(_make())(1.0)
    finally:
        undo()
    with pytest.raises(jax.errors.UnexpectedTracerError):
        kept[0] + 1


def test_trace_end_hook_leaves_jax_alone_where_inactive():
    ended = []
    undo = _install(active=lambda: False, ended=ended)
    try:
        jax.jit(_make())(1.0)
        with pytest.raises(Exception, match="Leaked"), jax.checking_leaks():
            jax.jit(lambda x: _make()(x) + 1)(1.0)  # JAX's own check still raises
    finally:
        undo()
    assert ended == []


def test_trace_end_hook_sees_a_checked_set_current_trace_left_alive():
    """Linearize sub-traces and remat end in ``set_current_trace(t, check_leaks=True)``;
    one still referred to when it exits is reported (here: by this frame)."""
    from jax._src import core

    ended = []
    undo = _install(ended=ended)
    try:
        trace = core.EvalTrace()
        with core.set_current_trace(trace, check_leaks=True):
            pass
        unchecked = core.EvalTrace()
        with core.set_current_trace(unchecked):
            pass
    finally:
        undo()
    assert ended == ["EvalTrace"]
    assert not trace.is_valid() and unchecked.is_valid()


def test_closure_convert_skips_its_cache_only_while_active():
    from jax._src import custom_derivatives as cd

    def outer(x):
        fn, consts = jax.closure_convert(lambda y: y * x, 1.0)
        return fn(2.0, *consts)

    cached = cd._closure_convert_for_avals
    on = [True]
    undo = cl.install_uncached_closure_convert(lambda: on[0])
    try:
        before = cached.cache_info().currsize
        jax.jit(outer)(3.0)
        assert cached.cache_info().currsize == before
        on[0] = False
        jax.jit(lambda x: outer(x) + 1)(3.0)
        assert cached.cache_info().currsize == before + 1
    finally:
        undo()
    assert cd._closure_convert_for_avals is cached


def test_escape_hook_prefixes_the_unexpected_tracer_error():
    jax.jit(_make())(1.0)
    seen = []
    undo = cl.install_escape_hook(lambda t: seen.append(cl.aval_str(t)) or "PREFIX")
    try:
        with pytest.raises(jax.errors.UnexpectedTracerError) as info:
            kept[0] + 1
    finally:
        undo()
    assert str(info.value).startswith("PREFIX\nEncountered an unexpected tracer")
    assert seen == ["f32[]"]


def test_body_end_hook_fires_once_after_a_jvp_and_a_grad_body():
    ended = []
    undo = _install(bodies=ended)
    try:
        jax.jvp(_make(), (1.0,), (1.0,))
        jax.grad(_make())(1.0)
    finally:
        undo()
    assert ended == [("JVPTrace", "jvp"), ("LinearizeTrace", "grad")]


def test_hooks_are_undone():
    from jax._src import core

    before = (core.ensure_no_leaks, core.set_current_trace)
    _install()()
    assert (core.ensure_no_leaks, core.set_current_trace) == before


def test_creation_hook_sees_jvp_tracers_and_is_undone():
    made = []
    types_ = cl.tracer_types_without_line_info()
    assert any(t.__name__ == "JVPTracer" for t in types_)
    undo = cl.install_creation_hook(types_, lambda t: made.append(type(t).__name__))
    try:
        jax.jvp(_make(), (1.0,), (1.0,))
    finally:
        undo()
    assert "JVPTracer" in made
    count = len(made)
    jax.jvp(_make(), (1.0,), (1.0,))
    assert len(made) == count


def test_api_transformation_on_stack_is_none_outside_jax():
    def probe():
        return cl.api_transformation_on_stack()

    assert probe() is None


def test_trace_is_valid_while_the_trace_runs():
    seen = []

    def f(x):
        seen.append(cl.trace_is_valid(cl.trace_of(x)))
        return x

    jax.jit(f)(1.0)
    assert seen == [True]
    assert cl.trace_is_valid(object()) is True


def test_misuse_hook_prefixes_conversion_errors_and_is_undone():
    jax.jit(_make())(1.0)
    seen = []
    undo = cl.install_misuse_hook(lambda t: seen.append(cl.aval_str(t)) or "PREFIX")
    try:
        with pytest.raises(jax.errors.ConcretizationTypeError) as info:
            float(kept[0])
    finally:
        undo()
    assert str(info.value).startswith("PREFIX\n")
    assert seen == ["f32[]"]
    with pytest.raises(jax.errors.ConcretizationTypeError) as info:
        float(kept[0])
    assert not str(info.value).startswith("PREFIX")


def test_pytree_static_data_is_a_treedef_or_a_static_argument_wrapper():
    from jax._src import tree_util

    treedef = jax.tree_util.tree_structure({"a": 1})
    assert cl.is_pytree_static_data(treedef)
    assert cl.is_pytree_static_data(tree_util.Static(3))
    assert not cl.is_pytree_static_data((1, 2))
    assert not cl.is_pytree_static_data(jnp.ones(2))


def test_an_nnx_graph_names_the_module_path_of_each_static_attribute():
    nnx = pytest.importorskip("flax.nnx")

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(2, 2, rngs=rngs)
            self.tag = "block"

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([Block(rngs)])
            self.name = "net"

    graphdef, _ = nnx.split(Net(nnx.Rngs(0)))
    attributes = cl.nnx_graph_attributes(graphdef)
    assert attributes is not None
    paths = {}
    for i, (_key, kind) in enumerate(attributes):
        if cl.is_nnx_static(kind):
            paths[kind.value] = cl.nnx_graph_path(graphdef, i)
    assert paths["net"] == [("Net", "name")]
    assert paths["block"] == [("Net", "layers"), ("List", "0"), ("Block", "tag")]
    assert cl.nnx_graph_attributes([]) is None
    assert cl.nnx_graph_path(object(), 0) is None


def test_a_partial_eval_trace_is_named_by_the_library_transformation_running_it():
    linen = pytest.importorskip("flax.linen")
    seen: list = []

    class Cell(linen.Module):
        @linen.compact
        def __call__(self, carry, x):
            trace = cl.trace_of(carry)
            seen.append(
                (
                    cl.is_partial_eval_trace(trace),
                    cl.partial_eval_transformation_on_stack(),
                )
            )
            return carry + x, x

    class Model(linen.Module):
        @linen.compact
        def __call__(self, xs):
            return linen.scan(Cell, variable_broadcast="params")()(jnp.zeros(2), xs)

    Model().init(jax.random.key(0), jnp.ones((3, 2)))
    assert seen[0] == (True, "scan")  # nn.scan's first pass: partial evaluation
    assert seen[1][0] is False  # then lax.scan's own trace
    assert cl.partial_eval_transformation_on_stack() is None
