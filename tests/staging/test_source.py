"""_source: frames and tracebacks to SourceLoc, IPython cells as In [N]."""

from __future__ import annotations

import functools
import inspect
import os

import jax
import jax.numpy as jnp
import pytest

from jaxscope import _source
from jaxscope._records import SourceLoc

HERE = os.path.abspath(__file__)


def defined_here(x):
    return jnp.sin(x)  # eqn line


def eqn_line():
    lines, start = inspect.getsourcelines(defined_here)
    return start + next(i for i, t in enumerate(lines) if "# eqn line" in t)


def test_source_loc_str_and_key():
    loc = SourceLoc(file="In [3]", line=7, column=4, function="f")
    assert str(loc) == "In [3]:7"
    assert loc.key == ("In [3]", 7)
    assert SourceLoc(file="a.py", line=1) == SourceLoc(file="a.py", line=1)
    with pytest.raises(AttributeError):
        loc.line = 8  # frozen


def test_display_filename_maps_ipython_names_and_keeps_others():
    assert _source.display_filename("<ipython-input-12-0123abcd>") == "In [12]"
    assert _source.display_filename("/src/model.py") == "/src/model.py"


def test_display_filename_uses_the_running_shell(ip):
    result = ip.run_cell("def cellf(x):\n    return x\n", store_history=True)
    filename = ip.user_ns["cellf"].__code__.co_filename
    assert _source.display_filename(filename) == f"In [{result.execution_count}]"


def test_loc_of_traceback_names_the_users_line_of_an_equation():
    eqn = jax.make_jaxpr(defined_here)(jnp.ones(2)).jaxpr.eqns[0]
    loc = _source.loc_of_traceback(eqn.source_info.traceback)
    assert loc == SourceLoc(
        file=HERE, line=eqn_line(), column=11, function="defined_here"
    )
    assert _source.loc_of_traceback(None) is None


def test_loc_of_function_unwraps_jit_and_wraps():
    start = inspect.getsourcelines(defined_here)[1]
    want = SourceLoc(file=HERE, line=start, function="defined_here")
    assert _source.loc_of_function(defined_here) == want
    assert _source.loc_of_function(jax.jit(defined_here)) == want

    @functools.wraps(defined_here)
    def wrapper(x):
        return defined_here(x)

    # a Python wrapper is code of its own: its location is the wrapper's
    assert _source.loc_of_function(wrapper).function.endswith("wrapper")
    assert _source.loc_of_function(functools.partial(defined_here)) == want
    assert _source.loc_of_function(42) is None


def test_user_frame_of_stack_is_this_test():
    here = inspect.currentframe().f_lineno + 1
    loc = _source.user_frame_of_stack()
    assert loc.file == HERE
    assert loc.function.endswith("test_user_frame_of_stack_is_this_test")
    assert loc.line == here


def test_user_frames_of_exception_skip_jax_frames():
    def inner():
        jnp.ones(3).reshape(4)  # raising line

    try:
        inner()
    except Exception as exc:
        locs = _source.user_frames_of_exception(exc)
    assert [loc.function.rsplit(".", 1)[-1] for loc in locs[-2:]] == [
        "test_user_frames_of_exception_skip_jax_frames",
        "inner",
    ]
    assert all(_source.is_user_file(loc.file) for loc in locs)
    assert not _source.is_user_file(jax.__file__)
