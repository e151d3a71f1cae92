"""step / next / finish / run semantics, frames, values, breakpoints, find_nan, errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxscope as js
from jaxscope import BreakpointError, StepperFinishedError


@jax.jit
def inner(x):
    y = jnp.sin(x)
    return y * 2


def outer(x):
    y = inner(x) + 1.0
    c, ys = lax.scan(lambda c, v: (c + v, c * v), 0.0, y)
    return c - ys.sum()


LINE = outer.__code__.co_firstlineno  # "def outer" line
X = jnp.arange(3.0)


def test_paused_before_the_first_equation_with_paths_and_names_of_js_jaxpr():
    s = js.step(outer)(X)
    view = js.jaxpr(outer)(X)
    assert not s.done
    assert s.current == view.eqns[0]
    assert s.current.primitive == "jit" and s.current.path == (0,)
    assert list(s.values) == ["a"]
    assert [f.label for f in s.frames] == ["outer"]


def test_step_enters_a_jit_body_and_binds_its_inputs():
    s = js.step(outer)(X).step()
    assert s.current.primitive == "sin"
    assert s.current.path == (0, 0, 0)
    assert [f.label for f in s.frames] == ["outer", "jit(inner)"]
    inner_in = js.jaxpr(outer)(X).eqns[1].inputs[0][0]
    np.testing.assert_array_equal(s.values[inner_in], X)
    assert s.current.source.line == inner.__wrapped__.__code__.co_firstlineno + 2


def test_next_steps_over_a_nested_jaxpr():
    s = js.step(outer)(X).next()
    assert s.current.primitive == "add"
    assert len(s.frames) == 1
    out_name = js.jaxpr(outer)(X).eqns[0].outputs[0][0]
    np.testing.assert_allclose(
        s.values[out_name], np.sin(np.arange(3.0)) * 2, rtol=1e-6
    )


def test_finish_returns_to_the_parents_next_equation():
    s = js.step(outer)(X).step()
    s.finish()
    assert s.current.primitive == "add" and len(s.frames) == 1


def test_scan_body_is_stepped_per_iteration_with_the_iteration_index():
    s = js.step(outer)(X).run(until="scan").step()
    _top, body = s.frames
    assert body.label == "scan body" and body.iteration == 0 and body.length == 3
    assert body.call.primitive == "scan"
    s.finish()  # one finish leaves the whole loop, not one iteration
    assert s.current.primitive == "reduce_sum" and len(s.frames) == 1
    s = js.step(outer)(X).run(until="scan").step()
    seen = []
    while len(s.frames) > 1:
        seen.append(s.frames[-1].iteration)
        s.next()
    assert sorted(set(seen)) == [0, 1, 2]


def test_while_loop_cond_and_body_frames_count_iterations():
    def f(x):
        return lax.while_loop(lambda v: v < 10, lambda v: v * 2, x)

    s = js.step(f)(jnp.int32(1)).step()
    labels = []
    while not s.done:
        if len(s.frames) > 1:
            labels.append((s.frames[-1].label, s.frames[-1].iteration))
        s.step()
    assert ("while cond", 0) in labels and ("while body", 3) in labels
    assert ("while cond", 4) in labels and ("while body", 4) not in labels
    assert int(s.result) == 16


def test_cond_enters_only_the_taken_branch():
    def f(x):
        return lax.cond(x > 0, lambda v: jnp.sin(v), lambda v: jnp.cos(v), x)

    s = js.step(f)(jnp.float32(-1.0)).run(until="cond").step()
    assert s.frames[-1].label == "cond branch 0"
    assert s.current.primitive == "cos"


def test_run_to_the_end_then_every_command_is_a_clear_error():
    s = js.step(outer)(X).run()
    assert s.done and s.current is None and s.reason == "done"
    np.testing.assert_array_equal(s.result, jax.jit(outer)(X))
    for command in (s.step, s.next, s.finish, s.run):
        with pytest.raises(
            StepperFinishedError, match=r"the program has finished .*js.step"
        ):
            command()


def test_result_before_the_end_is_an_error():
    with pytest.raises(StepperFinishedError, match="not finished yet; call run"):
        _ = js.step(outer)(X).result


def test_run_until_a_line_number_file_line_sourceloc_and_callable():
    view = js.jaxpr(outer)(X)
    scan_eqn = next(e for e in view.eqns if e.primitive == "scan")
    line = scan_eqn.source.line
    for target in (line, f"{scan_eqn.source.file}:{line}", scan_eqn.source):
        s = js.step(outer)(X).run(until=target)
        assert s.current == scan_eqn and s.reason == "until"
    s = js.step(outer)(X).run(
        until=lambda eqn, values: eqn.primitive == "mul" and len(values) > 1
    )
    assert s.current.primitive == "mul"


def test_line_breakpoint_stops_once_per_line_and_again_in_each_loop_iteration():
    body_line = LINE + 2
    s = js.step(outer)(X).break_on(line=body_line).run()
    stops = []
    while not s.done:
        stops.append((s.current.source.line, s.frames[-1].iteration))
        s.run()
    # the scan equation itself, then the first equation of each iteration's body
    assert stops == [(body_line, None), (body_line, 0), (body_line, 1), (body_line, 2)]


def test_primitive_breakpoint():
    s = js.step(outer)(X).break_on(primitive="mul").run()
    assert s.current.primitive == "mul" and s.reason == "breakpoint"
    assert [f.label for f in s.frames] == ["outer", "jit(inner)"]


def test_unknown_breakpoint_line_names_the_lines_with_equations():
    s = js.step(outer)(X)
    with pytest.raises(
        BreakpointError,
        match=rf"no equation at line 9999; lines with equations: .*{LINE + 1}",
    ):
        s.break_on(line=9999)
    with pytest.raises(
        BreakpointError,
        match=r"no 'cosh' equation in this program; primitives present: .*sin",
    ):
        s.break_on(primitive="cosh")
    with pytest.raises(BreakpointError, match="must be a line number"):
        s.run(until=3.5)
    assert isinstance(BreakpointError("x"), ValueError)


def _nan_fn(x):
    a = x * 2.0
    b = jnp.log(a - 1.0)
    return jnp.sum(b * 3.0)


def test_nan_break_stops_right_after_the_producing_equation():
    s = js.step(_nan_fn)(jnp.array([1.0, 0.0])).break_on(nan=True).run()
    assert s.reason == "nan" and s.stopped_after
    assert s.current.primitive == "log"
    assert s.current.source.line == _nan_fn.__code__.co_firstlineno + 2
    out = s.current.outputs[0][0]
    assert np.isnan(np.asarray(s.values[out])).any()
    s.run()  # downstream equations only propagate the NaN: no more breaks
    assert s.done


def test_inf_break_and_nan_inside_a_scan_iteration():
    def f(xs):
        return lax.scan(lambda c, x: (c + 1.0 / x, c), 0.0, xs)

    s = js.step(f)(jnp.array([1.0, 2.0, 0.0])).break_on(inf=True).run()
    assert s.reason == "inf" and s.current.primitive == "div"
    assert s.frames[-1].label == "scan body" and s.frames[-1].iteration == 2


def test_find_nan_returns_the_equation_its_inputs_and_frames():
    found = js.find_nan(_nan_fn)(jnp.array([1.0, 0.0]))
    assert found.primitive == "log" and found.kind == "nan"
    assert found.source.line == _nan_fn.__code__.co_firstlineno + 2
    assert found.inputs[0].min == -1.0 and found.inputs[0].nan_count == 0
    assert found.outputs[0].nan_count == 1
    assert found.frames[0].label == "_nan_fn"
    assert js.find_nan(_nan_fn)(jnp.array([1.0, 2.0])) is None


def test_find_nan_ignores_infs_when_asked():
    f = lambda x: jnp.sqrt(1.0 / x - 2.0)  # noqa: E731
    assert js.find_nan(f)(jnp.array([0.0, 1.0])).kind == "inf"
    found = js.find_nan(f, inf=False)(jnp.array([0.0, 1.0]))
    assert found.kind == "nan" and found.primitive == "sqrt"


def test_a_function_that_cannot_be_traced_is_a_one_line_error():
    def bad(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(
        js.TraceError, match="bad raised TracerBoolConversionError"
    ) as info:
        js.step(bad)(jnp.float32(1.0))
    assert "\n" not in str(info.value)
    with pytest.raises(js.InvalidCallError, match=r"js.step expects a callable"):
        js.step(3)
    with pytest.raises(js.InvalidCallError, match="needs concrete values"):
        js.step(jnp.sin)(jax.ShapeDtypeStruct((3,), jnp.float32))


def test_an_equation_that_raises_stops_the_stepper_with_its_line():
    def cb(x):
        raise ValueError("boom")

    def f(x):
        return jax.pure_callback(cb, jax.ShapeDtypeStruct((), jnp.float32), x)

    s = js.step(f)(jnp.float32(1.0))
    with pytest.raises(js.JaxscopeError, match=r"equation pure_callback .* raised"):
        s.run()
    assert s.done
    with pytest.raises(StepperFinishedError, match="has failed"):
        s.step()


def test_values_hold_every_variable_defined_so_far_in_the_frame():
    s = js.step(outer)(X)
    s.next()
    s.next()
    view = js.jaxpr(outer)(X)
    names = {
        view.eqns[0].inputs[0][0],
        view.eqns[0].outputs[0][0],
        view.eqns[3].outputs[0][0],
    }
    assert names <= set(s.values)
    assert s.arg_names == {"a": "x"}


def test_values_table_names_arguments_and_results_by_the_users_names():
    def f(params, x):
        return {"out": params["w"] * x}

    s = js.step(f)({"w": jnp.ones(2)}, jnp.arange(2.0))
    assert s.user_names == {"a": "params['w']", "b": "x", "c": "result['out']"}
    assert [v.label for v in s.summaries()] == ["params['w'] (a)", "x (b)"]
    s.run()
    assert [v.label for v in s.summaries()][-1] == "result['out'] (c)"
    s = js.step(f)({"w": jnp.ones(2)}, jnp.arange(2.0))
    assert s.user_names and s.break_on(primitive="mul").frames[0].label == "f"


def test_an_error_inside_a_loop_body_names_the_nested_equation_and_frames_unwind():
    def cb(x):
        raise ValueError("bad value")

    def f(x):
        def body(v):
            return jax.pure_callback(cb, jax.ShapeDtypeStruct((), jnp.float32), v)

        return lax.while_loop(lambda v: v < 3.0, body, x)

    s = js.step(f)(jnp.float32(0.0))
    with pytest.raises(
        js.JaxscopeError,
        match=r"equation pure_callback \(path \(0, 1, 0\)\) at .*test_stepping.py:\d+ raised",
    ):
        s.run()
    assert s.done and s.frames == [] and s.reason == "error"


def test_until_and_break_accept_a_basename_and_a_line():
    line = LINE + 2
    s = js.step(outer)(X).run(until=f"test_stepping.py:{line}")
    assert s.current.primitive == "scan"
    with pytest.raises(
        BreakpointError,
        match=r"no equation at line 1 of other.py; lines with equations: ",
    ):
        s.break_on(line="other.py:1")
    s.break_on(line=[line + 1, LINE + 1])
    assert s.breakpoints["lines"] == sorted([str(line + 1), str(LINE + 1)])
    s.clear_breakpoints(line + 1)
    assert s.breakpoints["lines"] == [str(LINE + 1)]
    s.clear_breakpoints()
    assert s.breakpoints == {
        "lines": [],
        "conditions": {},
        "primitives": [],
        "nan": False,
        "inf": False,
    }


def test_a_jitted_function_is_stepped_inside_its_body():
    s = js.step(jax.jit(outer))(X)
    assert [f.label for f in s.frames] == ["outer"]
    assert s.current.primitive == "jit" and s.current.path == (0,)
    assert s.current == js.jaxpr(jax.jit(outer))(X).eqns[0]
    np.testing.assert_array_equal(s.run().result, jax.jit(outer)(X))


def test_finish_at_the_top_level_runs_to_the_end():
    s = js.step(outer)(X).finish()
    assert s.done and s.reason == "done"
