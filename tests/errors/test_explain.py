"""``js.explain`` on real JAX errors: the user's line, the kind, a fix in the user's names."""

from __future__ import annotations

import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxscope as js
from jaxscope import ErrorReport, InvalidCallError, SourceLoc
from jaxscope._format import format_bytes
from jaxscope._source import short_path

# --------------------------------------------------------------------------- programs


def clip_if(x, limit):
    if limit > 0:  # <- error
        return jnp.minimum(x, limit)
    return x


def scale(x, *, mode):
    if mode > 1:  # <- error
        return x * 2
    return x


def either(x, y):
    if x + y > 0:  # <- error
        return x
    return y


def cumulative(xs):
    def body(carry, v):
        if carry > 0:  # <- error
            carry = carry + v
        return carry, carry

    return lax.scan(body, 0.0, xs)


def branchy(p, x):
    return lax.cond(p, lambda y: y if y > 0 else -y, lambda y: y, x)  # <- error


def relu(x):
    if x > 0:  # <- error
        return x
    return 0.0 * x


def make_range(x, n):
    return jnp.arange(n) + x  # <- error


def pick(x, i):
    return (1.0, 2.0, 3.0)[i] * x  # <- error


def numpy_sin(x):
    return np.sin(x) + 1.0  # <- error


def positives(x):
    return x[x > 0]  # <- error


def model(x, w):
    h = jnp.tanh(x)  # <- h
    return h @ w  # <- error


def add_bias(a, b):
    return a + b  # <- error


def add_ints(a, b):
    return lax.add(a, b)  # <- error


def set_first(x):
    x[0] = 1.0  # <- error
    return x


def bump(x):
    x[1] += 2.0  # <- error
    return x


def safe_log(x):
    y = jnp.log(x)  # <- error
    return y * 2.0


def scan_log(xs):
    def body(carry, v):
        y = jnp.log(v)  # <- error
        return carry + y, y

    return lax.scan(body, 0.0, xs)


def sqrt_times_zero(x):
    return jnp.sqrt(x) * 0.0  # <- error


def branches(p, x):
    return lax.cond(p, lambda y: y, lambda y: y[:2], x)  # <- error


def reshape_35(x):
    return x.reshape(5, 7)  # <- error


def batched_add(a, b):
    return jax.vmap(lambda u, v: u + v)(a, b)  # <- error


def join(a, b):
    return jnp.concatenate([a, b], axis=1)  # <- error


def times_two(x):
    return x * 2


def loop(x):
    return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)  # <- error


def huge(x):
    return jnp.ones((1 << 24, 1 << 24), jnp.float32) * x  # <- error


_STORE = []


_HELD = []


def holds(x):
    _HELD.append(x * 2.0)
    return x


def use_leaked():
    def leaky(x):  # a new function each call, so every call traces (and leaks) again
        _STORE.append(x * 2.0)
        return x

    _STORE.clear()
    jax.jit(leaky)(1.0)
    return _STORE[0] + 1.0  # <- error


def raises_itself(x):
    raise ValueError("bad input")  # <- error


def marker_line(fn, marker):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, t in enumerate(lines) if marker in t)


def _here(report: ErrorReport) -> str:
    assert report.user_frame is not None
    return report.user_frame.file


# --------------------------------------------------------------------------- kinds


def test_bool_conversion_under_jit_names_argument_and_its_real_index(catch, line_of):
    report = js.explain(catch(jax.jit(clip_if), jnp.ones(3), 2.0))
    assert report.kind == "TracerBoolConversionError"
    assert report.category == "bool_conversion"
    assert report.is_jax
    assert report.user_frame.line == line_of(clip_if)
    assert report.user_frame.function == "clip_if"
    assert _here(report) == __file__
    assert report.arguments == ("limit",)
    assert report.traced_function == "clip_if"
    assert report.transform == "jit"
    assert "jax.jit(clip_if, static_argnums=(1,))" in report.hint
    assert "static_argnames='limit'" in report.hint
    assert "jnp.where(limit > 0" in report.hint
    assert "lax.cond" in report.hint
    assert "`limit > 0`" in report.message


def test_bool_conversion_on_keyword_only_argument_offers_static_argnames(
    catch, line_of
):
    report = js.explain(catch(jax.jit(scale), jnp.ones(3), mode=2))
    assert report.user_frame.line == line_of(scale)
    assert report.arguments == ("mode",)
    assert "jax.jit(scale, static_argnames='mode')" in report.hint
    assert "static_argnums" not in report.hint


def test_bool_conversion_depending_on_two_arguments_marks_both(catch, line_of):
    report = js.explain(catch(jax.jit(either), 1.0, 2.0))
    assert report.user_frame.line == line_of(either)
    assert report.arguments == ("x", "y")
    assert (
        "`jax.jit(either, static_argnums=(0, 1))` (or static_argnames=('x', 'y'))"
        in report.hint
    )
    assert "depends on arguments x and y" in report.message


def test_bool_conversion_in_scan_body_suggests_where_not_static(catch, line_of):
    report = js.explain(catch(jax.jit(cumulative), jnp.ones(3)))
    assert report.kind == "TracerBoolConversionError"
    assert report.user_frame.line == line_of(cumulative)
    assert report.user_frame.function.endswith("body")
    assert report.transform == "scan"
    assert report.arguments == ("carry",)
    assert "static" not in report.hint
    assert "jnp.where(carry > 0" in report.hint
    # frames: outermost first, the innermost is the user frame
    assert report.frames[-1] == report.user_frame
    assert [f.function for f in report.frames][-2:] == [
        "cumulative",
        report.user_frame.function,
    ]


def test_bool_conversion_in_cond_branch(catch, line_of):
    report = js.explain(catch(branchy, True, 1.0))
    assert report.user_frame.line == line_of(branchy)
    assert report.transform == "cond"
    assert "jnp.where(y > 0" in report.hint


def test_bool_conversion_under_vmap_says_batched(catch, line_of):
    report = js.explain(catch(jax.vmap(relu), jnp.ones(3)))
    assert report.category == "bool_conversion"
    assert report.user_frame.line == line_of(relu)
    assert report.transform == "vmap"
    assert "vmap" in report.message
    assert "jnp.where(x > 0" in report.hint
    assert "static" not in report.hint


def test_bool_conversion_under_jit_of_grad(catch, line_of):
    report = js.explain(catch(jax.jit(jax.grad(relu)), 1.0))
    assert report.user_frame.line == line_of(relu)
    assert report.arguments == ("x",)


def test_concretization_error_names_the_argument_and_offers_static(catch, line_of):
    report = js.explain(catch(jax.jit(make_range), 1.0, 3))
    assert report.kind == "ConcretizationTypeError"
    assert report.category == "concretization"
    assert report.user_frame.line == line_of(make_range)
    assert report.arguments == ("n",)
    assert "jax.jit(make_range, static_argnums=(1,))" in report.hint
    assert "jnp.arange(n)" in report.message
    assert any("arange" in c for c in report.jax_context)


def test_integer_conversion_error(catch, line_of):
    report = js.explain(catch(jax.jit(pick), 1.0, 1))
    assert report.kind == "TracerIntegerConversionError"
    assert report.category == "int_conversion"
    assert report.user_frame.line == line_of(pick)
    assert "jax.jit(pick, static_argnums=(1,))" in report.hint
    assert "jnp.asarray" in report.hint


def test_array_conversion_error_suggests_the_jnp_function(catch, line_of):
    report = js.explain(catch(jax.jit(numpy_sin), jnp.ones(2)))
    assert report.kind == "TracerArrayConversionError"
    assert report.category == "array_conversion"
    assert report.user_frame.line == line_of(numpy_sin)
    assert "np.sin → jnp.sin" in report.hint
    assert "np.sin(x)" in report.message


def test_boolean_index_error_offers_where_and_size(catch, line_of):
    report = js.explain(catch(jax.jit(positives), jnp.ones(3)))
    assert report.kind == "NonConcreteBooleanIndexError"
    assert report.category == "bool_index"
    assert report.user_frame.line == line_of(positives)
    assert "jnp.where(x > 0, x, 0)" in report.hint
    assert "jnp.nonzero(x > 0, size=N" in report.hint


def test_matmul_shape_error_shows_both_operands_and_their_origins(catch, line_of):
    report = js.explain(catch(jax.jit(model), jnp.ones((4, 3)), jnp.ones((4, 5))))
    assert report.kind == "TypeError"
    assert report.category == "shape"
    assert report.user_frame.line == line_of(model)
    h, w = report.operands
    assert (h.expr, h.aval) == ("h", "f32[4,3]")
    assert (w.expr, w.aval) == ("w", "f32[4,5]")
    assert h.origin_loc is not None and h.origin_loc.line == line_of(model, "# <- h")
    assert w.origin == "argument w of model (position 1)"
    assert "h.T @ w" in report.hint
    assert any("(3,)" in c and "(4,)" in c for c in report.jax_context)


def test_broadcast_shape_error_eager_and_jit(catch, line_of):
    for fn in (add_bias, jax.jit(add_bias)):
        report = js.explain(catch(fn, jnp.ones((4, 3)), jnp.ones(5)))
        assert report.category == "shape"
        assert report.user_frame.line == line_of(add_bias)
        assert [o.aval for o in report.operands] == ["f32[4,3]", "f32[5]"]
        assert "a is f32[4,3] and b is f32[5]" in report.hint


def test_dtype_error_shows_dtypes_and_a_cast(catch, line_of):
    report = js.explain(catch(jax.jit(add_ints), jnp.ones(3), jnp.ones(3, jnp.int32)))
    assert report.category == "dtype"
    assert report.user_frame.line == line_of(add_ints)
    assert [o.aval for o in report.operands] == ["f32[3]", "i32[3]"]
    assert "b.astype(a.dtype)" in report.hint


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_item_assignment_suggests_at_set(catch, line_of, jit):
    fn = jax.jit(set_first) if jit else set_first
    report = js.explain(catch(fn, jnp.ones(3)))
    assert report.category == "item_assignment"
    assert report.user_frame.line == line_of(set_first)
    assert "x = x.at[0].set(1.0)" in report.hint


def test_augmented_item_assignment_suggests_at_add(catch, line_of):
    report = js.explain(catch(bump, jnp.ones(3)))
    assert report.user_frame.line == line_of(bump)
    assert "x = x.at[1].add(2.0)" in report.hint


def test_unexpected_tracer_error_names_the_leaking_function(catch, line_of):
    report = js.explain(catch(use_leaked))
    assert report.kind == "UnexpectedTracerError"
    assert report.category == "leak"
    assert report.user_frame.line == line_of(use_leaked)
    assert report.traced_function == "leaky"
    assert "leaky" in report.message
    assert "js.check_leaks()" in report.hint


def test_unexpected_tracer_error_names_where_the_tracer_is_stored(catch):
    before = jax.config.jax_traceback_filtering
    jax.config.update("jax_traceback_filtering", "tracebackhide")  # what IPython uses
    try:
        report = js.explain(catch(use_leaked))
    finally:
        jax.config.update("jax_traceback_filtering", before)
        _STORE.clear()
    assert report.category == "leak"
    assert "leaked into: global list `_STORE`[0]" in report.jax_context
    assert "stored in global list `_STORE`[0]" in report.message


def test_leak_found_by_jax_checking_leaks_names_the_holder(catch):
    def run():
        with jax.checking_leaks():
            jax.jit(holds)(1.0)

    try:
        report = js.explain(catch(run))
    finally:
        _HELD.clear()
    assert report.category == "leak"
    assert report.traced_function == "holds"
    assert "_HELD" in report.message
    assert "Return the value from holds" in report.hint


def test_debug_nans_points_at_the_nan_producing_line(catch, line_of):
    with jax.debug_nans(True):
        exc = catch(jax.jit(safe_log), -1.0)
    report = js.explain(exc)
    assert report.kind == "FloatingPointError"
    assert report.category == "nan"
    assert report.user_frame.line == line_of(safe_log)
    assert "`log` produced nan" in report.message
    assert "jnp.log(jnp.maximum" in report.hint


def test_debug_nans_inside_scan_steps_to_the_body_line(catch, line_of):
    with jax.debug_nans(True):
        exc = catch(jax.jit(scan_log), jnp.array([1.0, -1.0]))
    assert "scan" in str(exc)  # JAX itself only names the whole scan
    report = js.explain(exc)
    assert report.category == "nan"
    assert report.user_frame.line == line_of(scan_log)
    assert report.frames[-1] == report.user_frame
    assert "`log` produced nan" in report.message
    assert report.line_text.strip() == "y = jnp.log(v)  # <- error"
    assert any("iteration 2/2" in c for c in report.jax_context)
    assert any(c.startswith("equation: ") and "= log " in c for c in report.jax_context)


def test_debug_nans_in_backward_pass_points_at_the_forward_line(line_of):
    try:
        with jax.debug_nans(True):
            jax.jit(jax.grad(sqrt_times_zero))(0.0)
    except FloatingPointError as exc:
        report = js.explain(exc)
    assert report.user_frame.line == line_of(sqrt_times_zero)
    assert report.category == "nan"


def test_out_of_memory_runtime_error(line_of):
    try:
        jax.jit(huge)(1.0)  # <- call
    except Exception as exc:
        report = js.explain(exc)
    assert report.kind == "JaxRuntimeError"
    assert report.category == "out_of_memory"
    assert report.is_jax
    assert f"allocating {format_bytes(2**50)}" in report.message
    assert "donate_argnums" in report.hint
    assert report.user_frame.file == __file__
    assert report.user_frame.line == marker_line(
        test_out_of_memory_runtime_error, "# <- call"
    )
    largest = [c for c in report.jax_context if c.startswith("buffer ")]
    # XLA's buffer assignment: what is live at the memory peak, and its line.
    assert largest[0].startswith(
        f"buffer f32[16777216,16777216] ({format_bytes(2**50)}, output) from "
    )
    assert f"{short_path(__file__)}:{line_of(huge)}" in largest[0]
    assert largest[0].endswith("live at the memory peak")
    assert "jax.checkpoint" in report.hint and "js.memory" in report.hint
    # the peak by kind and by line, from the same compiled model
    peak = next(c for c in report.jax_context if c.startswith("memory peak "))
    assert f"output {format_bytes(2**50)}" in peak
    by_line = next(c for c in report.jax_context if c.startswith("peak by line: "))
    assert f"{short_path(__file__)}:{line_of(huge)}" in by_line


def test_error_while_transforming_points_at_the_original_operation(catch, line_of):
    report = js.explain(catch(jax.grad(loop), 1.0))
    assert report.category == "transformation"
    assert report.user_frame.line == line_of(loop)
    assert "lax.scan" in report.hint


# --------------------------------------------------------------------------- not JAX / bad input


def test_non_jax_error_gets_a_plain_report(catch):
    exc = catch(lambda: 1 / 0)
    report = js.explain(exc)
    assert report.kind == "ZeroDivisionError"
    assert report.category == "not_jax"
    assert not report.is_jax
    assert report.hint == ""
    assert report.message == "division by zero"
    assert report.user_frame.file == __file__


def test_users_own_raise_inside_jit_is_not_a_jax_error(catch, line_of):
    report = js.explain(catch(jax.jit(raises_itself), 1.0))
    assert report.kind == "ValueError"
    assert not report.is_jax
    assert report.user_frame.line == line_of(raises_itself)


def test_error_raised_from_a_jax_error_is_explained_through_its_cause(catch, line_of):
    def train():
        try:
            jax.jit(relu)(1.0)
        except TypeError as exc:
            raise RuntimeError("training step failed") from exc

    report = js.explain(catch(train))
    assert report.kind == "TracerBoolConversionError"
    assert report.user_frame.line == line_of(relu)


def test_exception_never_raised_has_no_user_frame():
    report = js.explain(KeyError("k"))
    assert report.kind == "KeyError"
    assert report.user_frame is None
    assert report.frames == []
    assert report.message == "k"


def test_exception_whose_str_fails_still_gets_a_report():
    class Broken(Exception):
        def __str__(self):
            raise RuntimeError("no str")

    report = js.explain(Broken())
    assert report.kind == "Broken"
    assert isinstance(report, ErrorReport)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ("oops", r"expects an exception, got str 'oops'"),
        (42, r"expects an exception, got int 42"),
        (ValueError, r"exception instance, got the class ValueError"),
    ],
)
def test_explain_rejects_non_exceptions_in_one_line(bad, match):
    with pytest.raises(InvalidCallError, match=match) as info:
        js.explain(bad)
    assert "\n" not in str(info.value)
    assert "js.explain(e)" in str(info.value)


def test_explain_without_argument_uses_the_last_exception(monkeypatch, catch, line_of):
    exc = catch(jax.jit(relu), 1.0)
    monkeypatch.setattr(sys, "last_value", exc, raising=False)
    assert js.explain().user_frame.line == line_of(relu)
    monkeypatch.delattr(sys, "last_value")
    with pytest.raises(InvalidCallError, match="no exception to explain"):
        js.explain()


def test_explain_of_a_jaxscope_trace_error_explains_its_cause(catch, line_of):
    exc = catch(lambda: js.jaxpr(relu)(1.0))
    assert isinstance(exc, js.TraceError)
    report = js.explain(exc)
    assert report.kind == "TracerBoolConversionError"
    assert report.user_frame.line == line_of(relu)


def test_report_holds_no_arrays_and_is_frozen(catch):
    report = js.explain(catch(jax.jit(model), jnp.ones((4, 3)), jnp.ones((4, 5))))
    for op in report.operands:
        assert isinstance(op.aval, str)
    with pytest.raises(AttributeError):
        report.kind = "x"
    assert isinstance(report.user_frame, SourceLoc)
    assert (
        report.source_lines and report.line_text.strip() == "return h @ w  # <- error"
    )
    assert report.span is not None
    start, end = report.span
    assert report.line_text[start:end] == "h @ w"


def test_partial_of_jitted_function_still_names_argument(catch, line_of):
    report = js.explain(catch(jax.jit(partial(clip_if, jnp.ones(3))), 2.0))
    assert report.user_frame.line == line_of(clip_if)
    assert report.arguments == ("limit",)


@pytest.mark.parametrize(
    "mode", ["off", "tracebackhide", "remove_frames", "quiet_remove_frames"]
)
def test_every_traceback_filtering_mode_finds_the_user_line(catch, line_of, mode):
    before = jax.config.jax_traceback_filtering
    jax.config.update("jax_traceback_filtering", mode)
    try:
        dtype_exc = catch(jax.jit(add_ints), jnp.ones(3), jnp.ones(3, jnp.int32))
        user_exc = catch(jax.jit(raises_itself), 1.0)
    finally:
        jax.config.update("jax_traceback_filtering", before)
    report = js.explain(dtype_exc)
    assert report.is_jax
    assert report.category == "dtype"
    assert report.user_frame.line == line_of(add_ints)
    assert all(not f.file.endswith(("api.py", "pjit.py")) for f in report.frames)
    assert not js.explain(user_exc).is_jax


@pytest.mark.parametrize(
    ("call", "category", "hint"),
    [
        (
            lambda: branches(True, jnp.ones(3)),
            "structure",
            "Both branches must return the same",
        ),
        (
            lambda: jax.jit(reshape_35)(jnp.ones(3)),
            "shape",
            "x is f32[3], so choose a target shape",
        ),
        (
            lambda: batched_add(jnp.ones(3), jnp.ones(4)),
            "shape",
            "(a is f32[3]; b is f32[4])",
        ),
        (
            lambda: jax.jit(join)(jnp.ones((2, 3)), jnp.ones((3, 3))),
            "shape",
            "a is f32[2,3] and b is f32[3,3]",
        ),
        (
            lambda: jax.jit(times_two, static_argnums=0)({"a": 1}),
            "static_arg",
            "pass a hashable value",
        ),
        (
            lambda: jax.grad(times_two)(jnp.ones(3)),
            "transformation",
            "return loss.sum()",
        ),
        (lambda: jax.grad(times_two)(1), "dtype", "pass 1.0 instead of 1"),
        (
            lambda: jax.jit(times_two)("abc"),
            "static_arg",
            "x is a str, which JAX cannot trace",
        ),
    ],
    ids=[
        "cond",
        "reshape",
        "vmap",
        "concat",
        "unhashable",
        "grad_nonscalar",
        "grad_int",
        "str",
    ],
)
def test_well_known_messages_get_specific_hints(catch, call, category, hint):
    report = js.explain(catch(call))
    assert report.is_jax
    assert report.category == category
    assert hint in report.hint
    assert report.user_frame.file == __file__


# ----------------------------------------- JAX's own first line and documentation link

BOOL_DOCS = (
    "https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError"
)


def test_report_keeps_jaxs_first_line_and_its_documentation_link(catch):
    report = js.explain(catch(jax.jit(relu), 1.0))
    assert report.jax_message == (
        "Attempted boolean conversion of traced array with shape bool[]."
    )
    assert report.docs == BOOL_DOCS
    lines = str(report).splitlines()
    jax_line = lines.index(report.jax_message)
    assert lines[jax_line + 1].startswith("Python `if` needs a concrete True/False")
    hint = next(i for i, line in enumerate(lines) if line.startswith("hint: "))
    assert lines[hint + 1 :].count(f"docs: {BOOL_DOCS}") == 1
    html = report._repr_mimebundle_()["text/html"]
    assert f'<a href="{BOOL_DOCS}"' in html
    assert "Attempted boolean conversion of traced array" in html


def test_jax_line_is_not_repeated_when_the_message_starts_with_it(catch):
    report = js.explain(catch(jax.jit(add_bias), jnp.ones(3), jnp.ones(4)))
    assert report.message.startswith(report.jax_message)
    assert str(report).count(report.jax_message) == 1
    assert report.docs == ""


def test_only_documentation_links_of_known_sites_are_kept(catch):
    exc = catch(jax.jit(relu), 1.0)
    exc.args = (str(exc).replace("docs.jax.dev", "evil.example"),)
    assert js.explain(exc).docs == ""


def test_shape_dtype_struct_given_to_a_run_is_not_called_a_shape_error(catch):
    report = js.explain(
        catch(jax.jit(times_two), jax.ShapeDtypeStruct((3,), jnp.float32))
    )
    assert report.category == "jax_other"
    assert "reshape or transpose" not in report.hint.lower()
    assert "is a jax.ShapeDtypeStruct" in report.hint
    assert "js.jaxpr, js.hlo and js.memory take ShapeDtypeStructs" in report.hint


def test_js_profile_given_a_shape_dtype_struct_says_so_in_one_line():
    with pytest.raises(js.InvalidCallError) as info:
        js.profile(times_two)(jax.ShapeDtypeStruct((3,), jnp.float32))
    message = str(info.value)
    assert "\n" not in message and "ShapeDtypeStruct f32[3]" in message
    assert "use js.memory or js.hlo, which take shapes" in message
