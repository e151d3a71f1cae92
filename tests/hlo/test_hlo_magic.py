"""``%hlo`` through a real IPython shell, and notebook cells mapped to ``In [N]``."""

from __future__ import annotations

import re

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

CELL = (
    "import jax.numpy as jnp\n"
    "def cell_fn(x):\n"
    "    y = jnp.sin(x)\n"
    "    return y * 3.0\n"
    "x = jnp.ones((4, 4))\n"
)


def _define(ip) -> int:
    result = ip.run_cell(CELL, store_history=True)
    assert result.success
    return result.execution_count


def _run_hlo(ip, line: str):
    with capture_output() as captured:
        ip.run_line_magic("hlo", line)
    assert len(captured.outputs) == 1
    return captured.outputs[0].data


def test_ops_of_code_typed_in_a_cell_point_at_in_n(ip):
    count = _define(ip)
    for stage in ("stablehlo", "hlo", "optimized"):
        view = ip.run_cell(
            f"import jaxscope as js; js.hlo(cell_fn, stage={stage!r})(x)"
        ).result
        sines = [op for op in view.ops if op.opcode in ("sine", "stablehlo.sine")]
        assert sines, stage
        assert {(op.source.file, op.source.line) for op in sines} == {
            (f"In [{count}]", 3)
        }
        assert sines[0].source.function == "cell_fn"
        assert view.source_line(f"In [{count}]", 3) == "y = jnp.sin(x)"


def test_hlo_magic_shows_text_and_html(ip):
    count = _define(ip)
    data = _run_hlo(ip, "cell_fn(x)")
    plain, html = data["text/plain"], data["text/html"]
    assert plain.startswith("HLO of cell_fn")
    assert "sine(" in plain
    assert f"# In [{count}]:3" in plain
    assert "jxh-code" in html
    assert f"In [{count}]:3" in html
    assert "y = jnp.sin(x)" in html
    assert "cost and memory" not in plain


@pytest.mark.parametrize("stage", ["stablehlo", "optimized"])
def test_hlo_magic_stage_option(ip, stage):
    _define(ip)
    plain = _run_hlo(ip, f"--stage {stage} cell_fn(x)")["text/plain"]
    if stage == "stablehlo":
        assert plain.startswith("StableHLO of cell_fn")
        assert "stablehlo.sine" in plain
    else:
        assert plain.startswith("optimized HLO of cell_fn")
        assert "fusion" in plain


def test_hlo_magic_cost_option(ip):
    _define(ip)
    data = _run_hlo(ip, "--stage optimized --cost cell_fn(x)")
    assert "cost and memory" in data["text/plain"]
    assert "flops" in data["text/plain"]
    assert "argument_bytes" in data["text/html"]


def test_hlo_magic_does_not_run_the_call(ip):
    ip.run_cell(
        "import jax\n"
        "ran = []\n"
        "def noisy(x):\n"
        "    jax.debug.callback(lambda v: ran.append(1), x)\n"
        "    return x + 1\n",
        store_history=True,
    )
    _run_hlo(ip, "--stage optimized noisy(1.0)")
    assert ip.user_ns["ran"] == []


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--stage bad cell_fn(x)", r"unknown stage 'bad'"),
        ("", r"needs a call expression"),
        ("cell_fn", r"needs a call expression"),
        ("undefined_fn(x)", r"undefined_fn"),
        ("cell_fn(['text'])", r"x\[0\] is a str .*cannot trace"),
    ],
)
def test_hlo_magic_bad_input_is_a_one_line_usage_error(ip, line, message):
    _define(ip)
    with pytest.raises(UsageError, match=message) as info:
        ip.run_line_magic("hlo", line)
    assert "\n" not in str(info.value)


def test_hlo_magic_help_lists_the_stages(ip):
    doc = ip.find_line_magic("hlo").__doc__
    assert "--stage" in doc and "--cost" in doc


def test_call_site_ops_of_a_magic_point_at_the_magic_line_not_ipython(ip):
    defined = ip.run_cell(
        "import jax.numpy as jnp\n"
        "from jax import lax\n"
        "def summed(x):\n"
        "    c, _ = lax.scan(lambda c, a: (c + a, None), jnp.zeros(3), x)\n"
        "    return c\n"
        "xs = jnp.ones((4, 3))\n",
        store_history=True,
    )
    with capture_output() as captured:
        result = ip.run_cell("%hlo --stage stablehlo summed(xs)", store_history=True)
    assert result.success
    plain = captured.stdout  # the cell's result, printed by the displayhook
    assert "-packages" not in plain
    # jax 0.10 attributes the jit-level constant to the call site, the %hlo line
    # itself (jax 0.9 gives it no location); every other op is in the definition
    annotations = set(re.findall(r"# (In \[\d+\]:\d+)", plain))
    assert f"In [{defined.execution_count}]:4" in annotations
    assert annotations <= {
        f"In [{defined.execution_count}]:4",
        f"In [{result.execution_count}]:1",
    }


def test_hlo_magic_all_prints_fused_computations_in_full(ip):
    count = _define(ip)
    folded = _run_hlo(ip, "--stage optimized cell_fn(x)")["text/plain"]
    assert "fused computations folded" in folded
    assert "FileNames" not in folded and "stack_frame_id" not in folded
    full = _run_hlo(ip, "--stage optimized --all cell_fn(x)")["text/plain"]
    assert "fused computations folded" not in full
    sine = next(line for line in full.splitlines() if " sine(" in line)
    assert sine.startswith("    ") and sine.endswith(f"# In [{count}]:3")
    assert " sine(" not in folded
