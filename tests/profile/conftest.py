"""Each real program is profiled (and its memory read) once per session: the views
are plain data, shared by the tests that read them."""

from __future__ import annotations

import pytest

from jaxscope._profile.memory import memory
from jaxscope._profile.profile import profile

from . import programs


@pytest.fixture(scope="session")
def mlp_profile():
    fn, args = programs.mlp()
    return profile(fn, repeat=3)(*args)


@pytest.fixture(scope="session")
def rnn_profile():
    fn, args = programs.scan_rnn()
    return profile(fn, repeat=3)(*args)


@pytest.fixture(scope="session")
def transformer_profile():
    fn, args = programs.transformer()
    return profile(fn, repeat=3)(*args)


@pytest.fixture(scope="session")
def sharded_profile():
    fn, args = programs.sharded()
    return profile(fn, repeat=3)(*args)


@pytest.fixture(scope="session")
def mlp_memory():
    fn, args = programs.mlp()
    return memory(fn)(*args)


@pytest.fixture(scope="session")
def optax_memory():
    fn, args = programs.optax_mlp()
    return memory(fn)(*args)
