"""examples/06_errors.ipynb in a real kernel: HTML reports, and the original errors raised."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "06_errors.ipynb"

EXPECTED = {
    "jax.jit(clip_if)": ("TracerBoolConversionError", "static_argnums=(1,)"),
    "jax.jit(ramp)": ("ConcretizationTypeError", "static_argnums=(1,)"),
    "jax.jit(softplus)": ("TracerArrayConversionError", "np.log1p → jnp.log1p"),
    "jax.jit(layer)": ("TypeError", "did you mean h.T @ w?"),
    "reset_first(": ("TypeError", "x = x.at[0].set(0.0)"),
}


@pytest.mark.notebook
def test_errors_notebook_shows_source_mapped_html_and_keeps_the_errors():
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=8",
        JAX_PLATFORMS="cpu",
    )
    env.pop("PYTEST_CURRENT_TEST", None)
    NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        startup_timeout=120,
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    ).execute(env=env)  # stops at an error in any cell not tagged raises-exception
    raising = [c for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])]
    assert len(raising) == len(EXPECTED)
    for cell in raising:
        kind, hint = next(v for k, v in EXPECTED.items() if cell.source.startswith(k))
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert [e.ename for e in errors] == [kind], cell.source
        html = [
            o.data["text/html"]
            for o in cell.outputs
            if "text/html" in o.get("data", {})
        ]
        assert len(html) == 1, f"one report per failing cell: {cell.source}"
        assert 'class="jaxscope-error"' in html[0]
        assert "<details><summary>Full traceback</summary>" in html[0]
        assert hint.replace(">", "&gt;") in html[0]
        text = [
            o.data["text/plain"]
            for o in cell.outputs
            if "text/plain" in o.get("data", {})
        ]
        assert text[0].startswith(kind)
        assert f"at In [{cell.execution_count - 1}]" in text[0]
