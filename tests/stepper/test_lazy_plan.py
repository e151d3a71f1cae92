"""The lazily built plan describes every equation exactly as ``js.jaxpr`` does, and
building a stepper maps no source line until one is shown or checked."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

import jaxscope as js
from jaxscope._source import is_library_file


def _cases(programs):
    key = jax.random.PRNGKey(0)
    params = programs.mlp_init(key)
    rnn_params = {"wh": jnp.eye(3) * 0.5, "wx": jnp.ones((2, 3)) * 0.1}
    return [
        (programs.train_step, (params, jnp.ones((2, 4)), jnp.eye(3)[:2])),
        (programs.rnn, (rnn_params, jnp.ones((4, 2)))),
        (programs.newton_sqrt, (jnp.float32(2.0),)),
        (programs.branchy, (jnp.arange(3.0), 1)),
        (programs.custom_fn, (jnp.arange(3.0),)),
        (programs.vjp_fn, (jnp.arange(3.0),)),
        (programs.remat_fn, (jnp.arange(3.0),)),
        (programs.pytree_fn, ({"a": jnp.ones(2), "bc": (jnp.ones(2), jnp.ones(2))},)),
    ]


def test_every_equation_stepped_to_equals_js_jaxprs_record(programs):
    for fn, args in _cases(programs):
        view = js.jaxpr(fn)(*args)
        by_path = {info.path: info for info in view.eqns}
        stepper = js.step(fn)(*args)
        assert stepper.eqns == view.eqns, fn
        names = {n for info in view.eqns for n, _ in (*info.inputs, *info.outputs)}
        names |= {n for n, _ in view.model.top.invars}
        stepper = js.step(fn)(*args)  # fresh: infos made one by one while stepping
        while not stepper.done:
            current = stepper.current
            want = by_path[current.path]
            # Every field, those left out of == (frames...) included: the stepper
            # makes its records itself and must not drift from js.jaxpr's.
            for f in dataclasses.fields(want):
                got, expected = getattr(current, f.name), getattr(want, f.name)
                if f.name == "frames":  # up to this test's own call sites: jax 0.9
                    # answers the second trace from its cache, with the first's stack
                    got, expected = (
                        _outside_this_test(got),
                        _outside_this_test(expected),
                    )
                assert got == expected, (fn, current.path, f.name)
            assert set(stepper.values) <= names, fn
            stepper.step()


def _outside_this_test(frames):
    # jax 0.9's cached stack also holds the test runner's frames (site-packages)
    return tuple(
        frame
        for frame in frames
        if frame.file != __file__ and not is_library_file(frame.file)
    )


def test_building_a_stepper_maps_no_source_line_until_asked():
    def long(x):
        for _ in range(50):
            x = jnp.sin(x) * 1.5
        return x

    s = js.step(long)(jnp.ones(3))
    plan = s._interpreter.plan
    made = [node for node in plan.nodes if node._info is not None]
    assert made == []
    s.run()
    assert [node for node in plan.nodes if node._info is not None] == []
    np.testing.assert_array_equal(s.result, jax.jit(long)(jnp.ones(3)))


def test_a_line_breakpoint_still_stops_at_the_first_equation_of_the_line():
    def f(x):
        y = jnp.sin(x)
        z = jnp.cos(y) * 2.0
        return z + y

    line = f.__code__.co_firstlineno + 2
    s = js.step(f)(jnp.ones(2)).break_on(line=line).run()
    assert s.reason == "breakpoint"
    assert s.current.primitive == "cos" and s.current.source.line == line
