"""Equations traced through Flax, Equinox and Optax code are attributed to the user's
own line that called the library, not to the library's file."""

from __future__ import annotations

from pathlib import Path

import pytest

import jaxscope as js
from jaxscope.compat import source as csource

from .programs import PROGRAMS

PROGRAMS_FILE = str(Path(__file__).with_name("programs.py"))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_attributed_equation_points_at_the_users_file(name):
    step, args = PROGRAMS[name]()
    eqns = js.jaxpr(step)(*args).eqns
    files = {e.source.file for e in eqns if e.source is not None}
    assert files == {PROGRAMS_FILE}
    attributed = sum(e.source is not None for e in eqns)
    assert attributed / len(eqns) > 0.75


def test_linen_conv_equations_land_on_the_line_that_calls_the_layer():
    step, args = PROGRAMS["linen_resnet"]()
    lines = Path(PROGRAMS_FILE).read_text().splitlines()
    convs = [
        e for e in js.jaxpr(step)(*args).eqns if e.primitive == "conv_general_dilated"
    ]
    called_from = {lines[e.source.line - 1].strip() for e in convs}
    # Forward and backward convolutions of the block are the user's two Conv lines
    # and the stem, never flax/linen/linear.py.
    assert "y = linen.Conv(self.filters, (3, 3))(x)" in called_from
    assert "x = linen.Conv(4, (3, 3))(x)" in called_from


def test_optax_update_equations_land_on_the_users_update_call():
    step, args = PROGRAMS["linen_lm"]()
    lines = Path(PROGRAMS_FILE).read_text().splitlines()
    eqns = js.jaxpr(step)(*args).eqns
    start = next(i for i, t in enumerate(lines, 1) if t.startswith("def linen_lm"))
    update_line = next(
        i for i, t in enumerate(lines, 1) if i > start and "tx.update(grads" in t
    )
    assert sum(e.source is not None and e.source.line == update_line for e in eqns) > 20


def test_library_files_are_told_from_the_users_project():
    import flax

    assert csource.is_library_file(flax.__file__)
    assert not csource.is_library_file(PROGRAMS_FILE)


def test_extra_library_paths_come_from_the_environment(monkeypatch, tmp_path):
    vendored = tmp_path / "vendor" / "lib.py"
    csource.is_library_file.cache_clear()
    monkeypatch.setenv("JAXSCOPE_LIBRARY_PATHS", str(tmp_path / "vendor"))
    try:
        assert csource.is_library_file(str(vendored))
    finally:
        csource.is_library_file.cache_clear()


def test_fast_frames_agree_with_jax_on_every_equation():
    from jax._src import source_info_util as siu  # the reference implementation

    for name in ("linen_lm", "eqx_gru"):
        step, args = PROGRAMS[name]()
        view = js.jaxpr(step)(*args)
        for eqn in view.closed_jaxpr.jaxpr.eqns:
            tb = eqn.source_info.traceback
            ours = [(f.file, f.line, f.function) for f in csource.frames_of(tb)]
            theirs = [
                (f.file_name, f.start_line, f.function_name)
                for f in siu.user_frames(tb)
            ]
            assert ours == theirs


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_equation_has_a_user_line_even_inside_nested_jits(name):
    step, args = PROGRAMS[name]()
    eqns = js.jaxpr(step)(*args).eqns
    assert [e for e in eqns if e.source is None] == []


def test_the_library_frame_stays_available_as_detail():
    step, args = PROGRAMS["linen_resnet"]()
    conv = next(
        e for e in js.jaxpr(step)(*args).eqns if e.primitive == "conv_general_dilated"
    )
    assert conv.frames[0].file.endswith("flax/linen/linear.py")
    assert conv.source in conv.frames and conv.source.file == PROGRAMS_FILE


@pytest.mark.parametrize("name", ["linen_lm", "eqx_gru", "nnx_cnn"])
def test_optimized_hlo_ops_point_at_the_users_lines(name):
    step, args = PROGRAMS[name]()
    ops = js.hlo(step, stage="optimized")(*args).ops
    located = [op for op in ops if op.source is not None]
    assert len(located) > len(ops) / 3
    assert {op.source.file for op in located} == {PROGRAMS_FILE}
    assert any("site-packages" in frame.file for op in located for frame in op.frames)
