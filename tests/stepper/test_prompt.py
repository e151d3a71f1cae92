"""The pdb-like prompt, driven by scripted stdin and compared as whole transcripts."""

from __future__ import annotations

import linecache
import textwrap

import jax.numpy as jnp
import pytest

import jaxscope as js
from jaxscope._stepper.magic import StepperPrompt

SOURCE = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp

    @jax.jit
    def scale(v):
        return v * 2.0

    def loss(x):
        a = scale(x)
        b = jnp.log(a - 1.0)
        return jnp.sum(b * 3.0)
    """
)
FILE = "nan_prog.py"


@pytest.fixture(scope="module")
def loss():
    linecache.cache[FILE] = (len(SOURCE), None, SOURCE.splitlines(True), FILE)
    namespace: dict = {}
    exec(compile(SOURCE, FILE, "exec"), namespace)
    return namespace["loss"]


def transcript(fake_io, stepper, commands):
    stdin, stdout = fake_io(commands)
    StepperPrompt(stepper, stdin, stdout).run()
    return stdout.getvalue()


def test_step_next_print_and_continue_transcript(loss, fake_io):
    s = js.step(loss)(jnp.array([1.0, 0.5]))
    out = transcript(fake_io, s, ["s", "n", "p a", "p x", "p a + 1", "f", "n"])
    expected = textwrap.dedent(
        """\
        > nan_prog.py:9 in loss  [loss]
            a = scale(x)
          -> b:f32[2] = jit[name=scale jaxpr={1 eqn}] a
        (jaxstep) s
        > nan_prog.py:6 in scale  [loss > jit(scale)]
            return v * 2.0
          -> d:f32[2] = mul c 2.0:f32[]
        (jaxstep) n
        > nan_prog.py:10 in loss  [loss]
            b = jnp.log(a - 1.0)
          -> e:f32[2] = sub b 1.0:f32[]
        (jaxstep) p a
        a = Array([2., 1.], dtype=float32)
        (jaxstep) p x
        x = Array([1. , 0.5], dtype=float32)
        (jaxstep) p a + 1
        Array([3., 2.], dtype=float32)
        (jaxstep) f
        program finished (loss); result: Array(-inf, dtype=float32)
        (jaxstep) n
        *** cannot next(): the program has finished (result in .result); start again with js.step(f)(*args)
        """
    )
    assert out == expected + "(jaxstep) \n"  # the last prompt, trailing space and all
    assert s.done


def test_nan_breakpoint_where_list_and_vars(loss, fake_io):
    s = js.step(loss)(jnp.array([1.0, 0.25]))
    out = transcript(fake_io, s, ["b nan", "c", "w", "l", "v", "q"])
    assert "(jaxstep) b nan\nbreakpoint set: nan\n" in out
    assert (
        "! nan produced by log at nan_prog.py:10 in loss  [loss]\n    b = jnp.log(a - 1.0)\n  <- "
        in out
    )
    assert "(jaxstep) w\n> loss at nan_prog.py:10\n" in out
    assert "  10  -> " in out and "b = jnp.log(a - 1.0)" in out
    table = out.split("(jaxstep) v\n", 1)[1].splitlines()
    assert table[0].split() == [
        *("name", "aval", "min", "max", "mean", "nan", "inf", "value")
    ]
    row = ["x", "(a)", "f32[2]", "0.25", "1", "0.625", "0", "0", "[1.", "0.25]"]
    assert table[1].split() == row
    assert table[-2].split()[:8] == ["b", "(f)", "f32[2]", "0", "0", "0", "1", "0"]
    assert out.rstrip().endswith("(jaxstep) q")
    assert not s.done


def test_bad_commands_and_breakpoints_are_one_line_errors(loss, fake_io):
    s = js.step(loss)(jnp.ones(2))
    out = transcript(
        fake_io, s, ["b 99", "b cosh", "p nope", "zz", "u", "b 10", "b", "c", "c", "s"]
    )
    assert (
        "*** break_on(line=...): no equation at line 99; lines with equations: 6, 9, 10, 11"
        in out
    )
    assert (
        "*** break_on(primitive=...): no 'cosh' equation in this program; primitives present:"
        in out
    )
    assert (
        "*** NameError: name 'nope' is not defined (your variables here: x; the jaxpr's with a $, as $a)"
        in out
    )
    assert "*** unknown command 'zz'; type help" in out
    assert "*** until needs a target" in out
    assert "breakpoints: line 10" in out
    assert "> nan_prog.py:10 in loss  [loss]" in out
    assert out.count("*** cannot step()") == 1  # the second c finished the program
    assert s.done


def test_empty_line_repeats_and_end_of_input_quits(loss, fake_io):
    s = js.step(loss)(jnp.ones(2))
    out = transcript(fake_io, s, ["n", "", "u 11"])
    assert out.count("> nan_prog.py:10 in loss") == 2  # sub, then log (same line)
    assert "> nan_prog.py:11 in loss" in out
    assert not s.done


def test_help_lists_every_command(loss, fake_io):
    out = transcript(fake_io, js.step(loss)(jnp.ones(2)), ["help"])
    for word in (
        "s(tep)",
        "n(ext)",
        "f(inish)",
        "c(ontinue)",
        "b(reak)",
        "p EXPR",
        "l(ist)",
        "w(here)",
        "q(uit)",
    ):
        assert word in out
