"""js.jaxpr's errors: one line, naming the argument, the problem and the fix."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._source import short_path

X = jnp.ones(3)


def one_line(info) -> str:
    message = str(info.value)
    assert "\n" not in message, message
    return message


def takes(x, label):
    return x


def avals(binders):
    return [aval for _, aval in binders]


def test_not_a_callable():
    with pytest.raises(js.InvalidCallError) as info:
        js.jaxpr(42)
    assert one_line(info) == (
        "js.jaxpr expects a callable; got int 42: pass the function itself, "
        "e.g. js.jaxpr(f)(x)"
    )


def test_python_data_arguments_are_static_as_their_users_mean_them():
    # a shape, axes, a mode, a dtype: traced they would fail (`Shapes must be 1D
    # sequences of concrete values`); JAX users pass them as constants
    reshape = js.jaxpr(jnp.reshape)(jnp.ones(1024), (32, 32))
    assert [e.primitive for e in reshape.eqns] == ["reshape"]
    assert reshape.eqns[0].params["new_sizes"] == "(32, 32)"
    assert len(avals(reshape.top.invars)) == 1
    summed = js.jaxpr(jnp.sum)(jnp.ones((2, 3)), axis=(0, 1))
    assert summed.eqns[0].params["axes"] == "(0, 1)"
    zeros = js.jaxpr(jnp.zeros)((3,), jnp.float16)
    assert avals(zeros.top.outvars) == ["f16[3]"]
    padded = js.jaxpr(jnp.pad)(X, ((1, 2),), mode="edge")
    assert avals(padded.top.outvars) == ["f32[6]"]
    assert avals(js.jaxpr(takes)(X, "hello").top.invars) == ["f32[3]"]


def test_python_numbers_are_traced_as_jax_jit_traces_them():
    view = js.jaxpr(lambda x, scale, shift: x * scale + sum(shift))(X, 2.0, (1.0, 2))
    assert avals(view.top.invars) == ["f32[3]", "f32[]", "f32[]", "i32[]"]


def test_an_unhashable_argument_jax_cannot_trace_names_it_and_suggests_static():
    with pytest.raises(js.InvalidCallError) as info:
        js.jaxpr(takes)(X, ["a", "b"])
    assert one_line(info) == (
        "label[0] is a str ('a'), which JAX cannot trace; pass it as a static "
        "argument (js.jaxpr(takes, static_argnums=(1,))(...)) or convert it to an array"
    )


def test_object_inside_a_pytree_names_its_path():
    with pytest.raises(js.InvalidCallError) as info:
        js.jaxpr(takes)({"w": X, "cfg": object()}, 1.0)
    assert one_line(info).startswith("x['cfg'] is an object (<object object at")


def test_keyword_argument_suggests_static_argnames():
    with pytest.raises(js.InvalidCallError) as info:
        js.jaxpr(takes)(X, label=["hi"])
    assert "label (keyword)[0] is a str ('hi')" in one_line(info)
    assert "js.jaxpr(takes, static_argnames=('label',))(...)" in one_line(info)


def test_static_argnums_out_of_range():
    with pytest.raises(js.InvalidCallError) as info:
        js.jaxpr(takes, static_argnums=3)(X, 1.0)
    assert one_line(info) == (
        "static_argnums=(3,) but the call has 2 positional argument(s); use an index "
        "below 2 or static_argnames for keyword arguments"
    )


def test_static_argnums_not_an_int():
    with pytest.raises(js.InvalidCallError) as info:
        js.jaxpr(takes, static_argnums=("label",))(X, 1.0)
    assert "static_argnums must be ints, got 'label'" in one_line(info)


def raises_inside(x):
    _ = x * 2
    raise KeyError("missing key")  # the raising line


def test_function_raising_while_traced_names_its_line():
    with pytest.raises(js.TraceError) as info:
        js.jaxpr(raises_inside)(X)
    lines, start = inspect.getsourcelines(raises_inside)
    line = start + next(i for i, t in enumerate(lines) if "the raising line" in t)
    message = one_line(info)
    assert message == (
        f"raises_inside raised KeyError at {short_path(__file__)}:{line} while being "
        "traced: "
        "'missing key'"
    )
    assert isinstance(info.value.__cause__, KeyError)


def branchy(x, n):
    if n > 2:  # value-dependent
        return x * n
    return x


def test_value_dependent_control_flow_suggests_the_right_static_index():
    with pytest.raises(js.TraceError) as info:
        js.jaxpr(branchy)(X, 3)
    message = one_line(info)
    assert "TracerBoolConversionError" in message
    assert "depends on the value of argument n" in message
    assert "js.jaxpr(branchy, static_argnums=(1,))(...)" in message
    assert "lax.cond / jnp.where" in message
    ok = js.jaxpr(branchy, static_argnums=1)(X, 3)
    assert [e.primitive for e in ok.eqns] == ["mul"]


def test_value_dependent_keyword_suggests_static_argnames():
    def kw_only(x, *, n):
        return x if n > 0 else -x

    with pytest.raises(js.TraceError) as info:
        js.jaxpr(kw_only)(X, n=1)
    assert "static_argnames=('n',)" in one_line(info)


def test_errors_are_jaxscope_errors_and_builtins():
    with pytest.raises(ValueError):
        js.jaxpr(takes)(X, ["s"])
    with pytest.raises(RuntimeError):
        js.jaxpr(raises_inside)(X)


def test_control_flow_inside_an_inner_jitted_function_points_at_it():
    import jax

    @jax.jit
    def inner(y, k):
        return y if k > 0 else -y

    def outer(x, n):
        return inner(x, n)

    with pytest.raises(js.TraceError) as info:
        js.jaxpr(outer)(X, 2)
    message = one_line(info)
    assert (
        "Python control flow in inner depends on the value of its argument k" in message
    )
    assert "jax.jit(inner, static_argnames=('k',))" in message


def test_control_flow_on_a_pytree_leaf_suggests_its_root_argument():
    def tree(p, x):
        return x if p["w"] > 0 else -x

    with pytest.raises(js.TraceError) as info:
        js.jaxpr(tree)({"w": 1.0}, X)
    message = one_line(info)
    assert "depends on the value of argument p['w']" in message
    # a dict cannot be static (static_argnums=(0,) would fail when pasted)
    assert "p is a dict (not hashable), which cannot be static" in message
    assert "static_argnums" not in message


def test_control_flow_on_several_array_arguments_is_not_told_static():
    def clipped(params, x, max_loss):
        loss = jnp.sum(x * params["w"])
        if loss > max_loss:
            return max_loss
        return loss

    with pytest.raises(js.TraceError) as info:
        js.jaxpr(clipped)({"w": X}, X, 1.0)
    message = one_line(info)
    assert "depends on params, x, which cannot be static" in message
    assert "static argument" not in message


@pytest.mark.skipif(
    jax.__version_info__ < (0, 10),
    reason="jax 0.9 traces an unhashable static argument without complaint",
)
def test_a_static_argument_holding_arrays_is_told_to_be_traced():
    def scale(params, x):
        return x * params[0]

    with pytest.raises(js.TraceError) as info:
        js.jaxpr(scale, static_argnums=(0,))([X], X)
    message = one_line(info)
    assert "arrays cannot be static: drop it from the static arguments" in message
    assert "tuple instead of a list" not in message
