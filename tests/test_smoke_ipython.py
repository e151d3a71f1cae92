from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output


def test_jaxpr_magic_shows_equations_with_source_line(ip):
    ip.run_cell("import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x) * 2\nx = jnp.ones(3)")
    with capture_output() as cap:
        ip.run_line_magic("jaxpr", "f(x)")
    text = cap.outputs[0].data["text/plain"]
    assert "sin" in text and "mul" in text
    assert "In [" in text


def test_jaxpr_magic_rejects_a_non_call(ip):
    ip.run_cell("y = 3")
    with pytest.raises(UsageError, match="needs a call expression"):
        ip.run_line_magic("jaxpr", "y")
