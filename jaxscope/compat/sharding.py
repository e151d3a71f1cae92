"""Private JAX names the sharding views need.

Relies on ``jax.core.Tracer`` (the base class of every tracer), present and unchanged
from jax 0.4.35 to 0.10.2.
"""

from __future__ import annotations

from typing import Any

from jaxscope.compat import require


def is_tracer(value: Any) -> bool:
    """Whether ``value`` is a JAX tracer (an abstract value inside a transformation).

    Relies on: ``jax.core.Tracer``.
    """
    from jax import core  # a submodule, which `jax` does not export as an attribute

    tracer_cls = require(core, "Tracer", "compat.sharding.is_tracer")
    return isinstance(value, tracer_cls)
