"""``jaxscope.compat.errors`` on real JAX exceptions (one test per function)."""

from __future__ import annotations

import contextlib
import os

import jax
import jax.numpy as jnp
from jax import lax

from jaxscope.compat import errors as cerrors


def _raised(fn, *args):
    try:
        fn(*args)
    except Exception as exc:
        return exc
    raise AssertionError("nothing raised")


@contextlib.contextmanager
def filtering(mode):
    before = jax.config.jax_traceback_filtering
    jax.config.update("jax_traceback_filtering", mode)
    try:
        yield
    finally:
        jax.config.update("jax_traceback_filtering", before)


def _loop(x):
    return lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)


def test_is_jax_file_tells_jax_from_user_code():
    assert cerrors.is_jax_file(jax.numpy.__file__)
    assert cerrors.is_jax_file(
        os.path.join(os.path.dirname(jax.__file__), "_src", "core.py")
    )
    assert not cerrors.is_jax_file(__file__)
    assert not cerrors.is_jax_file("<ipython-input-3-abc>")


def test_before_transformation_cause_of_grad_of_while_loop():
    exc = _raised(jax.grad(_loop), 1.0)
    cause = cerrors.before_transformation_cause(exc)
    assert cause is not None
    assert type(cause).__name__ == "JaxStackTraceBeforeTransformation"
    assert cause.__traceback__ is not None
    assert cerrors.is_jax_wrapper_exception(cause)
    assert not cerrors.is_jax_wrapper_exception(exc)


def test_before_transformation_cause_is_none_for_tracing_errors():
    exc = _raised(jax.jit(lambda x: x[x > 0]), jnp.ones(3))
    assert cerrors.before_transformation_cause(exc) is None


def test_unfiltered_cause_under_remove_frames_mode():
    with filtering("remove_frames"):
        exc = _raised(jax.jit(lambda a, b: a @ b), jnp.ones((2, 3)), jnp.ones((2, 3)))
    cause = cerrors.unfiltered_cause(exc)
    assert cause is not None
    assert cerrors.is_jax_wrapper_exception(cause)
    with filtering("off"):
        plain = _raised(jax.jit(lambda a, b: a @ b), jnp.ones((2, 3)), jnp.ones((2, 3)))
    assert cerrors.unfiltered_cause(plain) is None


def test_full_tracebacks_add_the_frames_jax_removed():
    with filtering("remove_frames"):
        exc = _raised(jax.jit(lambda a, b: a @ b), jnp.ones((2, 3)), jnp.ones((2, 3)))
    own, unfiltered = cerrors.full_tracebacks(exc)
    assert own is exc.__traceback__ and unfiltered is not None
    with filtering("off"):
        plain = _raised(jax.jit(lambda a, b: a @ b), jnp.ones((2, 3)), jnp.ones((2, 3)))
    assert cerrors.full_tracebacks(plain) == [plain.__traceback__]


def test_jax_notes_under_quiet_remove_frames_mode():
    note = cerrors.simplified_traceback_note()
    assert "JAX_TRACEBACK_FILTERING" in note
    with filtering("quiet_remove_frames"):
        exc = _raised(jax.jit(lambda a, b: a @ b), jnp.ones((2, 3)), jnp.ones((2, 3)))
    assert cerrors.jax_notes(exc)
    assert cerrors.jax_notes(ValueError("x")) == []


def test_filtering_mode_follows_config():
    with filtering("off"):
        assert cerrors.filtering_mode() == "off"
    with filtering("remove_frames"):
        assert cerrors.filtering_mode() == "remove_frames"


def test_jax_error_types_cover_tracer_errors_and_runtime_errors():
    types = cerrors.jax_error_types()
    assert jax.errors.TracerBoolConversionError in types
    assert jax.errors.NonConcreteBooleanIndexError in types
    exc = _raised(jax.jit(lambda x: 1.0 if x > 0 else 0.0), 1.0)
    assert isinstance(exc, types)
    assert jax.errors.JaxRuntimeError in types
