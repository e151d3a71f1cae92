"""User values read into NumPy: the one way every feature copies a value to the host.

``np.asarray`` refuses arrays of JAX's extended dtypes: a typed PRNG key
(``jax.random.key(0)``, what ``nnx.Rngs`` and Linen's ``rngs`` carry) raises
``TypeError: JAX array with PRNGKey dtype cannot be converted to a NumPy array``.
Here a key is read as its key data (``jax.random.key_data``) and named by JAX's own
spelling of its dtype (``key<fry>``), so values, NaN checks, digests and layouts
treat keys as what they are instead of crashing.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def is_extended(dtype: Any) -> bool:
    """Whether ``dtype`` is one of JAX's extended dtypes (typed PRNG keys, ...),
    which NumPy cannot hold."""
    if dtype is None:
        return False
    try:
        return bool(jnp.issubdtype(dtype, jax.dtypes.extended))
    except TypeError:
        return False


def is_key(value: Any) -> bool:
    """Whether ``value`` is an array of typed PRNG keys (``jax.random.key``)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return False
    try:
        return bool(jnp.issubdtype(dtype, jax.dtypes.prng_key))
    except TypeError:
        return False


def dtype_name(dtype: Any) -> str:
    """``"float32"``, or for an extended dtype JAX's own text (``"key<fry>"``)."""
    if is_extended(dtype):
        return str(dtype)
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype)


def dtype_itemsize(dtype: Any) -> int:
    """Bytes per element of ``dtype`` (a dtype, or its name); 8 for a threefry key."""
    size = getattr(dtype, "itemsize", None)
    if isinstance(size, int):
        return size
    return np.dtype(dtype).itemsize


def aval_text(value: Any) -> str:
    """``f32[2,3]`` / ``key<fry>[4]``: the value's dtype and shape as jaxprs print."""
    from jaxscope._format import short_dtype

    shape = ",".join(str(int(d)) for d in getattr(value, "shape", ()))
    dtype = getattr(value, "dtype", None)
    name = dtype_name(dtype) if is_extended(dtype) else short_dtype(dtype)
    return f"{name}[{shape}]"


def host_array(value: Any) -> np.ndarray:
    """``value`` copied to a NumPy array; a typed PRNG key as its key data (an
    array of the key implementation's ``uint32`` words, one more axis).

    Raises:
        TypeError: ``value`` cannot be read (a tracer, an extended dtype other
            than a key); callers describe such a value without its contents.
    """
    if is_key(value):
        return np.asarray(jax.random.key_data(value))
    return np.asarray(value)


def is_inexact(dtype: Any) -> bool:
    """Whether ``dtype`` is floating or complex (never an extended dtype)."""
    if dtype is None or is_extended(dtype):
        return False
    try:
        return bool(jnp.issubdtype(dtype, jnp.inexact))
    except TypeError:
        return False
