"""LeakReport rendering, the %%leaks magic, the pytest option and the CLI flag."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from jaxscope._display import to_html, to_text
from jaxscope._leaks.checker import Leak, LeakReport
from jaxscope._records import SourceLoc


def _report(*leaks: Leak) -> LeakReport:
    report = LeakReport()
    report.leaks.extend(leaks)
    return report


def _leak(**kw) -> Leak:
    base = {
        "aval": "f32[3]",
        "transformation": "jit",
        "created_at": SourceLoc(file="In [4]", line=2, function="f"),
        "found_in": "global list `cache`[0]",
        "function": "f at In [4]:1",
    }
    base.update(kw)
    return Leak(**base)


def test_report_text_is_a_table_of_aval_transformation_created_at_found_in():
    text = to_text(
        _report(
            _leak(),
            _leak(
                aval="f32[]",
                transformation="grad",
                found_in="attribute `self.state` of a `M` object",
            ),
        ),
        width=160,
    )
    lines = text.splitlines()
    assert lines[0] == "jaxscope: 2 leaked tracers"
    header = lines[1]
    for column in ("aval", "transformation", "created at", "found in"):
        assert column in header
    assert (
        "f32[3]" in text and "In [4]:2 (f)" in text and "global list `cache`[0]" in text
    )
    assert "grad" in text and "attribute `self.state` of a `M` object" in text
    assert "fix: return values" in lines[-1]


def test_report_text_marks_arguments_and_use_sites():
    leak = _leak(
        argument=True,
        created_at=SourceLoc(file="s.py", line=9),
        found_in="",
        used_at=SourceLoc(file="s.py", line=12),
    )
    text = to_text(_report(leak), width=200)
    assert "s.py:9 (argument, call site)" in text
    assert "(not found: seen when used); used at s.py:12" in text


def test_empty_report_says_nothing_leaked_in_text_and_html():
    assert to_text(LeakReport()) == "jaxscope: no tracer leaked"
    assert "no tracer leaked" in to_html(LeakReport())


def test_report_html_escapes_user_strings():
    page = to_html(
        _report(
            _leak(
                found_in="global dict `d`['<script>']",
                created_at=SourceLoc(file="<x>.py", line=1, function="<f>"),
            )
        )
    )
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "&lt;x&gt;.py:1 (&lt;f&gt;)" in page
    for column in ("aval", "transformation", "created at", "found in"):
        assert f"<th>{column}</th>" in page


def test_report_mimebundle_has_text_and_html():
    bundle = _report(_leak())._repr_mimebundle_()
    assert set(bundle) >= {"text/plain", "text/html"}
    assert "global list `cache`[0]" in bundle["text/plain"]


def test_leak_str_is_one_line():
    text = str(_leak(used_at=SourceLoc(file="In [5]", line=1)))
    assert "\n" not in text
    assert text == (
        "f32[3] tracer from jit, created at In [4]:2 (f), stored in global "
        "list `cache`[0], used at In [5]:1 outside its transformation"
    )


def test_summary_text_is_a_table_of_leaks_by_function_and_html_escapes():
    report = _report(
        _leak(),
        _leak(transformation="vmap", found_in="global list `cache`[1]"),
        _leak(function="<g> at t.py:9", found_in="global dict `d`['<k>']"),
    )
    text = to_text(report.summary(), width=160)
    lines = text.splitlines()
    assert lines[0].rstrip() == "jaxscope: 3 leaked tracers, by function"
    for column in ("function", "leaks", "transformations", "created at", "found in"):
        assert column in lines[1]
    assert "jit (1), vmap (1)" in text
    assert "global list `cache`[0]; global list `cache`[1]" in text
    assert lines[-1].startswith("3 leaked tracers: f32[3] tracer from jit")
    page = to_html(report.summary())
    assert "&lt;g&gt;" in page and "&lt;k&gt;" in page
    assert "<g>" not in page and "<k>" not in page
    for column in ("function", "leaks", "transformations", "created at", "found in"):
        assert f"<th>{column}</th>" in page


def test_views_show_a_file_under_the_cwd_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    full = str(tmp_path / "pkg" / "model.py")
    (tmp_path / "pkg" / "model.py").write_text("x = 1\n")
    leak = _leak(
        created_at=SourceLoc(file=full, line=3, function="f"),
        used_at=SourceLoc(file=full, line=7),
    )
    report = _report(leak)
    for text in (
        to_text(report, width=200),
        to_text(report.summary(), width=200),
        to_text(leak, width=200),
        report.message(short=True),
    ):
        assert full not in text
        assert "pkg/model.py:3" in text
    assert "used at pkg/model.py:7" in to_text(report, width=200)
    for page in (to_html(report), to_html(report.summary())):
        assert f'title="{full}:3"' in page  # the full path as a tooltip
    assert f"created at {full}:3" in to_html(leak)  # in the tooltip
    assert full in str(leak) and full in report.message()  # the data keeps it


def test_empty_summary_says_nothing_leaked():
    assert to_text(LeakReport().summary()) == "jaxscope: no tracer leaked"
    assert "no tracer leaked" in to_html(LeakReport().summary())


# --------------------------------------------------------------------------- magic

_LEAKY_CELL = """\
import jax, jax.numpy as jnp
saved = []
def f(x):
    y = jnp.sin(x) * 2
    saved.append(y)
    return y
out = jax.jit(f)(1.0)
"""


def test_leaks_cell_magic_shows_the_report_instead_of_crashing(ip):
    with capture_output() as cap:
        ip.run_cell_magic("leaks", "--as rep", _LEAKY_CELL)
    assert ip.user_ns["out"] is not None  # the cell ran
    text = cap.outputs[-1].data["text/plain"]
    assert "jaxscope: 1 leaked tracer" in text
    assert "global list `saved`[0]" in text
    assert "In [" in text and "(f)" in text
    assert "text/html" in cap.outputs[-1].data
    report = ip.user_ns["rep"]
    assert report.leaks[0].transformation == "jit"
    assert report.leaks[0].created_at.line == 4
    import jax

    assert jax.config.jax_check_tracer_leaks is False


def test_leaks_cell_magic_on_a_clean_cell(ip):
    cell = "import jax, jax.numpy as jnp\nres = jax.jit(jnp.cos)(0.0)\n"
    with capture_output() as cap:
        ip.run_cell_magic("leaks", "", cell)
    assert "no tracer leaked" in cap.outputs[-1].data["text/plain"]
    with capture_output() as cap:
        ip.run_cell_magic("leaks", "-q", cell)
    assert cap.outputs == []
    assert float(ip.user_ns["res"]) == 1.0


def test_leaks_cell_magic_reports_a_leaked_tracer_used_in_the_cell(ip):
    import jax

    cell = _LEAKY_CELL + "saved[0] + 1\n"
    with capture_output() as cap, pytest.raises(jax.errors.UnexpectedTracerError):
        ip.run_cell_magic("leaks", "--as rep2", cell)
    text = cap.outputs[-1].data["text/plain"]
    assert "global list `saved`[0]; used at In [" in text
    assert ip.user_ns["rep2"].leaks[0].used_at.line == 8


_CELL_IN_A_SHELL = """\
%%leaks --as {name}
import jax, jax.numpy as jnp
kept_in_cell = []
def g(x):
    kept_in_cell.append(jnp.cos(x) * 2)
    return x
jax.jit(g)(1.0)
{tail}"""


def test_a_leaks_cell_whose_code_raises_fails_like_the_code_would(ip):
    cell = _CELL_IN_A_SHELL.format(name="rep_err", tail="raise ValueError('boom')\n")
    with capture_output() as cap:
        result = ip.run_cell(cell, store_history=True)
    assert not result.success
    assert isinstance(result.error_in_exec, ValueError)
    assert "ValueError" in cap.stdout + cap.stderr and "boom" in cap.stdout
    assert "jaxscope: 1 leaked tracer" in cap.outputs[-1].data["text/plain"]
    assert len(ip.user_ns["rep_err"]) == 1


def test_an_interrupted_leaks_cell_stays_interrupted(ip):
    cell = _CELL_IN_A_SHELL.format(name="rep_int", tail="raise KeyboardInterrupt\n")
    with capture_output():
        result = ip.run_cell(cell, store_history=True)
    assert isinstance(result.error_in_exec, KeyboardInterrupt)
    assert not result.success


def test_a_clean_leaks_cell_that_raises_shows_no_all_clear(ip):
    with capture_output() as cap:
        result = ip.run_cell("%%leaks\nraise ValueError('x')\n", store_history=True)
    assert isinstance(result.error_in_exec, ValueError)
    assert not any("no tracer leaked" in str(o.data) for o in cap.outputs)


def test_leaks_cell_locations_read_as_the_cell_shows_them(ip):
    number = ip.execution_count  # the number this cell gets (IPython 8 and 9)
    cell = _CELL_IN_A_SHELL.format(name="rep_loc", tail="")
    cell = cell.replace(" g(", " g_loc(").replace("(g)", "(g_loc)")
    with capture_output():
        result = ip.run_cell(cell, store_history=True)
    assert result.success
    (leak,) = ip.user_ns["rep_loc"].leaks
    created = leak.created_at
    assert (created.file, created.line, created.function) == (
        f"In [{number}]",
        5,  # line 1 is %%leaks
        "g_loc",
    )


def test_a_leaks_cell_shows_its_last_value(ip):
    with capture_output() as cap:
        ip.run_cell("%%leaks\nx_value = 40\nx_value + 2\n", store_history=True)
    assert "42" in cap.stdout
    assert "no tracer leaked" in cap.outputs[-1].data["text/plain"]


@pytest.mark.parametrize(
    ("line", "message"),
    [("--as 1x", "--as takes a variable name"), ("--bogus", "unrecognized arguments")],
)
def test_leaks_cell_magic_rejects_bad_options_in_one_line(ip, line, message):
    with pytest.raises(UsageError, match=message) as info:
        ip.run_cell_magic("leaks", line, "x = 1")
    assert "\n" not in str(info.value)


def test_leaks_cell_magic_help(ip):
    with capture_output() as cap:
        ip.run_cell_magic("leaks", "--help", "raise RuntimeError('must not run')")
    assert "--as NAME" in cap.stdout
    assert "  %%leaks [--as NAME] [-q]" in cap.stdout  # a cell magic: two %


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # worded as every magic's option errors are (the shared option parser)
        ("--bogus", "unrecognized arguments: --bogus"),
        ("-q --as", "argument --as: expected one argument"),
        # no call in this line: a value that reads as a call is still the value
        (
            "--as f(x)",
            "%%leaks --as takes a variable name, got 'f(x)'; use e.g. --as report",
        ),
    ],
)
def test_leaks_cell_magic_reads_its_options_as_the_line_magics_do(ip, line, message):
    with pytest.raises(UsageError) as info:
        ip.run_cell_magic("leaks", line, "raise RuntimeError('must not run')")
    assert str(info.value) == message


@pytest.mark.parametrize("line", ["-h", "-q --help", "--as rep -h"])
def test_leaks_cell_magic_help_after_other_options(ip, line):
    ip.user_ns.pop("rep", None)
    with capture_output() as cap:
        ip.run_cell_magic("leaks", line, "raise RuntimeError('must not run')")
    assert "  %%leaks [--as NAME] [-q]" in cap.stdout
    assert "rep" not in ip.user_ns


# --------------------------------------------------------------------------- pytest

_TESTS = """
import jax, jax.numpy as jnp

kept = []

def test_leaks():
    def f(x):
        y = jnp.cos(x) + 1
        kept.append(y)
        return y
    jax.jit(f)(1.0)

def test_clean():
    assert float(jax.jit(jnp.sin)(0.0)) == 0.0
"""


def test_pytest_option_fails_a_leaking_test_with_the_report(pytester):
    pytester.makepyfile(test_it=_TESTS)
    result = pytester.runpytest_subprocess("--jax-check-leaks", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            # the file relative to the working directory, not /tmp/.../test_it.py
            "*jaxscope: 1 leaked tracer: f32[] tracer from jit, created at test_it.py:9 (f),"
            " stored in global list `kept`[0]*",
        ]
    )


def test_pytest_without_the_option_does_not_check(pytester):
    pytester.makepyfile(test_it=_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_pytest_ini_option_turns_checking_on(pytester):
    pytester.makepyfile(test_it=_TESTS)
    pytester.makeini("[pytest]\njax_check_leaks = true\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)


# ------------------------------------------------------------------------------ CLI


def test_cli_run_with_leaks_prints_the_report(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent("""
        import jax, jax.numpy as jnp
        debug = {}
        def step(w):
            g = jnp.tanh(w) * 0.5
            debug["g"] = g
            return w - g
        print(float(jax.jit(step)(1.0)))
    """)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "jaxscope", "run", str(script), "--leaks"],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "created at train.py:5 (step)" in proc.stderr  # relative to the cwd
    assert str(script) not in proc.stderr
    assert proc.stdout.strip() == "0.6192"[:3] or proc.stdout.strip().startswith("0.6")
    assert "jaxscope: 1 leaked tracer" in proc.stderr
    assert "global dict `debug`['g']" in proc.stderr
    assert proc.stderr.count("global dict `debug`['g']") == 1  # not listed twice
    assert "train.py:5" in proc.stderr


def test_a_syntax_error_in_a_leaks_cell_points_at_the_line_the_cell_shows(ip):
    # as %%time does: line 1 is the %%leaks line, so `if True` is line 3
    with capture_output() as cap:
        result = ip.run_cell("%%leaks\nx = 1\nif True\n  x\n", store_history=True)
    error = result.error_in_exec
    assert isinstance(error, SyntaxError)
    assert error.lineno == 3 and (error.text or "").strip() == "if True"
    assert "if True" in cap.stdout + cap.stderr
