"""Every example notebook runs top to bottom in a real kernel, without an error.

Cells tagged ``expect-html`` must display ``text/html``; cells tagged
``expect-widget`` must display a widget view; cells tagged ``raises-exception`` (the
nbclient convention) must raise, and only they may. Notebooks are stored without
outputs.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def mimes(cell) -> set[str]:
    found: set[str] = set()
    for out in cell.get("outputs", []):
        found.update(out.get("data", {}))
    return found


def describe(cell) -> str:
    first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
    return f"cell {cell.get('id', '?')} ({first[:60]!r})"


def test_there_are_example_notebooks():
    assert NOTEBOOKS, f"no notebooks in {EXAMPLES}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [describe(c) for c in code_cells(nb) if c.outputs or c.execution_count]
    assert not dirty, f"{path.name} has stored outputs in {dirty}: strip them"
    assert code_cells(nb), f"{path.name} has no code"
    assert "assert" in code_cells(nb)[-1].source, (
        f"{path.name} must end in assert cells"
    )


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_and_shows_rich_outputs(path):
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        startup_timeout=120,
        allow_errors=True,
        resources={"metadata": {"path": str(EXAMPLES)}},
    )
    client.execute(env=kernel_env())
    errors = []
    for cell in code_cells(nb):
        tags = set(cell.metadata.get("tags", []))
        raised = [o for o in cell.outputs if o.output_type == "error"]
        if "raises-exception" in tags:
            assert raised, (
                f"{describe(cell)} is tagged raises-exception but did not raise"
            )
            continue
        errors += [f"{describe(cell)}: {o.ename}: {o.evalue}" for o in raised]
    assert not errors, f"{path.name} raised: " + " | ".join(errors)
    for cell in code_cells(nb):
        tags = set(cell.metadata.get("tags", []))
        if "expect-html" in tags:
            assert "text/html" in mimes(cell), f"{describe(cell)} showed no text/html"
        if "expect-widget" in tags:
            assert WIDGET_MIME in mimes(cell), f"{describe(cell)} showed no widget"
