"""Errors that XLA raises while jaxscope compiles or runs the user's program reach the
user as one jaxscope error naming what failed and what to do, never as JAX's raw
``JaxRuntimeError`` from inside jaxscope."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import pytest

import jaxscope as js


def no_such_ffi_target(x):
    call = jax.ffi.ffi_call("no_such_target", jax.ShapeDtypeStruct(x.shape, x.dtype))
    return call(x) * 2


def test_find_nan_wraps_an_xla_error_as_step_does():
    with pytest.raises(js.StepError) as stepped:
        js.step(no_such_ffi_target)(jnp.ones(3)).run()
    with pytest.raises(js.StepError) as hunted:
        js.find_nan(no_such_ffi_target)(jnp.ones(3))
    message = str(hunted.value)
    assert "\n" not in message
    assert "no_such_target" in message and "ffi_call" in message
    assert "test_runtime_errors.py" in message
    assert type(stepped.value) is type(hunted.value)


def test_profile_of_shapes_says_it_needs_arrays_and_what_takes_shapes():
    def f(x):
        return jnp.sin(x) * 2

    with pytest.raises(js.InvalidCallError) as info:
        js.profile(f)(jax.ShapeDtypeStruct((3,), jnp.float32))
    message = str(info.value)
    assert "\n" not in message
    assert "js.profile needs concrete arrays" in message
    assert "argument x is a ShapeDtypeStruct f32[3]" in message
    assert "js.memory" in message and "js.hlo" in message


def test_find_nan_of_shapes_names_itself_and_the_argument():
    def f(x):
        return jnp.sin(x) * 2

    with pytest.raises(js.InvalidCallError) as info:
        js.find_nan(f)(jax.ShapeDtypeStruct((3,), jnp.float32))
    assert str(info.value).startswith("js.find_nan needs concrete values")
    assert "argument x is a ShapeDtypeStruct" in str(info.value)


_OUT_OF_MEMORY = """
import resource
import jax, jax.numpy as jnp
import jaxscope as js

# a runaway allocation fails, not the machine
resource.setrlimit(resource.RLIMIT_AS, (16 * 2**30, 16 * 2**30))


def makes_huge(x):
    return jnp.zeros((10**12,), jnp.float32) + x.sum()


for name, transform in (
    ("profile", js.profile(makes_huge, repeat=1, warmup=0)),
    ("find_nan", js.find_nan(makes_huge)),
):
    try:
        transform(jnp.ones(3))
    except js.JaxscopeError as exc:
        print(name, type(exc).__name__, str(exc).replace(chr(10), " | "))
    except Exception as exc:
        print(name, "RAW", type(exc).__name__)
"""


@pytest.mark.slow
def test_out_of_memory_in_profile_and_find_nan_is_one_jaxscope_line():
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_OUT_OF_MEMORY)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.strip().splitlines())
    assert lines["profile"].startswith("ProfileError "), lines["profile"]
    assert "RESOURCE_EXHAUSTED" in lines["profile"]
    assert "js.memory(makes_huge)(...)" in lines["profile"]
    assert lines["find_nan"].startswith("StepError "), lines["find_nan"]
    assert "RESOURCE_EXHAUSTED" in lines["find_nan"]
