"""Renderers, the %recompiles magic, the pytest plugin (pytester) and the CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import jaxscope as js
from jaxscope._display import to_html, to_text
from jaxscope._recompiles.watcher import (
    Cause,
    RecompileEvent,
    RecompileEvents,
    RecompileSummary,
    SummaryRow,
)
from jaxscope._records import SourceLoc


def _event(fn="f<script>", path="x"):
    return RecompileEvent(
        function=fn,
        defined_at=SourceLoc(file="m.py", line=3),
        call_site=SourceLoc(file="In [4]", line=2),
        causes=[
            Cause(
                kind="shape",
                path=path,
                before="f32[3]",
                after="f32[4]",
                hint="pad <it>",
            )
        ],
        seconds=0.0123,
        signature=(("x", "f32[4]"),),
    )


def test_event_text_is_one_compact_line():
    text = to_text(RecompileEvents([_event("f")]), width=200)
    assert (
        text == "f at In [4]:2: shape x: f32[3] → f32[4] (12.3 ms)\n    hint: pad <it>"
    )


def test_event_html_escapes_and_expands():
    out = to_html(RecompileEvents([_event()]))
    assert "<details>" in out and "f&lt;script&gt;" in out and "pad &lt;it&gt;" in out
    assert "<script>" not in out


def test_summary_table_text_and_html():
    summary = RecompileSummary(
        [
            SummaryRow(
                function="step<b>",
                defined_at=SourceLoc(file="t.py", line=1),
                calls=5,
                traces=4,
                compiles=4,
                seconds=1.5,
                top_causes=[("shape", 3), ("first_call", 1)],
            )
        ],
        internal_compiles=2,
    )
    text = to_text(summary, width=120)
    times = "\N{MULTIPLICATION SIGN}"
    assert "step<b>" in text and f"shape{times}3, first_call{times}1" in text
    assert "1.500" in text
    html = to_html(summary)
    assert "step&lt;b&gt;" in html and "<table>" in html


def test_log_renders_summary_and_events():
    f = jax.jit(lambda x: x + 1)
    with js.watch_recompiles() as log:
        f(jnp.ones(2))
        f(jnp.ones(3))
    text = str(log)
    assert "recompiles by function" in text and "shape x: f32[2] → f32[3]" in text
    bundle = log._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}


def test_magic_on_shows_recompiles_after_the_cell(ip):
    ip.run_cell("import jax, jax.numpy as jnp\nrf = jax.jit(lambda x: x + 1)")
    ip.run_line_magic("recompiles", "on")
    with capture_output() as cap:
        ip.run_cell("rf(jnp.ones(3)); rf(jnp.ones(4))")
    shown = [
        o.data
        for o in cap.outputs
        if "recompiled in this cell" in o.data.get("text/plain", "")
    ]
    assert len(shown) == 1
    text = shown[0]["text/plain"]
    assert "first call" in text and "shape x: f32[3] → f32[4]" in text
    assert "In [" in text  # call site in the cell's name
    assert "<details" in shown[0]["text/html"]
    with capture_output() as cap:
        ip.run_cell("rf(jnp.ones(4))")  # cache hit: nothing shown
    assert not any("recompiled" in o.data.get("text/plain", "") for o in cap.outputs)
    summary = ip.run_line_magic("recompiles", "report")
    assert "recompiles by function" in str(summary)
    assert summary.row("<lambda>").compiles == 2
    session = ip.run_line_magic("recompiles", "log")
    assert [e.causes[0].kind for e in session.events] == ["first_call", "shape"]
    with capture_output() as cap:
        ip.run_cell("%recompiles report")
    assert "recompiles by function" in cap.stdout  # the cell's Out[] value
    ip.run_line_magic("recompiles", "reset")
    with capture_output() as cap:
        ip.run_line_magic("recompiles", "status")
    assert "on, 0 events" in cap.stdout
    with capture_output():
        ip.run_cell("rf(jnp.ones(5))")
    assert len(session.events) == 1
    with capture_output() as cap:
        ip.run_line_magic("recompiles", "clear")  # the same as reset
    assert "cleared" in cap.stdout and session.events == []
    ip.run_line_magic("recompiles", "off")
    from jaxscope._recompiles.watcher import hooks_installed

    assert not hooks_installed()


def test_bare_event_record_has_an_html_formatter(ip):
    formatter = ip.display_formatter.formatters["text/html"]
    out = formatter.lookup_by_type(RecompileEvent)(_event("shown"))
    assert "<details" in out and "shown" in out


def test_magic_unload_stops_the_watcher(ip):
    from jaxscope._recompiles.watcher import hooks_installed

    ip.run_line_magic("recompiles", "on")
    assert hooks_installed()
    ip.run_line_magic("unload_ext", "jaxscope")
    assert not hooks_installed()
    ip.run_line_magic("load_ext", "jaxscope")


def test_magic_bad_action_is_one_line_usage_error(ip):
    with pytest.raises(
        UsageError, match=r"unknown action 'sometimes'; use %recompiles on"
    ):
        ip.run_line_magic("recompiles", "sometimes")


# ---------------------------------------------------------------- pytest plugin

_TESTS = textwrap.dedent(
    """
    import jax, jax.numpy as jnp, pytest

    def double(x):
        return x * 2

    f = jax.jit(double)

    @pytest.mark.jax_max_compiles(1)
    def test_over_budget():
        f(jnp.ones(3))
        f(jnp.ones(4))

    @pytest.mark.jax_max_recompiles(2, function="double")
    def test_named_budget_ok():
        f(jnp.ones(5)); f(jnp.ones(6))
        g = jax.jit(lambda x: x)
        g(jnp.ones(1)); g(jnp.ones(2)); g(jnp.ones(3))

    def test_unmarked_recompiles():
        h = jax.jit(lambda x: x + 1)
        h(jnp.ones(1)); h(jnp.ones(2))

    def test_eager_ops_only():
        jnp.ones(7) + jnp.arange(7.0)

    def test_fixture(jax_recompiles):
        h = jax.jit(lambda x: x + 1)
        h(jnp.ones(1))
        assert [e.causes[0].kind for e in jax_recompiles.events] == ["first_call"]
    """
)


def test_plugin_marker_fails_with_source_mapped_causes(pytester):
    pytester.makepyfile(test_budget=_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_over_budget _*",
            "jax_max_compiles(1) exceeded: double compiled 2 times "
            "(first compile included)",
            "  double at test_budget.py:10: first call (*ms)",
            "  double at test_budget.py:11: shape x: f32?3? → f32?4? (*ms)",
            "      hint: x changes shape ?3? → ?4? and every new shape compiles again*",
            "*jaxscope: most compiled jitted functions*",
            "    4 compiles  * s  double (test_budget.py:3)  "
            "?most in test_budget.py::test_over_budget: 2 and 1 more test?",
        ]
    )


def test_plugin_option_fail_and_warn(pytester):
    pytester.makepyfile(test_opt=_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--jax-recompiles=fail", "-k", "unmarked or eager"
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "jax recompiles: test_unmarked_recompiles.<locals>.<lambda> compiled 2 times",
            "*shape x: f32?1? → f32?2?*",
        ]
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--jax-recompiles=warn", "-k", "unmarked"
    )
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*JaxRecompileWarning: jax recompiles:*compiled 2 times*"]
    )


def test_plugin_ini_option(pytester):
    pytester.makepyfile(test_ini=_TESTS)
    pytester.makeini("[pytest]\njax_recompiles = fail\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-k", "unmarked")
    result.assert_outcomes(failed=1)


def test_plugin_bad_marker_is_a_clear_failure(pytester):
    pytester.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.jax_max_recompiles("two")
        def test_bad():
            pass

        @pytest.mark.jax_max_recompiles(1, fn="f")
        def test_bad_kw():
            pass
    """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=2)
    lines = result.stdout.lines
    assert (
        "jax_max_recompiles(n): n must be an int >= 0, got 'two' in "
        "test_bad.py::test_bad"
    ) in lines
    assert (
        "jax_max_recompiles: unknown argument(s) ['fn'] in test_bad.py::test_bad_kw; "
        "use jax_max_recompiles(n) or jax_max_recompiles(n, function='name')"
    ) in lines
    assert not any("During handling" in line for line in lines)


# ---------------------------------------------------------------- CLI

_SCRIPT = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp

    step = jax.jit(lambda x: x * 2)
    for n in (3, 4):
        step(jnp.ones(n))
    print("argv", sys.argv[1:], __name__)
    sys.exit(int(sys.argv[1]))
    """
)


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "jaxscope", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_runs_script_and_reports(tmp_path):
    (tmp_path / "script.py").write_text(_SCRIPT)
    proc = _cli("run", "script.py", "7", "--recompiles", "--flag", cwd=tmp_path)
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout == "argv ['7', '--flag'] __main__\n"
    assert "recompiles by function" in proc.stderr
    assert "<lambda> at script.py:7: shape x: f32[3] → f32[4]" in proc.stderr


def test_cli_double_dash_passes_flag_to_script(tmp_path):
    (tmp_path / "script.py").write_text(_SCRIPT)
    proc = _cli("run", "script.py", "0", "--", "--recompiles", cwd=tmp_path)
    assert proc.returncode == 0
    assert "argv ['0', '--recompiles']" in proc.stdout
    assert "recompiles by function" not in proc.stderr


def test_cli_bad_usage_exits_2(tmp_path):
    proc = _cli("run", "missing.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "jaxscope run: no such script 'missing.py'; usage: python -m jaxscope run "
        "script.py [script args...] [--recompiles] [--leaks]"
    )
    proc = _cli(cwd=tmp_path)
    assert proc.returncode == 2 and "missing command" in proc.stderr


def test_cli_main_in_process_returns_exit_code(tmp_path, capsys):
    from jaxscope._cli import main

    script = tmp_path / "ok.py"
    script.write_text("import sys\nsys.exit(3)\n")
    assert main(["run", str(script)]) == 3
    script.write_text("raise RuntimeError('bad')\n")
    assert main(["run", str(script)]) == 1
    assert "RuntimeError: bad" in capsys.readouterr().err


def test_cli_leaks_report(tmp_path):
    (tmp_path / "leak.py").write_text(
        textwrap.dedent(
            """
        import jax, jax.numpy as jnp
        store = []

        @jax.jit
        def leaky(x):
            store.append(x)
            return x + 1

        leaky(jnp.ones(2))
        print("done")
        """
        )
    )
    proc = _cli("run", "leak.py", "--leaks", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "done\n"
    assert "jaxscope: 1 leaked tracer: f32[2]" in proc.stderr
    assert "store" in proc.stderr
