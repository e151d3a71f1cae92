"""compat.libraries on real Flax NNX and Equinox objects."""

from __future__ import annotations

import pytest

nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")

from jaxscope.compat import libraries as clib  # noqa: E402


def test_nnx_state_paths_leave_out_variables_an_earlier_argument_holds():
    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.1))
    seen: set[int] = set()
    assert clib.nnx_state_paths(model, seen) == ["bias", "kernel"]
    paths = clib.nnx_state_paths(optimizer, seen)
    assert (
        paths is not None and paths and not any(p.startswith("model.") for p in paths)
    )
    assert clib.nnx_state_paths(optimizer) == ["model.bias", "model.kernel", *paths]
    assert clib.nnx_state_paths([1.0]) is None
