"""The compat promise: a JAX release that moves a private symbol breaks the one
jaxscope function that needs it, at first use, with a ``JaxscopeCompatError`` that
names the symbol; ``import jaxscope`` (and every module of it) keeps working."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Hide a private JAX module or attribute, then import all of jaxscope, then use it.
_SCRIPT = """
import importlib, pkgutil, sys
import jax, jax.extend, jax.numpy as jnp  # JAX itself loads before the hiding
{hide}
import jaxscope as js
for info in pkgutil.walk_packages(js.__path__, "jaxscope."):
    if info.name.rsplit(".", 1)[-1] in ("magic", "plugin", "widget"):
        continue  # front-ends import IPython/pytest/anywidget, not JAX internals
    importlib.import_module(info.name)
print("IMPORTED")
try:
    js.jaxpr(lambda x: jnp.sin(x))(jnp.ones(3)).eqns[0].source
except js.JaxscopeCompatError as exc:
    print("COMPAT:", exc)
else:
    print("NO ERROR")
"""


def run_hidden(hide: str, *, call: bool = True) -> str:
    script = _SCRIPT.format(hide=textwrap.dedent(hide))
    if not call:  # JAX itself may need a hidden module to run anything at all
        script = script.split('print("IMPORTED")')[0] + 'print("IMPORTED")\n'
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.parametrize(
    ("hide", "named"),
    [
        (
            # JAX keeps using its own module object; jaxscope gets a copy without it.
            "import types, jax._src.source_info_util as real\n"
            "fake = types.ModuleType(real.__name__)\n"
            "fake.__dict__.update(vars(real)); del fake.is_user_filename\n"
            "sys.modules[real.__name__] = fake",
            "jax._src.source_info_util.is_user_filename",
        ),
        (
            "sys.modules['jax._src.source_info_util'] = None",
            "jax._src.source_info_util",
        ),
    ],
    ids=["attribute", "module"],
)
def test_a_moved_private_symbol_fails_at_first_use_naming_it(hide, named):
    out = run_hidden(hide)
    assert "IMPORTED" in out
    compat_lines = [line for line in out.splitlines() if line.startswith("COMPAT:")]
    assert compat_lines, out
    assert named in compat_lines[0] and "absent in jax" in compat_lines[0]


def test_without_anything_hidden_the_same_call_works():
    out = run_hidden("")
    assert "IMPORTED" in out and "NO ERROR" in out


def private_modules_jaxscope_uses() -> set[str]:
    """Every ``jax._src`` module named in jaxscope's compat layer."""
    import re
    from pathlib import Path

    import jaxscope

    compat = Path(jaxscope.__file__).parent / "compat"
    found: set[str] = set()
    for path in compat.glob("*.py"):
        found |= set(re.findall(r"[\"'](jax\._src(?:\.\w+)+)[\"']", path.read_text()))
        found |= {
            f"jax._src.{m}"
            for m in re.findall(r"from jax\._src import (\w+)", path.read_text())
        }
    return found


def test_every_private_module_gone_at_once_still_imports_jaxscope():
    modules = sorted(private_modules_jaxscope_uses())
    assert "jax._src.core" in modules and "jax._src.pjit" in modules
    hide = "\n".join(f"sys.modules[{m!r}] = None" for m in modules)
    assert "IMPORTED" in run_hidden(hide, call=False)


# The source-mapping symbols, changed on JAX's real module after import (as a JAX
# release would have them): deleted, None, or a function whose signature changed.
# JAX's own ``user_frames`` and ``register_exclusion`` use them too, so a deletion
# shows as a NameError inside JAX, under jaxscope's call.
_CORRUPT = """
import importlib
import jax, jax.extend, jax.numpy as jnp  # jax.extend's import registers its own
import jaxscope as js

x = jnp.ones(3)
module = importlib.import_module({module!r})
if {how!r} == "deleted":
    delattr(module, {name!r})
elif {how!r} == "None":
    setattr(module, {name!r}, None)
else:
    def changed(*args, **kwargs):
        raise TypeError("changed() got an unexpected keyword argument 'x'")
    setattr(module, {name!r}, changed)
try:
    view = js.jaxpr(lambda x: jnp.sin(x) * 2)(x)
    str(view), view.eqns[0].source
except js.JaxscopeCompatError as exc:
    print("COMPAT:", exc)
except Exception as exc:
    print("RAW:", type(exc).__name__, exc)
else:
    print("NO ERROR")
# the primitive, not the equation: jax 0.9 prints an equation through is_user_filename
print("PLAIN:", jax.make_jaxpr(lambda x: jnp.sin(x) * 2)(x).eqns[0].primitive)
"""

_SOURCE_SYMBOLS = [
    ("jax._src.source_info_util", "is_user_filename"),
    ("jax._src.traceback_util", "_exclude_paths"),
    ("jax._src.traceback_util", "register_exclusion"),
]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["deleted", "None", "changed"])
@pytest.mark.parametrize(("module", "name"), _SOURCE_SYMBOLS)
def test_a_changed_source_mapping_symbol_gives_a_compat_error(module, name, how):
    script = _CORRUPT.format(module=module, name=name, how=how)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "PLAIN: sin" in out  # plain JAX still traces
    assert "RAW:" not in out, out
    if "COMPAT:" in out:  # names the symbol, or the JAX function that uses it
        assert "needs jax._src." in out and f"{module}." in out, out
