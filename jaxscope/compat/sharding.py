"""Private JAX names the sharding views need.

Relies on ``jax.core.Tracer`` (the base class of every tracer) and
``jax._src.config``'s thread-local config states, present and unchanged from jax 0.9
to 0.10.2.
"""

from __future__ import annotations

from typing import Any

from jaxscope.compat import PrivateModule, require


def is_tracer(value: Any) -> bool:
    """Whether ``value`` is a JAX tracer (an abstract value inside a transformation).

    Relies on: ``jax.core.Tracer``.
    """
    from jax import core  # a submodule, which `jax` does not export as an attribute

    tracer_cls = require(core, "Tracer", "compat.sharding.is_tracer")
    return isinstance(value, tracer_cls)


def no_persistent_cache_writes() -> Any:
    """A context in which this thread stores no persistent-cache entry (a minimum
    compile time no compile reaches), or None where JAX offers no such context.

    Relies on: ``jax._src.config.persistent_cache_min_compile_time_secs``, a config
    state that, called with a value, is a thread-local context manager.
    """
    config = PrivateModule("jax._src.config", "compat.sharding")
    state = getattr(config, "persistent_cache_min_compile_time_secs", None)
    try:
        return state(float("inf")) if callable(state) else None
    except Exception:  # a JAX whose states take no thread-local value
        return None
