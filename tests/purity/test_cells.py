"""``%purity on`` after each cell: what the cell changed is reported, and a cell that
cannot have changed a captured value costs nothing per watched function."""

from __future__ import annotations

from IPython.utils.capture import capture_output

from .helpers import texts

_COUNTING = '''
import jax, numpy as np
touched = []
class Config:
    def __init__(self):
        object.__setattr__(self, "scale", 2.0)
    def __getattribute__(self, name):
        touched.append(name)
        return object.__getattribute__(self, name)
class Table:
    """An array-like whose contents are read through __array__ (counted)."""
    def __init__(self, values):
        self.values, self.shape, self.dtype = np.asarray(values), (len(values),), np.dtype("float32")
    def __array__(self, dtype=None, copy=None):
        touched.append("__array__")
        return self.values.astype(np.float32)
cfg = Config()
table = Table([1.0, 2.0, 3.0])
fns = [jax.jit(lambda x, i=i: x * cfg.scale + i) for i in range(30)]
readers = [jax.jit(lambda x, i=i: x + i + np.asarray(table)) for i in range(30)]
'''


def _run(ip, cell: str) -> str:
    with capture_output() as cap:
        result = ip.run_cell(cell)
    assert result.success, result.error_in_exec
    return texts(cap)


def test_in_place_change_of_a_captured_numpy_array_is_reported_after_the_cell(ip):
    ip.run_line_magic("purity", "on")
    _run(
        ip,
        "import jax, numpy as np\ntable = np.arange(3.0)\nf = jax.jit(lambda x: x + table)\nf(1.0)",
    )
    text = _run(ip, "table[0] = 100.0")
    assert "f uses table = [0.0, 1.0, 2.0] baked in" in text.replace("<lambda>", "f")
    assert "[100.0, 1.0, 2.0] now" in text
    ip.run_line_magic("purity", "off")


def test_a_trivial_cell_touches_no_captured_value(ip):
    ip.run_line_magic("purity", "on")
    _run(ip, _COUNTING)
    _run(ip, "[f(1.0) for f in fns + readers];")
    ip.user_ns["touched"].clear()
    assert "jaxscope purity" not in _run(ip, "x = 1")
    assert ip.user_ns["touched"] == []
    ip.run_line_magic("purity", "off")


def test_a_rebound_array_is_hashed_once_however_many_functions_captured_it(ip):
    ip.run_line_magic("purity", "on")
    _run(ip, _COUNTING)
    _run(ip, "[f(1.0) for f in fns + readers];")
    ip.user_ns["touched"].clear()
    assert "jaxscope purity" not in _run(ip, "table = Table([1.0, 2.0, 3.0])")
    assert ip.user_ns["touched"] == ["__array__"]
    ip.user_ns["touched"].clear()
    text = _run(ip, "table = Table([1.0, 2.0, 4.0])")
    assert (
        "uses table = [1.0, 2.0, 3.0] baked in" in text
        and "[1.0, 2.0, 4.0] now" in text
    )
    # read once to hash it and once to show it, not once per function
    assert ip.user_ns["touched"] == ["__array__", "__array__"]
    ip.run_line_magic("purity", "off")


def test_changes_made_by_functions_the_cell_calls_are_reported(ip):
    ip.run_line_magic("purity", "on")
    _run(
        ip,
        "import jax\n"
        "config = {'k': 1}\n"
        "def bump():\n    config['k'] = 2\n"
        "def make(scale):\n"
        "    def set_scale(v):\n        nonlocal scale\n        scale = v\n"
        "    return jax.jit(lambda x: x * scale + config['k']), set_scale\n"
        "g, set_scale = make(2.0)\n"
        "g(1.0)",
    )
    text = _run(ip, "bump()")
    assert "config = {'k': 1} baked in" in text
    text = _run(ip, "set_scale(3.0)")
    assert "scale = 2.0 baked in" in text and "3.0 now" in text
    ip.run_line_magic("purity", "off")


def test_an_attribute_changed_through_another_name_is_reported(ip):
    ip.run_line_magic("purity", "on")
    _run(
        ip,
        "import jax\n"
        "class Model:\n    temperature = 1.0\n"
        "model = Model()\nmodels = [model]\n"
        "h = jax.jit(lambda x: x / model.temperature)\nh(1.0)",
    )
    text = _run(ip, "models[0].temperature = 0.5")
    assert "model.temperature = 1.0 baked in" in text and "0.5 now" in text
    ip.run_line_magic("purity", "off")


def test_a_hostile_global_does_not_disturb_the_cells(ip):
    ip.run_line_magic("purity", "on")
    _run(
        ip,
        "import jax\n"
        "class Hostile:\n"
        "    def __getattr__(self, name):\n        raise RuntimeError(name)\n"
        "    def __repr__(self):\n        raise ValueError('repr')\n"
        "    def __eq__(self, other):\n        raise TypeError('eq')\n"
        "    __hash__ = object.__hash__\n"
        "h = Hostile()\n"
        "k = jax.jit(lambda x: x * 2 if h is not None else x)\n"
        "k(1.0)",
    )
    text = _run(ip, "h = Hostile()")
    assert "h = <Hostile> baked in" in text
    assert "Traceback" not in text and "Error" not in text
    ip.run_line_magic("purity", "off")
