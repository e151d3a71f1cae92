"""``%hlo`` in a real Jupyter kernel: HTML output, cells shown as ``In [N]``."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.notebook

CELLS = [
    "%load_ext jaxscope",
    "import jax.numpy as jnp\n"
    "def f(x):\n"
    "    y = jnp.sin(x)\n"
    "    return y * 2.0\n"
    "x = jnp.ones((4, 4))",
    "%hlo --stage optimized --cost f(x)",
    "import jaxscope as js\n"
    "v = js.hlo(f, stage='stablehlo')(x)\n"
    "sin = next(op for op in v.ops if op.opcode == 'stablehlo.sine')\n"
    "print(sin.source, v.source_line(sin.source.file, sin.source.line))",
]


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    return nb


def test_hlo_magic_in_a_kernel_maps_ops_to_the_cell(executed):
    outputs = [out for cell in executed.cells for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    views = [
        out
        for out in executed.cells[2].outputs
        if "jaxscope-hlo" in out.get("data", {}).get("text/html", "")
    ]
    assert len(views) == 1
    html = views[0]["data"]["text/html"]
    assert "In [2]:3" in html
    assert "y = jnp.sin(x)" in html
    assert "argument_bytes" in html
    (printed,) = executed.cells[3].outputs
    assert printed["text"].strip() == "In [2]:3 y = jnp.sin(x)"


def test_hlo_magic_in_a_kernel_shows_one_output_with_text(executed):
    # rich must write to jaxscope's buffer, not display on its own in a kernel
    (shown,) = executed.cells[2].outputs
    assert shown["data"]["text/plain"].startswith("optimized HLO of f")
