"""The profile and memory displays: a %lprun-style table in text, shaded source with
clickable lines in HTML, every user string escaped."""

from __future__ import annotations

import os
import re

import jax.numpy as jnp

from jaxscope._display import to_html, to_text
from jaxscope._profile.memory import MemoryView, memory
from jaxscope._profile.profile import ProfileView, profile
from jaxscope._profile.text import format_count, format_seconds, sparkline

from . import programs
from .programs import line_of


def clamp(x):
    y = jnp.where(x < 0.5, x * 2.0, x)  # <- tag "<b>"
    return (y @ y).sum()


def test_text_is_a_line_profiler_table(mlp_profile: ProfileView, monkeypatch):
    # files show relative to the working directory: here tests/, so profile/...
    monkeypatch.chdir(os.path.dirname(os.path.dirname(programs.__file__)))
    text = to_text(mlp_profile, width=120)
    assert text.startswith("js.profile of mlp_step: ")
    assert "(mean of 3 runs; cpu, 1 device)" in text
    assert "note: a fusion's time is split over its member ops' lines" in text
    assert re.search(r"Line #\s+Time\s+%\s+Ops\s+Line contents", text)
    assert "Hits" not in text  # no loop: no per-iteration columns
    hidden = line_of(programs.mlp_loss, "hidden")
    row = next(r for r in text.splitlines() if r.strip().startswith(f"{hidden} "))
    line = mlp_profile.by_line[(programs.__file__, hidden)]
    assert format_seconds(line.time) in row and "# <- hidden" in row
    assert re.search(
        r"^\s*\d+\s+def mlp_loss\(params, x, y\):", text, re.M
    )  # whole function
    assert "top lines" in text and "call tree" in text
    assert re.search(
        r"mlp_step \(profile/programs\.py\).*\n.*mlp_loss \(profile/programs\.py\)",
        text,
    )
    assert programs.__file__ not in text  # the full path stays in the data
    assert re.search(r"^profile/programs\.py — mlp_loss", text, re.M)  # block title
    page = to_html(mlp_profile)
    assert f'title="{programs.__file__}"' in page


def test_loops_add_hits_and_per_hit_columns(rnn_profile: ProfileView):
    text = to_text(rnn_profile, width=140)
    assert re.search(r"Line #\s+Time\s+Hits\s+Per hit\s+%\s+Ops\s+Line contents", text)
    cell = line_of(programs.rnn_cell, "cell")
    row = next(r for r in text.splitlines() if r.strip().startswith(f"{cell} "))
    assert f" {programs.STEPS} " in row
    assert "Hits = executions per run" in text


def test_sharded_text_says_devices_and_lists_the_collective(sharded_profile):
    text = to_text(sharded_profile, width=120)
    assert "8 devices" in text and "per device" in text
    assert re.search(r"collective all-reduce", text)
    one = to_text(sharded_profile.for_device(2), width=120)
    assert "device 2 of 8" in one


def test_html_shades_lines_and_opens_their_ops():
    view = profile(clamp, repeat=2)(jnp.ones((64, 64)))
    html = to_html(view)
    assert html.startswith('<div class="jaxscope-profile" id="jxp-profile-')
    assert "&lt;b&gt;" in html and "<b>" not in html
    line = line_of(clamp, 'tag "<b>"')
    rows = re.findall(r'<details class="jxp-row" data-line="(\d+)">', html)
    assert str(line) in rows
    assert len(rows) == len(view.lines)
    assert re.search(r'<summary style="background:rgba\(255,110,40,0\.\d+\)">', html)
    detail = html.split(f'data-line="{line}">', 1)[1].split("</details>", 1)[0]
    assert 'class="jxp-op"' in detail and "flops" in detail
    assert 'class="jxp-tree"' in html and "clamp" in html


def test_memory_text_and_html(mlp_memory: MemoryView, monkeypatch):
    monkeypatch.chdir(os.path.dirname(os.path.dirname(programs.__file__)))
    text = to_text(mlp_memory, width=140)
    assert programs.__file__ not in text  # files relative to the cwd
    assert "profile/programs.py" in text
    assert text.startswith("js.memory of mlp_step: peak ")
    assert "XLA memory_analysis():" in text
    assert "largest buffers at the peak" in text
    assert "argument params['w1']" in text and "donated" in text
    assert re.search(r"Line #\s+Bytes\s+%\s+Buffers\s+Line contents", text)
    html = to_html(mlp_memory)
    assert html.startswith('<div class="jaxscope-memory"')
    assert "params[&#x27;w1&#x27;]" in html
    assert re.search(r'<details class="jxp-row" data-line="\d+">', html)


def test_views_show_in_every_front_end(mlp_profile: ProfileView):
    bundle = mlp_profile._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert repr(mlp_profile).startswith("<ProfileView of mlp_step: ")
    view = memory(clamp)(jnp.ones((8, 8)))
    assert repr(view).startswith("<MemoryView of clamp: peak ")
    assert str(view).startswith("js.memory of clamp")


def test_number_formats():
    assert format_seconds(1.5) == "1.50 s"
    assert format_seconds(0.000123) == "123 µs"
    assert format_count(2.147e9) == "2.15G" and format_count(10) == "10"
    assert sparkline([0, 5, 10], width=3) == " ▄█"
