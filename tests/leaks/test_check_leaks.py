"""check_leaks on real programs: every transformation, every kind of holder, no false
positives, config restored, and the UnexpectedTracerError case."""

from __future__ import annotations

import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxscope as js
from jaxscope._leaks.checker import LeakSummary, hooks_installed
from jaxscope._source import short_path


def line_of(marker: str) -> int:
    """The line number of the single line of this file ending in ``marker``."""
    with open(__file__, encoding="utf-8") as fh:
        hits = [i for i, text in enumerate(fh, 1) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, marker
    return hits[0]


store: list = []
table: dict = {}


@pytest.fixture(autouse=True)
def _clear_globals():
    store.clear()
    table.clear()
    yield
    store.clear()
    table.clear()


def leaky(x):
    y = jnp.sin(x) * 2  # L:leaky
    store.append(y)
    return y + 1


def only_leak(report):
    assert len(report.leaks) == 1, report.message()
    return report.leaks[0]


def check(thunk):
    with js.check_leaks(raise_on_leak=False) as report:
        thunk()
    return report


# ------------------------------------------------------------------ transformations


def scan_leak():
    def body(c, x):
        c2 = c * x + 1.0  # L:scan
        store.append(c2)
        return c2, None

    return lax.scan(body, 0.0, jnp.arange(3.0))


def shard_map_leak():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("x",))
    P = jax.sharding.PartitionSpec
    fn = jax.shard_map(leaky, mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    return fn(jnp.ones(8))


@jax.custom_jvp
def custom(x):
    y = jnp.cos(x) + 1  # L:custom
    store.append(y)
    return y


@custom.defjvp
def _custom_jvp(primals, tangents):
    return custom(primals[0]), tangents[0]


@jax.custom_jvp
def clean_custom(x):
    return jnp.cos(x) + 1


@clean_custom.defjvp
def _clean_custom_jvp(primals, tangents):
    return clean_custom(primals[0]), -jnp.sin(primals[0]) * tangents[0]


CASES = {
    "jit": (lambda: jax.jit(leaky)(1.0), "jit", "L:leaky"),
    "vmap": (lambda: jax.vmap(leaky)(jnp.ones(3)), "vmap", "L:leaky"),
    "grad": (lambda: jax.grad(leaky)(1.0), "grad", "L:leaky"),
    "value_and_grad": (lambda: jax.value_and_grad(leaky)(1.0), "grad", "L:leaky"),
    "vjp": (lambda: jax.vjp(leaky, 1.0), "vjp", "L:leaky"),
    "jvp": (lambda: jax.jvp(leaky, (1.0,), (1.0,)), "jvp", "L:leaky"),
    "scan": (scan_leak, "scan", "L:scan"),
    "cond": (lambda: lax.cond(True, leaky, lambda x: x, 1.0), "cond", "L:leaky"),
    "while": (
        lambda: lax.while_loop(lambda c: c < 3.0, lambda c: leaky(c) * 0 + c + 1, 0.0),
        "while",
        "L:leaky",
    ),
    "pmap": (lambda: jax.pmap(leaky)(jnp.ones(2)), "pmap", "L:leaky"),
    "shard_map": (shard_map_leak, "shard_map", "L:leaky"),
    "custom_jvp": (lambda: jax.jit(custom)(1.0), "custom_jvp", "L:custom"),
    "grad_inside_jit": (lambda: jax.jit(jax.grad(leaky))(1.0), "grad", "L:leaky"),
    "remat": (lambda: jax.checkpoint(leaky)(1.0), "remat", "L:leaky"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_leak_is_reported_with_transformation_creation_line_and_holder(name):
    thunk, transformation, marker = CASES[name]
    leak = only_leak(check(thunk))
    assert leak.transformation == transformation
    assert leak.created_at is not None
    assert leak.created_at.file == __file__
    assert leak.created_at.line == line_of(marker)
    assert not leak.argument
    assert leak.found_in == "global list `store`[0]"
    assert leak.aval.startswith("f32[")


def test_leaked_argument_points_at_the_line_that_called_the_transformation():
    def keep_arg(x):
        store.append(x)
        return x

    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(keep_arg)(jnp.ones(3))  # L:call-arg
    leak = only_leak(report)
    assert leak.argument
    assert leak.aval == "f32[3]"
    assert leak.created_at.line == line_of("L:call-arg")
    assert "keep_arg" in leak.function


def test_leak_from_an_inner_trace_is_caught_though_garbage_by_the_end_of_the_block():
    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(leaky)(2.0)
        store.clear()
    assert only_leak(report).transformation == "jit"


def test_a_block_checks_what_is_traced_in_it_not_what_jax_serves_from_its_caches():
    jitted = jax.jit(leaky)
    jitted(1.0)  # traced (and leaked) before the block
    store.clear()
    report = check(lambda: (jitted(1.0), scan_leak()))
    assert [leak.transformation for leak in report.leaks] == ["scan"]
    assert len(store) == 1  # only scan's body ran again
    assert jitted._cache_size() == 1
    store.clear()
    jitted.clear_cache()  # the documented way to check it again
    assert only_leak(check(lambda: jitted(1.0))).transformation == "jit"


def test_every_leak_of_a_block_is_listed():
    report = check(lambda: (jax.jit(leaky)(1.0), jax.vmap(leaky)(jnp.ones(2))))
    assert [leak.transformation for leak in report.leaks] == ["jit", "vmap"]
    assert [leak.found_in for leak in report.leaks] == [
        "global list `store`[0]",
        "global list `store`[1]",
    ]


# ---------------------------------------------------------------------- holders


class Model:
    def __init__(self):
        self.state = None

    def __call__(self, x):
        h = jnp.tanh(x)
        self.state = h
        return h * 2


class Slotted:
    __slots__ = ("last",)


def test_attribute_of_an_object_is_named_self_dot_attribute():
    m = Model()
    leak = only_leak(check(lambda: jax.jit(m)(1.0)))
    assert leak.found_in.startswith("attribute `self.state` of a `Model` object")


def test_attribute_of_an_object_in_a_global_names_the_global():
    table["model"] = Model()
    leak = only_leak(check(lambda: jax.jit(table["model"])(1.0)))
    assert leak.found_in == (
        "attribute `self.state` of a `Model` object (global dict `table`['model'])"
    )


def test_slot_attribute_is_named():
    holder = Slotted()

    def f(x):
        holder.last = x + 1
        return x

    leak = only_leak(check(lambda: jax.jit(f)(1.0)))
    assert leak.found_in.startswith("attribute `self.last` of a `Slotted` object")


def test_global_dict_entry_is_named_with_its_key():
    def f(x):
        table["h"] = x * 3
        return x

    assert (
        only_leak(check(lambda: jax.jit(f)(1.0))).found_in == "global dict `table`['h']"
    )


def test_closure_cell_holding_a_list_is_named():
    saved = []

    def f(x):
        saved.append(x + 1)
        return x

    leak = only_leak(check(lambda: jax.grad(f)(1.0)))
    assert leak.found_in.startswith("closure variable list `saved`[0] of `")
    assert leak.transformation == "grad"


def test_nonlocal_assignment_is_named():
    last = None

    def f(x):
        nonlocal last
        last = x * 2
        return x

    leak = only_leak(check(lambda: jax.jit(f)(1.0)))
    assert leak.found_in.startswith("nonlocal (closure) variable `last` of `")
    assert last is not None


def test_module_attribute_is_named_with_the_module():
    mod = types.ModuleType("jaxscope_leak_test_mod")
    sys.modules[mod.__name__] = mod
    try:

        def f(x):
            mod.latest = x * 2
            return x

        leak = only_leak(check(lambda: jax.jit(f)(1.0)))
        assert leak.found_in == "module attribute `jaxscope_leak_test_mod.latest`"
    finally:
        del sys.modules[mod.__name__]


def test_default_argument_is_named():
    def f(x, cache=[]):  # noqa: B006 - the leak under test
        cache.append(x + 1)
        return x

    leak = only_leak(check(lambda: jax.jit(f)(1.0)))
    assert leak.found_in.startswith("default argument list `cache`[0] of `")


def test_generator_local_is_named():
    def consumer():
        while True:
            item = yield
            del item

    def keeper():
        kept = None
        while True:
            kept = yield kept

    gen = keeper()
    next(gen)

    def f(x):
        gen.send(x * 2)
        return x

    leak = only_leak(check(lambda: jax.jit(f)(1.0)))
    assert leak.found_in.startswith("generator `")
    assert "(local `kept`)" in leak.found_in
    del consumer


def test_class_attribute_is_named():
    class Cache:
        value = None

    def f(x):
        Cache.value = x * 2
        return x

    leak = only_leak(check(lambda: jax.jit(f)(1.0)))
    assert leak.found_in.startswith("class attribute `")
    assert leak.found_in.endswith("Cache.value`")


class Holder:
    def __init__(self):
        self.dct = {}


def test_a_closure_held_in_an_attribute_reports_the_whole_chain_from_the_global():
    table["a"] = Holder()

    def f(x):
        y = x * 2
        table["a"].dct["hi"] = [lambda: y]
        return x

    leak = only_leak(check(lambda: jax.jit(f)(1.0)))
    assert leak.found_in == (
        "attribute `self.dct['hi'][0]` of a `Holder` object (global dict "
        "`table`['a']) -> nonlocal (closure) variable `y` of `"
        + f.__qualname__
        + ".<locals>.<lambda>`"
    )


def test_a_closure_stored_in_a_global_list_names_the_list_then_the_variable():
    def f(x):
        y = x * 2
        keep = lambda: y  # noqa: E731
        store.append(keep)
        return x

    leak = only_leak(check(lambda: jax.jit(f)(1.0)))
    assert leak.found_in == (
        "global list `store`[0] -> nonlocal (closure) variable `y` of `"
        + f.__qualname__
        + ".<locals>.<lambda>`"
    )


# ---------------------------------------------------------------- no false positives


def test_concrete_values_kept_by_a_traced_function_are_not_leaks():
    seen = []

    def f(x):
        seen.append((x.shape, str(x.dtype), 3.0))
        return jnp.sin(x)

    assert check(lambda: jax.jit(f)(jnp.ones(3))).leaks == []
    assert seen


def test_debug_print_and_callback_are_not_leaks(capsys):
    got = []

    def f(x):
        jax.debug.print("x is {x}", x=x)
        jax.debug.callback(lambda v: got.append(np.asarray(v)), x)
        return x * 2

    report = check(
        lambda: (jax.jit(f)(1.0), jax.grad(f)(1.0), jax.vmap(f)(jnp.ones(2)))
    )
    assert report.leaks == []
    assert got and "x is" in capsys.readouterr().out


def test_caching_concrete_arrays_is_not_a_leak():
    cache = {}

    def f(x):
        return jnp.sin(x)

    def run():
        for i in range(3):
            cache[i] = jax.jit(f)(jnp.float32(i))
        cache["g"] = jax.grad(f)(1.0)
        cache["c"] = jnp.ones(3)

    assert check(run).leaks == []
    assert float(cache[1]) == pytest.approx(np.sin(1.0))


def test_normal_returns_of_every_transformation_are_not_leaks():
    def f(x):
        return jnp.sin(x) * 2

    def body(c, x):
        return c + x, c * x

    def run():
        jax.jit(f)(1.0)
        jax.grad(f)(1.0)
        jax.value_and_grad(lambda x: (f(x), {"aux": x}), has_aux=True)(1.0)
        jax.vjp(f, 1.0)[1](1.0)
        jax.jvp(f, (1.0,), (1.0,))
        jax.vmap(f)(jnp.ones(3))
        lax.scan(body, 0.0, jnp.ones(3))
        lax.cond(True, f, f, 1.0)
        lax.while_loop(lambda c: c < 3, lambda c: c + 1, 0.0)
        jax.jit(clean_custom)(1.0)
        jax.grad(clean_custom)(1.0)
        jax.jacrev(f)(jnp.ones(2))
        jax.checkpoint(f)(1.0)

    report = check(run)
    assert report.leaks == [], report.message()


def test_tracers_jax_keeps_in_its_own_caches_are_not_leaks():
    """``closure_convert`` caches the tracers it hoists (JAX skips that cache only
    under its own leak flag, which a block does not set)."""

    def outer(x):
        fn, consts = jax.closure_convert(lambda y: y * x, 1.0)
        return fn(2.0, *consts)

    report = check(lambda: (jax.jit(outer)(3.0), jax.grad(outer)(3.0)))
    assert report.leaks == [], report.message()


def test_values_kept_from_vjp_linearize_and_jvp_after_the_block_are_not_leaks():
    def f(x):
        return jnp.sin(x) * jnp.cos(x)

    kept = {}

    def run():
        kept["vjp"] = jax.vjp(f, 1.0)
        kept["lin"] = jax.linearize(f, 1.0)
        kept["jvp"] = jax.jvp(f, (1.0,), (1.0,))
        kept["hvp"] = jax.jvp(jax.grad(f), (1.0,), (1.0,))
        kept["jac"] = jax.jacfwd(jax.jacrev(f))(1.0)
        kept["remat"] = jax.grad(jax.checkpoint(f))(1.0)

    assert check(run).leaks == []
    kept["vjp"][1](1.0)
    kept["lin"][1](1.0)


def test_jvp_of_a_function_returning_a_tuple_is_not_a_leak():
    def f(x):
        return (jnp.sin(x), jnp.cos(x))

    assert check(lambda: jax.jvp(f, (1.0,), (1.0,))).leaks == []


# ------------------------------------------------------- raising, config, errors


def test_leak_raises_tracer_leak_error_listing_every_leak_on_exit():
    with pytest.raises(js.TracerLeakError) as info:
        with js.check_leaks():
            jax.jit(leaky)(1.0)
            jax.vmap(leaky)(jnp.ones(2))
    message = str(info.value)
    first, *rest = message.splitlines()
    assert first.startswith("2 leaked tracers: f32[] tracer from jit, created at ")
    assert f"{short_path(__file__)}:{line_of('L:leaky')}" in first
    assert any("from vmap" in line for line in rest)
    assert len(info.value.report.leaks) == 2
    assert isinstance(info.value, RuntimeError)


def test_clean_block_does_not_raise_and_reports_nothing():
    with js.check_leaks() as report:
        jax.jit(jnp.sin)(1.0)
    assert report.leaks == [] and len(report) == 0
    assert report.summary().headline == "no tracer leaked"


def test_config_and_hooks_are_restored_after_an_exception_in_the_block():
    before = jax.config.jax_check_tracer_leaks
    with pytest.raises(ZeroDivisionError):
        with js.check_leaks():
            assert jax.config.jax_check_tracer_leaks == before  # never touched
            assert hooks_installed()
            1 / 0  # noqa: B018
    assert jax.config.jax_check_tracer_leaks == before
    assert not hooks_installed()


def test_user_error_inside_the_block_is_not_masked_by_a_leak_error():
    with pytest.raises(KeyError):
        with js.check_leaks():
            jax.jit(leaky)(1.0)
            raise KeyError("mine")


def test_nested_blocks_both_see_an_inner_leak():
    with js.check_leaks(raise_on_leak=False) as outer:
        with js.check_leaks(raise_on_leak=False) as inner:
            jax.jit(leaky)(1.0)
        assert hooks_installed()
    assert len(inner.leaks) == len(outer.leaks) == 1


def test_using_a_leaked_tracer_later_augments_the_unexpected_tracer_error():
    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(leaky)(1.0)
        with pytest.raises(jax.errors.UnexpectedTracerError) as info:
            store[0] + 1  # L:use
    first = str(info.value).splitlines()[0]
    assert first.startswith("jaxscope: leaked f32[] tracer from jit, created at ")
    assert f":{line_of('L:leaky')}" in first
    assert "stored in global list `store`[0]" in first
    assert f"used at {short_path(__file__)}:{line_of('L:use')}" in first
    leak = only_leak(report)
    assert leak.used_at is not None and leak.used_at.line == line_of("L:use")


def test_tracer_leaked_by_grad_is_reported_when_used():
    with js.check_leaks(raise_on_leak=False) as report:
        jax.grad(leaky)(1.0)
        with pytest.raises(jax.errors.UnexpectedTracerError, match="jaxscope: leaked"):
            jnp.sin(store[0])
    assert only_leak(report).transformation == "grad"


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_raise_on_leak_must_be_a_bool(bad):
    with pytest.raises(
        js.InvalidCallError, match=r"raise_on_leak=\.\.\.\) takes True or False, got"
    ):
        js.check_leaks(raise_on_leak=bad)


def test_a_block_cannot_be_entered_twice():
    checker = js.check_leaks()
    with checker, pytest.raises(js.InvalidCallError, match="already active"):
        with checker:
            pass


def test_leak_records_hold_no_tracer():
    import gc

    report = check(lambda: jax.jit(leaky)(1.0))
    leak = only_leak(report)
    for value in (leak.aval, leak.transformation, leak.found_in, leak.function):
        assert isinstance(value, str)
    reachable = [report, leak, *gc.get_referents(report), *gc.get_referents(leak)]
    from jaxscope.compat.leaks import tracer_type

    assert not any(isinstance(o, tracer_type()) for o in reachable)


def test_doctest_example_of_check_leaks_runs():
    import doctest

    import jaxscope._leaks.checker as mod

    finder = doctest.DocTestFinder()
    tests = [t for t in finder.find(mod) if t.name.endswith("check_leaks")]
    assert tests and tests[0].examples
    runner = doctest.DocTestRunner()
    for t in tests:
        runner.run(t)
    assert runner.failures == 0


@pytest.mark.parametrize("convert", [float, np.asarray], ids=["float", "asarray"])
def test_converting_a_leaked_tracer_names_the_leak_not_a_running_trace(convert):
    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(leaky)(1.0)
        with pytest.raises(TypeError) as info:
            convert(store[0])  # L:convert
    first = str(info.value).splitlines()[0]
    assert first.startswith("jaxscope: leaked f32[] tracer from jit, created at ")
    assert "stored in global list `store`[0]" in first
    assert only_leak(report).used_at.line == line_of("L:convert")


def test_a_concretization_error_inside_a_running_trace_is_left_alone():
    def f(x):
        return x if x > 0 else -x

    with js.check_leaks(raise_on_leak=False) as report:
        with pytest.raises(jax.errors.TracerBoolConversionError) as info:
            jax.jit(f)(1.0)
    # JAX's message holds this file's path, which holds "jaxscope" in a clone of it
    assert "jaxscope: leaked" not in str(info.value)
    assert report.leaks == []


def test_retrace_true_is_refused_naming_what_to_use_instead():
    with pytest.raises(js.InvalidCallError) as info:
        js.check_leaks(retrace=True)
    message = str(info.value)
    assert "\n" not in message
    assert "f.clear_cache()" in message and "jax.clear_caches()" in message
    with js.check_leaks(retrace=False) as report:
        jax.jit(jnp.sin)(1.0)
    assert report.leaks == []
    with pytest.raises(js.InvalidCallError, match="takes True or False"):
        js.check_leaks(retrace="yes")


# ------------------------------------------------------------------ the report's API


def test_check_leaks_returns_the_report_which_is_its_own_context_manager():
    report = js.check_leaks(raise_on_leak=False)
    assert isinstance(report, js.LeakReport) and not report.active
    with report as entered:
        assert entered is report and report.active and hooks_installed()
        jax.jit(leaky)(1.0)
    assert not report.active
    assert only_leak(report).transformation == "jit"


def test_the_report_form_raises_on_a_leak_with_the_report_attached():
    report = js.check_leaks()
    with pytest.raises(js.TracerLeakError) as info:
        with report:
            jax.jit(leaky)(1.0)
    assert info.value.report is report
    assert str(info.value).startswith("1 leaked tracer: f32[] tracer from jit")


def test_a_report_can_check_again_after_its_block_and_accumulates():
    report = js.check_leaks(raise_on_leak=False)
    with report:
        jax.jit(leaky)(1.0)
    with report:
        jax.vmap(leaky)(jnp.ones(2))
    assert [leak.transformation for leak in report] == ["jit", "vmap"]


def test_reentering_an_active_report_is_rejected_and_keeps_the_outer_block():
    report = js.check_leaks(raise_on_leak=False)
    with report:
        with pytest.raises(js.InvalidCallError, match="already active"):
            report.__enter__()
        assert report.active and hooks_installed()
        jax.jit(leaky)(1.0)
    assert len(report) == 1


def test_clear_forgets_the_leaks_found_so_far():
    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(leaky)(1.0)
        report.clear()
        assert len(report) == 0
        jax.vmap(leaky)(jnp.ones(2))
    assert only_leak(report).transformation == "vmap"


def test_summary_is_a_record_with_one_row_per_traced_function():
    def other(x):
        table["k"] = x + 1  # L:other
        return x

    with js.check_leaks(raise_on_leak=False) as report:
        jax.jit(leaky)(1.0)
        jax.vmap(leaky)(jnp.ones(2))
        jax.jit(other)(1.0)
    summary = report.summary()
    assert isinstance(summary, LeakSummary)
    assert summary.total_leaks == 3
    top = summary.rows[0]
    assert (top.function, top.leaks) == ("leaky", 2)
    assert dict(top.transformations) == {"jit": 1, "vmap": 1}
    assert top.found_in == ["global list `store`[0]", "global list `store`[1]"]
    assert top.created_at is not None and top.created_at.line == line_of("L:leaky")
    assert summary.row("other") is summary.rows[1]
    assert summary.row("nothing") is None
    assert summary.headline == report.message().splitlines()[0]
    assert summary.headline.startswith("3 leaked tracers: f32[] tracer from jit")


def test_summary_of_a_clean_report():
    with js.check_leaks() as report:
        jax.jit(jnp.sin)(1.0)
    summary = report.summary()
    assert summary.rows == [] and summary.total_leaks == 0
    assert summary.headline == "no tracer leaked"


def test_a_report_is_plain_data_until_its_block_starts():
    import subprocess

    code = (
        "import sys, jaxscope as js\n"
        "report = js.check_leaks(raise_on_leak=False)\n"
        "print('jax' in sys.modules, report.active, len(report))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert out.stdout.split() == ["False", "False", "0"], out.stderr


class _RecordingSink:
    """An object with ``LeakSink``'s methods and nothing else of a report; keyed by
    id, so it holds no tracer."""

    def __init__(self):
        self.leaks = {}

    def add(self, tracer, leak):
        return self.leaks.setdefault(id(tracer), leak)

    def knows(self, tracer):
        return id(tracer) in self.leaks


def test_the_leak_hooks_deliver_to_any_object_with_the_sink_methods():
    from jaxscope._leaks.session import SESSION

    sink = _RecordingSink()
    ident = SESSION.start(sink)
    try:
        jax.jit(leaky)(1.0)
    finally:
        SESSION.stop(sink, ident)
    (leak,) = sink.leaks.values()
    assert leak.transformation == "jit"
    assert leak.found_in == "global list `store`[0]"
    assert leak.created_at.line == line_of("# L:leaky")
