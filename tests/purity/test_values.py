"""Captured values compared by content, and globals that fight back: the watcher never
changes what the user's program does."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxscope as js
from jaxscope._purity import values

from .helpers import line_of


def test_numpy_array_mutated_in_place_is_stale(load):
    m = load(
        """
        import jax, numpy as np
        table = np.arange(4.0)
        @jax.jit
        def fn(x):
            return x + table
        """
    )
    with js.watch_purity() as plog:
        assert float(m.fn(0.0)[0]) == 0.0
    assert js.stale(m.fn) == []
    m.table[0] = 100.0  # the same object, new contents
    assert float(m.fn(0.0)[0]) == 0.0  # the compiled code still uses the old values
    (finding,) = js.stale(m.fn)
    assert finding.name == "table"
    assert "0.0" in finding.captured and "100.0" in finding.current
    assert finding.source.line == line_of(m, "return x + table")
    assert [f.name for f in plog.findings] == ["table"]
    m.table[0] = 0.0  # back to the traced contents: nothing to report
    assert js.stale(m.fn) == []


def test_a_large_array_changed_in_place_says_its_contents_changed(load):
    m = load(
        "import jax, numpy as np\ntable = np.zeros(1000)\nfn = jax.jit(lambda x: x + table)\n"
    )
    with js.watch_purity():
        m.fn(1.0)
    m.table[500] = 1.0
    (finding,) = js.stale(m.fn)
    assert finding.captured == "ndarray(float64[1000])"
    assert finding.current == "ndarray(float64[1000]) (contents changed)"


def test_array_captured_by_many_functions_is_hashed_once_per_check(load, monkeypatch):
    m = load(
        """
        import jax, numpy as np
        table = np.arange(8.0)
        fns = [jax.jit(lambda x, i=i: x * i + table) for i in range(20)]
        """
    )
    with js.watch_purity() as plog:
        for fn in m.fns:
            fn(1.0)
    hashed = []
    original = values.array_digest
    monkeypatch.setattr(
        values, "array_digest", lambda v: hashed.append(id(v)) or original(v)
    )
    assert plog.findings == []
    assert hashed == [id(m.table)]
    m.table[3] = -1.0
    hashed.clear()
    assert len(plog.findings) == 20
    assert hashed == [id(m.table)]


class _Hostile:
    """Every attribute lookup and repr fails; comparing it fails too."""

    def __getattr__(self, name):
        raise RuntimeError(f"no attribute {name} here")

    def __repr__(self):
        raise ValueError("no repr either")

    def __eq__(self, other):
        raise TypeError("no comparisons")

    __hash__ = object.__hash__


class _HostileCallable(_Hostile):
    def __call__(self, x):
        return x + 1


_HOSTILE_PROGRAM = """
import jax
from {mod} import _Hostile, _HostileCallable
guard = _Hostile()
helper = _HostileCallable()
@jax.jit
def fn(x):
    if guard is not None:
        x = x * 2
    return helper(x)
"""


def test_globals_whose_getattr_and_repr_raise_do_not_break_the_users_call(load):
    m = load(_HOSTILE_PROGRAM.format(mod=__name__))
    with js.watch_purity() as plog:
        assert float(m.fn(1.0)) == 3.0
        assert float(m.fn(jnp.ones(2))[0]) == 3.0
    assert plog.findings == []
    m.guard = _Hostile()  # a new object: the compiled code still holds the old one
    found = {f.name: f for f in js.stale(m.fn)}
    assert set(found) == {"guard"}
    assert (found["guard"].captured, found["guard"].current) == (
        "<_Hostile>",
        "<_Hostile>",
    )
    assert "guard" in str(plog)


def test_a_failing_watcher_never_reaches_the_users_program(load, monkeypatch):
    m = load(
        "import jax\nshift = 1.0\ndef fn(x):\n    return x + shift\nfn = jax.jit(fn)\n"
    )

    def broken(*args, **kwargs):
        raise RuntimeError("watcher bug")

    original = values.fingerprint
    for module in list(sys.modules.values()):  # wherever it was imported by name
        name = getattr(module, "__name__", "")
        if name.startswith("jaxscope._purity") and (
            getattr(module, "fingerprint", None) is original
        ):
            monkeypatch.setattr(module, "fingerprint", broken)
    with js.watch_purity() as plog:
        assert float(m.fn(jnp.float32(1.0))) == 2.0
    assert plog.findings == []


@pytest.mark.parametrize(
    "value",
    [np.float32(2.0), jnp.ones(3), (1, "a", None), {"k": [1, 2]}],
    ids=["numpy-scalar", "jax-array", "tuple", "dict"],
)
def test_rebinding_to_an_equal_value_is_not_stale(load, value):
    m = load("import jax\nvalue = None\nfn = jax.jit(lambda x: x + len(str(value)))\n")
    m.value = value
    with js.watch_purity():
        jax.block_until_ready(m.fn(1.0))
    m.value = jax.tree_util.tree_map(lambda v: v, value)
    m.value = np.array(value) if isinstance(value, np.ndarray) else m.value
    assert js.stale(m.fn) == []
