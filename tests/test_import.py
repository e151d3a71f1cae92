"""`import jaxscope` stays light: no IPython, widgets or rich until something draws."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ["IPython", "ipywidgets", "anywidget", "rich", "traitlets"]


def loaded_after(code: str, modules: list[str] = HEAVY) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``code``."""
    script = (
        "import sys\n"
        f"{code}\n"
        "import json\n"
        f"print(json.dumps([m for m in {modules!r} if m in sys.modules]))\n"
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


_LOAD_EXT = (
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "shell = InteractiveShell.instance()\n"
    "shell.run_line_magic('load_ext', 'jaxscope')\n"
    "magics = shell.magics_manager.magics\n"
    "assert {'jaxpr', 'hlo', 'jaxstep', 'purity', 'recompiles'} <= set(magics['line'])\n"
    "assert 'leaks' in magics['cell']\n"
)
_LOADED_BY_MAGICS = [
    "jax",
    "rich",
    "ipywidgets",
    "anywidget",
    "jaxscope._jaxpr.builder",
]


def test_load_ext_registers_magics_without_loading_what_they_use():
    assert loaded_after(_LOAD_EXT, _LOADED_BY_MAGICS) == []


def test_a_magic_loads_what_it_uses_when_first_used():
    code = _LOAD_EXT + (
        "shell.run_cell('import jax.numpy as jnp')\n"
        "result = shell.run_cell('v = %jaxpr jnp.sin(jnp.ones(2))')\n"
        "assert result.success\n"
    )
    assert loaded_after(code, ["jax", "jaxscope._jaxpr.builder"]) == [
        "jax",
        "jaxscope._jaxpr.builder",
    ]


def test_a_formatter_registered_by_class_name_is_removed_by_unload(ipython_shell):
    # %load_ext registers the recompile event's HTML by class name, so as not to
    # import the records; unload removes it, whether IPython resolved the name or not.
    from jaxscope._recompiles.records import RecompileEvent

    html = ipython_shell.display_formatter.formatters["text/html"]
    key = ("jaxscope._recompiles.records", "RecompileEvent")
    for resolve in (False, True):
        ipython_shell.run_line_magic("load_ext", "jaxscope")
        try:
            assert key in html.deferred_printers
            if resolve:
                assert callable(html.lookup_by_type(RecompileEvent))
                assert RecompileEvent in html.type_printers
        finally:
            ipython_shell.run_line_magic("unload_ext", "jaxscope")
        assert key not in html.deferred_printers
        assert RecompileEvent not in html.type_printers
