"""Shared fixtures: the JAX config guard and a real IPython shell with jaxscope loaded."""

from __future__ import annotations

import inspect
import os
import shutil

import jax
import pytest


def _config_snapshot() -> dict[str, object]:
    # getattr sees thread-local overrides (disable_jit, checking_leaks contexts);
    # a few options exist only in ``values``.
    snapshot: dict[str, object] = {}
    for name, value in jax.config.values.items():
        try:
            snapshot[name] = getattr(jax.config, name)
        except AttributeError:
            snapshot[name] = value
    return snapshot


@pytest.fixture(autouse=True)
def jax_config_unchanged():
    """Every test must leave JAX's global config as it found it."""
    before = _config_snapshot()
    yield
    after = _config_snapshot()
    changed = {k: (before[k], after[k]) for k in before if before[k] != after.get(k)}
    assert not changed, f"JAX config changed by the test: {changed}"


@pytest.fixture(scope="session")
def ipython_shell(tmp_path_factory):
    """A real ``TerminalInteractiveShell`` (simple prompt, private IPYTHONDIR)."""
    os.environ["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipythondir"))
    from IPython.terminal.interactiveshell import TerminalInteractiveShell

    shell = TerminalInteractiveShell.instance(simple_prompt=True, colors="nocolor")
    shell.history_manager.enabled = False
    return shell


@pytest.fixture
def ip(ipython_shell):
    """The session shell with ``%load_ext jaxscope``; unload checks nothing is left."""
    shell = ipython_shell
    magics_before = {k: set(v) for k, v in shell.magics_manager.magics.items()}
    events_before = {k: list(v) for k, v in shell.events.callbacks.items()}
    shell.run_line_magic("load_ext", "jaxscope")
    yield shell
    shell.run_line_magic("unload_ext", "jaxscope")
    magics_after = {k: set(v) for k, v in shell.magics_manager.magics.items()}
    events_after = {k: list(v) for k, v in shell.events.callbacks.items()}
    assert magics_after == magics_before, "unload_ext left magics behind"
    assert events_after == events_before, "unload_ext left event callbacks behind"
    assert shell.CustomTB is None or not getattr(
        shell.CustomTB, "__jaxscope__", False
    ), "unload_ext left a custom exception handler"


def chromium_path() -> str | None:
    """Debian's Chromium, or None where it is not installed."""
    path = "/usr/bin/chromium"
    return path if os.path.exists(path) else shutil.which("chromium")


@pytest.fixture(scope="session")
def require_chromium() -> str:
    """The Chromium executable; skip only off CI when it is missing, fail on CI."""
    path = chromium_path()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(
                "Chromium is missing on CI: .ci/run must apt-get install chromium"
            )
        pytest.skip("Chromium not installed (apt-get install chromium)")
    return path


@pytest.fixture
def require_dot() -> str:
    """Graphviz's ``dot``; skip only off CI when it is missing, fail on CI."""
    path = shutil.which("dot")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(
                "Graphviz is missing on CI: .ci/run must apt-get install graphviz"
            )
        pytest.skip("Graphviz's dot not installed (apt-get install graphviz)")
    return path


def source_line_of(fn, marker: str) -> int:
    """The file line number of the first source line of ``fn`` containing ``marker``."""
    fn = inspect.unwrap(fn)
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if marker in text:
            return start + offset
    raise AssertionError(f"{marker!r} not in the source of {fn.__name__}")


@pytest.fixture
def line_of():
    """``line_of(fn, marker)``: the line of ``fn``'s source holding ``marker``.

    (tests/errors overrides it with a variant whose marker defaults to "# <- error".)
    """
    return source_line_of
