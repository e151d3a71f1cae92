"""`import jaxscope` stays light: no IPython, widgets or rich until something draws."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["IPython", "ipywidgets", "anywidget", "rich", "traitlets"]


def loaded_after(code: str) -> list[str]:
    script = (
        "import sys\n"
        f"{code}\n"
        "import json\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_jaxscope_loads_no_display_library():
    assert loaded_after("import jaxscope") == []


def test_core_views_as_data_load_no_display_library():
    code = (
        "import jax.numpy as jnp, jaxscope as js\n"
        "v = js.jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))\n"
        "assert [e.primitive for e in v.eqns] == ['sin', 'mul']\n"
        "assert v.text.count('# ') == 2 and v.by_line\n"
        "js.SourceLoc, js.EqnInfo, js.JaxscopeError\n"
    )
    assert loaded_after(code) == []


def test_displaying_a_view_loads_rich_but_not_widgets():
    code = (
        "import jax.numpy as jnp, jaxscope as js\n"
        "v = js.jaxpr(lambda x: jnp.sin(x))(jnp.ones(3))\n"
        "import rich.console, io\n"
        "rich.console.Console(file=io.StringIO()).print(v)\n"
    )
    loaded = loaded_after(code)
    assert "rich" in loaded
    assert "ipywidgets" not in loaded and "anywidget" not in loaded
