"""%purity in a real IPython shell and --jax-purity in real pytest runs."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from .helpers import texts


def test_purity_magic_warns_after_the_cell_that_changed_a_global(ip):
    ip.run_cell("%purity on")
    ip.run_cell(
        "import jax, jax.numpy as jnp\nshift = -1.0\njit_fn = jax.jit(lambda x: x + shift)"
    )
    with capture_output() as cap:
        ip.run_cell("jit_fn(jnp.float32(0.0))")
    assert "jaxscope purity" not in texts(cap)
    with capture_output() as cap:
        result = ip.run_cell("shift = 1.0")
    text = texts(cap)
    assert "shift = -1.0" in text and "1.0 now" in text
    assert f"changed by In [{result.execution_count}]" in text
    html = [o.data["text/html"] for o in cap.outputs if "text/html" in o.data]
    assert html and "shift" in html[0]
    with capture_output() as cap:
        ip.run_cell("x = 1")
    assert "jaxscope purity" not in texts(cap), "a finding is shown once"
    with capture_output() as cap:
        ip.run_line_magic("purity", "report")
    assert "shift" in texts(cap)
    ip.run_line_magic("purity", "off")


def test_purity_magic_reports_print_inside_jit(ip):
    ip.run_line_magic("purity", "on")
    with capture_output() as cap:
        ip.run_cell(
            "import jax\n@jax.jit\ndef g(x):\n    print('tracing')\n    return x\ng(1.0)"
        )
    text = texts(cap)
    assert "print" in text and "jax.debug.print" in text and "In [" in text
    ip.run_line_magic("purity", "off")


def test_purity_magic_rejects_an_unknown_action(ip):
    with pytest.raises(UsageError, match="unknown action 'maybe'"):
        ip.run_line_magic("purity", "maybe")


def test_unload_stops_the_session_watcher(ipython_shell):
    from jaxscope.compat import purity as cpurity

    ipython_shell.run_line_magic("load_ext", "jaxscope")
    ipython_shell.run_line_magic("purity", "on")
    assert cpurity.trace_hook_installed()
    ipython_shell.run_line_magic("unload_ext", "jaxscope")
    assert not cpurity.trace_hook_installed()


def test_purity_magic_on_twice_keeps_watching_and_clear_forgets(ip):
    ip.run_line_magic("purity", "on")
    ip.run_line_magic("purity", "on")  # already on: no error
    with capture_output():
        ip.run_cell(
            "import jax\n@jax.jit\ndef g2(x):\n    print('t')\n    return x\ng2(1.0)"
        )
    with capture_output() as cap:
        ip.run_line_magic("purity", "clear")
    assert "cleared" in cap.stdout
    with capture_output() as cap:
        ip.run_line_magic("purity", "report")
    assert "no stale values or trace-time side effects" in texts(cap)
    ip.run_line_magic("purity", "off")


def test_summary_renders_as_a_table_by_function_and_escapes_html():
    from jaxscope._display import to_html, to_text
    from jaxscope._purity.records import PuritySummary, PuritySummaryRow

    summary = PuritySummary(
        [PuritySummaryRow(function="<f>", side_effects=2, stale_values=1, names=["a"])]
    )
    text = to_text(summary, width=120)
    assert "jaxscope purity: 3 findings by function" in text
    for column in ("function", "side effects", "stale values", "names"):
        assert column in text
    page = to_html(summary)
    assert "&lt;f&gt;" in page and "<f>" not in page
    assert "no stale values" in to_text(PuritySummary([]))


_TEST_FILE = """
import jax

log = []

@jax.jit
def fn(x):
    log.append(x)
    return x * 2

def test_uses_fn():
    assert float(fn(1.0)) == 2.0

def test_clean():
    assert float(jax.jit(lambda x: x + 1)(1.0)) == 2.0
"""


_APPEND_LINE = _TEST_FILE.strip().splitlines().index("    log.append(x)") + 1


def test_pytest_option_fail_fails_the_test_with_the_finding(pytester):
    pytester.makepyfile(test_case=_TEST_FILE)
    result = pytester.runpytest_subprocess(
        "--jax-purity=fail", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*jaxscope purity: 1 finding(s) in test_case.py::test_uses_fn:",
            f"*test_case.py:{_APPEND_LINE}: fn ran log.append only while being traced*",
        ]
    )


def test_pytest_option_warn_and_off(pytester):
    pytester.makepyfile(test_case=_TEST_FILE)
    result = pytester.runpytest_subprocess(
        "--jax-purity=warn", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*jaxscope purity: 1 finding(s)*"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "jaxscope purity" not in result.stdout.str()


def test_pytest_ini_option_sets_the_default(pytester):
    pytester.makepyfile(test_case=_TEST_FILE)
    pytester.makeini("[pytest]\njax_purity = fail\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
