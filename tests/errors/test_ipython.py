"""The automatic source-mapped display of JAX errors in a real IPython shell."""

from __future__ import annotations

import io
import re
import sys
import warnings

import jax
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import jaxscope as js

RELU = "def relu(x):\n    if x > 0:\n        return x\n    return 0.0 * x\n"


def run(ip, source):
    """Run a cell with a real execution count; return (count, result, stdout)."""
    count = ip.execution_count
    with capture_output() as captured:
        result = ip.run_cell(source, store_history=True)
    return count, result, captured.stdout


@pytest.fixture
def jax_ns(ip):
    ip.run_cell("import jax, jax.numpy as jnp")
    return ip


def test_jax_error_in_cell_is_shown_source_mapped(jax_ns):
    ip = jax_ns
    defined, _, _ = run(ip, RELU)
    called, result, out = run(ip, "jax.jit(relu)(1.0)")
    assert isinstance(result.error_in_exec, jax.errors.TracerBoolConversionError)
    assert f"at In [{defined}]:2 in relu" in out
    assert "→ 2 │     if x > 0:" in out
    assert "hint: If x is a Python value" in out
    assert "static_argnums=(0,)" in out
    assert f"In [{called}]:1 (<module>) → In [{defined}]:2 (relu)" in out
    assert "%tb prints the full traceback" in out
    # the original exception stays the one raised
    assert sys.last_value is result.error_in_exec
    assert sys.last_traceback is result.error_in_exec.__traceback__


def test_explain_of_last_value_maps_cells_to_in_n(jax_ns):
    ip = jax_ns
    defined, _, _ = run(ip, "def bad(x):\n    return x[x > 0]\n")
    run(ip, "jax.jit(bad)(jnp.ones(3))")
    report = js.explain()
    assert report.kind == "NonConcreteBooleanIndexError"
    assert report.user_frame.file == f"In [{defined}]"
    assert report.user_frame.line == 2
    assert report.source_lines[-1] == (2, "    return x[x > 0]")


def _normalise(text):
    return re.sub(r"In ?\[\d+\]", "In[N]", text)


def test_non_jax_error_looks_exactly_like_ipython(ip):
    _, result, with_ext = run(ip, "1/0")
    assert isinstance(result.error_in_exec, ZeroDivisionError)
    assert sys.last_value is result.error_in_exec
    ip.run_line_magic("unload_ext", "jaxscope")
    try:
        _, _, without = run(ip, "1/0")
    finally:
        ip.run_line_magic("load_ext", "jaxscope")
    assert "Traceback (most recent call last)" in with_ext
    assert "jaxscope" not in with_ext
    assert _normalise(with_ext) == _normalise(without)


def test_users_own_exception_in_jitted_function_is_not_rewritten(jax_ns):
    ip = jax_ns
    run(ip, "def boom(x):\n    raise ValueError('mine')\n")
    _, result, out = run(ip, "jax.jit(boom)(1.0)")
    assert isinstance(result.error_in_exec, ValueError)
    assert "hint:" not in out
    assert "ValueError: mine" in out


def test_syntax_error_still_shown_by_ipython(ip):
    _, result, out = run(ip, "x = (")
    assert isinstance(result.error_before_exec, SyntaxError)
    assert "SyntaxError" in out
    assert "jaxscope" not in out


def test_debug_opens_on_the_original_traceback(jax_ns, monkeypatch):
    ip = jax_ns
    run(ip, RELU)
    run(ip, "jax.jit(relu)(1.0)")
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    with capture_output() as captured:
        ip.run_line_magic("debug", "")
    assert "raise TracerBoolConversionError" in captured.stdout


def test_jaxerrors_modes_and_xmode(jax_ns):
    ip = jax_ns
    run(ip, RELU)
    with capture_output() as captured:
        ip.run_line_magic("jaxerrors", "")
    assert captured.stdout.strip() == "jaxscope error display: on"
    xmode = ip.InteractiveTB.mode
    try:
        ip.run_line_magic("jaxerrors", "off")
        _, _, off = run(ip, "jax.jit(relu)(1.0)")
        assert "hint:" not in off
        assert "TracerBoolConversionError" in off
        ip.run_line_magic("jaxerrors", "full")
        ip.run_line_magic("xmode", "Minimal")
        _, _, full = run(ip, "jax.jit(relu)(1.0)")
        assert "hint:" in full
        assert "Traceback (most recent call last)" not in full  # Minimal xmode honoured
        assert full.index("TracerBoolConversionError: Attempted boolean") < full.index(
            "hint:"
        )
    finally:
        ip.run_line_magic("xmode", xmode)
        ip.run_line_magic("jaxerrors", "on")


def test_jaxerrors_bad_mode_is_a_one_line_usage_error(ip):
    with pytest.raises(
        UsageError,
        match=r"unknown mode 'loud' for %jaxerrors; use on, full, off or status",
    ):
        ip.run_line_magic("jaxerrors", "loud")


def test_previous_custom_handler_is_chained_and_restored(ip):
    ip.run_line_magic("unload_ext", "jaxscope")
    seen = []

    def mine(shell, etype, value, tb, tb_offset=None):
        seen.append(etype)

    original = (ip.CustomTB, ip.custom_exceptions)
    ip.set_custom_exc((KeyError,), mine)
    try:
        mine_bound = ip.CustomTB
        ip.run_line_magic("load_ext", "jaxscope")
        assert getattr(ip.CustomTB, "__jaxscope__", False)
        run(ip, "{}['k']")
        assert seen == [KeyError]
        ip.run_line_magic("unload_ext", "jaxscope")
        assert ip.CustomTB is mine_bound
        assert ip.custom_exceptions == (KeyError,)
    finally:
        ip.CustomTB, ip.custom_exceptions = original
        ip.run_line_magic("load_ext", "jaxscope")


def test_automatic_pdb_still_opens_after_the_report(jax_ns, monkeypatch):
    ip = jax_ns
    run(ip, RELU)
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    ip.run_line_magic("pdb", "on")
    try:
        _, _, out = run(ip, "jax.jit(relu)(1.0)")
    finally:
        ip.run_line_magic("pdb", "off")
    assert "hint:" in out
    assert out.index("hint:") < out.index("ipdb>")


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_jaxerrors_help_lists_every_mode_and_changes_nothing(ip, flag):
    with capture_output() as captured:
        result = ip.run_line_magic("jaxerrors", flag)
    assert result is None
    assert "%jaxerrors [" in captured.stdout
    for mode in ("on", "full", "off", "status"):
        assert f"  {mode}" in captured.stdout
    with capture_output() as captured:
        ip.run_line_magic("jaxerrors", "")
    assert captured.stdout.strip() == "jaxscope error display: on"


def test_jaxerrors_is_documented(ip):
    doc = ip.find_line_magic("jaxerrors").__doc__
    assert "%tb" in doc and "%debug" in doc and "js.explain" in doc


def test_cell_report_keeps_jaxs_first_line_and_documentation_link(jax_ns):
    ip = jax_ns
    run(ip, RELU)
    _, _, out = run(ip, "jax.jit(relu)(1.0)")
    lines = out.splitlines()
    jax_line = lines.index(
        "Attempted boolean conversion of traced array with shape bool[]."
    )
    assert lines[jax_line + 1].startswith("Python `if` needs a concrete True/False")
    docs = "https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError"
    assert f"docs: {docs}" in lines


def test_jupyter_error_line_is_jaxs_own_first_line(jax_ns, monkeypatch):
    """In Jupyter the HTML report is followed by a short error line for the frontend:
    it is the exception as JAX wrote it, with control characters made visible."""
    ip = jax_ns
    shown = []
    monkeypatch.setattr(ip, "kernel", object(), raising=False)
    monkeypatch.setattr(
        ip, "_showtraceback", lambda etype, value, stb: shown.append(stb)
    )
    run(ip, RELU)
    run(ip, "jax.jit(relu)(1.0)")
    assert shown[-1][0] == (
        "TracerBoolConversionError: "
        "Attempted boolean conversion of traced array with shape bool[]."
    )


def test_a_failing_report_renderer_falls_back_to_ipythons_traceback(jax_ns):
    from jaxscope._display import load_renderers_for, rich_renderable
    from jaxscope._explain.report import ErrorReport

    def broken(report: ErrorReport) -> object:
        raise ZeroDivisionError("renderer broke")

    load_renderers_for(ErrorReport)
    original = rich_renderable.dispatch(ErrorReport)
    rich_renderable.register(ErrorReport, broken)
    try:
        run(jax_ns, RELU)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _, result, out = run(jax_ns, "jax.jit(relu)(1.0)")
    finally:
        rich_renderable.register(ErrorReport, original)
    assert isinstance(result.error_in_exec, jax.errors.TracerBoolConversionError)
    assert "Traceback" in out and "TracerBoolConversionError" in out
    assert "ErrorReport(" not in out  # not the report's repr
    assert not [w for w in caught if "renderer" in str(w.message)]


def test_a_bad_call_of_ours_ends_at_the_users_line_not_inside_jaxscope(jax_ns):
    ip = jax_ns
    run(ip, "import jaxscope as js\ndef step(x):\n    return x * 2\n")
    _, result, out = run(ip, "js.jaxpr(step, jnp.ones(3))")
    assert isinstance(result.error_in_exec, js.InvalidCallError)
    assert "write js.jaxpr(step)(*args)" in out
    assert "js.jaxpr(step, jnp.ones(3))" in out  # the user's line, with its arrow
    assert "_checks.py" not in out and "raise InvalidCallError" not in out
    # The exception and its traceback are kept whole for %tb and %debug.
    assert sys.last_value is result.error_in_exec
    assert sys.last_traceback is result.error_in_exec.__traceback__
    tb = sys.last_traceback
    while tb.tb_next is not None:
        tb = tb.tb_next
    assert tb.tb_frame.f_code.co_filename.endswith("_checks.py")


def test_a_bad_call_of_ours_in_jaxerrors_off_is_ipythons_usual_display(jax_ns):
    ip = jax_ns
    run(ip, "import jaxscope as js\ndef step(x):\n    return x * 2\n")
    ip.run_line_magic("jaxerrors", "off")
    try:
        _, _, out = run(ip, "js.jaxpr(step, jnp.ones(3))")
    finally:
        ip.run_line_magic("jaxerrors", "on")
    assert "_checks.py" in out
