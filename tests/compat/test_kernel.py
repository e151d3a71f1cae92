"""compat.kernel in a real Jupyter kernel run by nbclient with its default options
(which ``jupyter nbconvert --execute`` uses): the stepper's widget model is opened for
live front-ends but kept out of the notebook's saved widget state, while other
widgets' state is saved as before."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from jaxscope.compat.kernel import comm_open_unparented

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

CELLS = [
    "%load_ext jaxscope\nimport ipywidgets as w\nimport jax.numpy as jnp\nx = jnp.ones(3)",
    "w.IntSlider(5)",
    "def f(x):\n    y = jnp.sin(x)\n    return y * 2.0\n%jaxstep f(x)",
]


def test_outside_a_kernel_it_changes_nothing():
    with comm_open_unparented():
        pass  # no kernel here: nothing to replace, nothing raised


@pytest.mark.notebook
@pytest.mark.slow
def test_stepper_model_is_live_but_not_saved_as_widget_state():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    outputs = [out for cell in nb.cells for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"], outputs
    [slider] = [o.data[WIDGET_VIEW]["model_id"] for o in nb.cells[1].outputs]
    [stepper] = [o for o in nb.cells[2].outputs if WIDGET_VIEW in o.get("data", {})]
    saved = nb.metadata.widgets[WIDGET_STATE]["state"]
    assert slider in saved  # a plain widget's state is kept, as nbclient does
    assert stepper.data[WIDGET_VIEW]["model_id"] not in saved
    # So nbconvert shows the stepper's transcript, with the line the user typed.
    html = stepper.data["text/html"]
    assert "Stepper of f" in html and "%jaxstep f(x)" in html
    assert "run_line_magic" not in html
