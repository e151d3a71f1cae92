"""compat.source on real traced programs: the private source-info hooks still work."""

from __future__ import annotations

import inspect
import os

import jax
import jax.numpy as jnp

import jaxscope
from jaxscope.compat import source as cs

HERE = os.path.abspath(__file__)


def traced_here(x):
    with jax.named_scope("layer1"):
        return jnp.sin(x)  # the line


def _eqn():
    return jax.make_jaxpr(traced_here)(jnp.ones(3)).jaxpr.eqns[0]


def _line():
    lines, start = inspect.getsourcelines(traced_here)
    return start + next(i for i, t in enumerate(lines) if "# the line" in t)


def test_eqn_traceback_and_innermost_user_frame():
    tb = cs.eqn_traceback(_eqn())
    assert tb is not None
    raw = cs.innermost_user_frame(tb)
    assert raw == cs.RawFrame(HERE, _line(), raw.column, "traced_here")
    assert raw.column == 15  # 0-based start of `jnp.sin(x)`
    assert cs.innermost_user_frame(None) is None


def test_is_user_file_excludes_jax_and_jaxscope():
    assert cs.is_user_file(HERE)
    assert not cs.is_user_file(jax.__file__)
    assert not cs.is_user_file(jaxscope.__file__)


def test_register_own_frames_is_idempotent_and_hides_a_directory(tmp_path):
    lib = tmp_path / "mylib"
    lib.mkdir()
    (lib / "dense.py").write_text(
        "import jax.numpy as jnp\ndef dense(x):\n    return jnp.cos(x)\n"
    )
    file = str(lib / "dense.py")
    assert cs.is_user_file(file)
    import importlib.util

    spec = importlib.util.spec_from_file_location("mylib_dense", file)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def model(x):
        return mod.dense(x)  # model line

    try:
        cs.register_own_frames(str(lib))
        cs.register_own_frames(str(lib))
        assert not cs.is_user_file(file)
        eqn = jax.make_jaxpr(model)(jnp.ones(2)).jaxpr.eqns[0]
        raw = cs.innermost_user_frame(cs.eqn_traceback(eqn))
        assert raw.function.endswith("model") and raw.file == HERE
    finally:
        from jax._src import source_info_util, traceback_util

        path = os.path.join(str(lib), "")
        source_info_util._exclude_paths.remove(path)
        traceback_util._exclude_paths.remove(path)


def test_eqn_name_stack():
    assert cs.eqn_name_stack(_eqn()) == "layer1"
    bare = jax.make_jaxpr(jnp.cos)(1.0).jaxpr.eqns[0]
    assert cs.eqn_name_stack(bare) == ""


def test_eqn_name_stack_entries_separate_transforms_from_scopes():
    def loss(x):
        with jax.named_scope("layer0"):
            with jax.named_scope("attn"):
                return jnp.sin(x).sum()

    eqns = jax.make_jaxpr(jax.grad(loss))(jnp.ones(3)).jaxpr.eqns
    entries = {cs.eqn_name_stack_entries(e) for e in eqns}
    forward = (("transform", "jvp"), ("scope", "layer0"), ("scope", "attn"))
    assert forward in entries
    assert (("transform", "transpose"), *forward) in entries
    assert cs.eqn_name_stack_entries(jax.make_jaxpr(jnp.cos)(1.0).jaxpr.eqns[0]) == ()


def test_frames_of_leaves_out_the_stdlibs_frozen_modules(tmp_path):
    # Run as `python -m prog`: runpy's frames (`<frozen runpy>`) are on the stack, and
    # jax 0.9 counts them as user code.
    import subprocess
    import sys

    (tmp_path / "prog.py").write_text(
        "import jax, jax.numpy as jnp\n"
        "from jaxscope.compat.source import eqn_traceback, frames_of\n"
        "eqn = jax.make_jaxpr(lambda x: jnp.sin(x))(1.0).jaxpr.eqns[0]\n"
        "print(sorted({f.file for f in frames_of(eqn_traceback(eqn))}))\n"
    )
    root = os.path.dirname(os.path.dirname(jaxscope.__file__))
    env = {**os.environ, "PYTHONPATH": root, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run(
        [sys.executable, "-m", "prog"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "prog.py" in out
    assert "<frozen" not in out


def test_frames_of_keeps_nothing_of_a_program_once_it_is_gone():
    # The line tables of a program traced once used to stay until 200,000 frames had
    # been mapped: a retained heap that made every later GC pass slower.
    import gc

    namespace: dict = {}
    exec(compile("def f(x):\n    return x * 2.0\n", "<gone>", "exec"), namespace)
    eqn = jax.make_jaxpr(namespace["f"])(1.0).jaxpr.eqns[0]
    code_id = id(namespace["f"].__code__)
    assert cs.frames_of(cs.eqn_traceback(eqn))[0].function == "f"
    assert code_id in cs._POSITIONS and code_id in cs._FRAMES
    del eqn, namespace
    gc.collect()
    assert code_id not in cs._POSITIONS
    assert code_id not in cs._FRAMES and code_id not in cs._USER_CODES


def test_frames_of_gives_pythons_line_and_column_on_a_long_function(tmp_path):
    # The tables are built from co_lines() and co_positions() separately: every
    # equation's line and column must still be what Python's own table says.
    import linecache

    body = "".join(
        f"    x = jnp.{'sin' if i % 2 else 'cos'}(x) + {i}.5\n" for i in range(300)
    )
    path = tmp_path / "long_prog.py"
    path.write_text("import jax.numpy as jnp\n\ndef f(x):\n" + body + "    return x\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    eqns = jax.make_jaxpr(namespace["f"])(1.0).jaxpr.eqns
    assert len(eqns) == 600
    for eqn in eqns:
        frame = cs.frames_of(cs.eqn_traceback(eqn))[0]
        text = linecache.getline(str(path), frame.line)
        primitive = eqn.primitive.name
        assert text.strip().startswith("x = jnp.")
        expected = text.index("jnp.") if primitive in ("sin", "cos") else 8
        assert (frame.column, primitive in text or primitive == "add") == (
            expected,
            True,
        )
