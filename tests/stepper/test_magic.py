"""``%jaxstep`` in a real terminal IPython shell with scripted stdin."""

from __future__ import annotations

import io
import sys

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

CELL = """\
import jax.numpy as jnp
def f(x):
    a = x * 2.0
    return jnp.log(a - 1.0)
x = jnp.array([1.0, 0.25])
"""


@pytest.fixture
def shell(ip):
    ip.run_cell(CELL)
    return ip


def test_jaxstep_in_a_terminal_reads_commands_from_stdin(shell, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("s\np $b\nq\n"))
    shell.run_line_magic("jaxstep", "f(x)")
    out = capsys.readouterr().out
    assert "(jaxstep) s\n> In [" in out
    assert "-> c:f32[2] = sub b 1.0:f32[]" in out
    assert "$b = Array([2. , 0.5], dtype=float32)" in out
    stepper = shell.user_ns["_jaxstep"]
    assert not stepper.done and stepper.current.primitive == "sub"
    assert stepper.current.source.file.startswith("In [")


def test_jaxstep_nan_flag_stops_at_the_producing_line(shell, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("c\nq\n"))
    shell.run_line_magic("jaxstep", "--nan f(x)")
    out = capsys.readouterr().out
    assert "! nan produced by log at In [" in out
    assert "    return jnp.log(a - 1.0)" in out
    assert shell.user_ns["_jaxstep"].current.source.line == 4


def test_jaxstep_break_option_and_end_of_input(shell, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("c\n"))
    shell.run_line_magic("jaxstep", "-b log f(x)")
    out = capsys.readouterr().out
    assert "(jaxstep) c\n> In [" in out and "  -> d:f32[2] = log c\n(jaxstep) \n" in out
    assert shell.user_ns["_jaxstep"].current.primitive == "log"


def test_jaxstep_widget_option_shows_a_widget(shell):
    with capture_output() as cap:
        shell.run_line_magic("jaxstep", "--widget f(x)")
    assert cap.outputs, "nothing displayed"
    data = cap.outputs[0].data
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["text/plain"].startswith("Stepper of f (start)")
    assert "<table" in data["text/html"]
    assert not shell.user_ns["_jaxstep"].done


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "needs a call expression"),
        ("x", "needs a call expression"),
        ("nope(x)", "name 'nope' is not defined"),
        ("-b 99 f(x)", "no equation at line 99; lines with equations: 3, 4"),
        ("-b cosh f(x)", "no 'cosh' equation"),
        ("f(undefined_arg)", "undefined_arg"),
    ],
)
def test_bad_input_is_a_one_line_usage_error(shell, line, message):
    with pytest.raises(UsageError, match=message) as info:
        shell.run_line_magic("jaxstep", line)
    assert "\n" not in str(info.value)


def test_untraceable_function_is_a_one_line_usage_error(shell):
    shell.run_cell("def g(x):\n    if x > 0:\n        return x\n    return -x")
    with pytest.raises(UsageError, match="g raised TracerBoolConversionError"):
        shell.run_line_magic("jaxstep", "g(x[0])")


def test_jaxstep_help_shows_usage_and_options(shell, capsys):
    shell.run_line_magic("jaxstep", "--help")
    out = capsys.readouterr().out
    assert "%jaxstep [-b BREAKS] [--nan] [--inf] [--prompt] [--widget]" in out
    assert "pdb-like prompt" in out


def test_views_show_the_magic_line_as_the_user_typed_it(shell):
    # A cell defining the function and stepping it: IPython compiles the magic line as
    # get_ipython().run_line_magic(...); every view shows the typed `%jaxstep` line.
    from jaxscope._stepper.render import listing_text

    cell = "def g(x):\n    return jnp.sin(x) * 2.0\n%jaxstep --widget g(x)\n"
    widget = shell.run_cell(cell, store_history=True).result
    data, _ = widget._repr_mimebundle_()
    views = {
        "text/plain": data["text/plain"],
        "text/html": data["text/html"],
        "listing": listing_text(widget.stepper, 3),
        "widget": "\n".join(text for _, text in widget.state["source"]["lines"]),
    }
    for where, text in views.items():
        assert "run_line_magic" not in text, where
        assert "%jaxstep --widget g(x)" in text, where
