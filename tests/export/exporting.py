"""Helpers of the export tests: the notebook they export, a kernel environment, and
Chromium pages that may load nothing from the network (as an offline reader)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
JUPYTER = [sys.executable, "-m", "jupyter"]

PROGRAM = """\
import jax
import jax.numpy as jnp
from jax import lax


def body(c, x):
    return c + jnp.sin(x), c * 2.0


def f(x):
    with jax.named_scope("head"):
        y = jnp.tanh(x) * 3.0
    c, ys = lax.scan(body, 0.0, y)
    return c + ys.sum()


x = jnp.arange(4.0)
"""


def program() -> dict:
    """The notebook's program, run here too (the tests compare with it)."""
    namespace: dict = {}
    exec(compile(PROGRAM, "<export program>", "exec"), namespace)
    return namespace


def write_notebook(path: Path) -> Path:
    """A notebook with one graph output and one stepper output."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell("import jaxscope as js\n\n%load_ext jaxscope"),
        nbformat.v4.new_code_cell(PROGRAM),
        nbformat.v4.new_code_cell("%jaxgraph f(x)"),
        nbformat.v4.new_code_cell("%jaxstep f(x)"),
    ]
    nbformat.write(nb, path)
    return path


def kernel_env(**extra: str) -> dict[str, str]:
    """The environment for jupyter processes: this checkout's jaxscope, CPU JAX."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p
    )
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("PYTEST_CURRENT_TEST", None)
    env.update(extra)
    return env


def nbconvert(*args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    """Run ``jupyter nbconvert ARGS`` and fail with its output if it fails."""
    done = subprocess.run(
        [*JUPYTER, "nbconvert", *args],
        cwd=cwd,
        env=env or kernel_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]


LOCAL = ("file:", "blob:", "data:", "about:")


def offline(page) -> list[str]:
    """Abort every request that is not local; returns the list of aborted URLs."""
    aborted: list[str] = []

    def route(r):
        if r.request.url.startswith(LOCAL):
            r.continue_()
        else:
            aborted.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return aborted


def page_errors(page) -> list[str]:
    """Uncaught exceptions of ``page`` (failed network loads are not among them)."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def graph_is_interactive(page, scope: str = "body") -> int:
    """Wait for the viewer in ``scope``, collapse its scan group and expand it again;
    returns the number of nodes drawn."""
    root = page.locator(scope)
    root.locator(".jaxscope-graph[data-state=ready]").first.wait_for(timeout=60_000)
    graph = root.locator(".jaxscope-graph").first
    nodes = graph.locator(".jsg-node").count()
    before = int(graph.get_attribute("data-visible") or -1)
    graph.locator(".jsg-frame", has_text="scan").locator(
        ".jsg-frame-head"
    ).first.click()
    collapsed = graph.locator(".jsg-group.jsg-collapsed", has_text="scan")
    collapsed.wait_for(timeout=10_000)
    assert int(graph.get_attribute("data-visible") or -1) < before
    collapsed.click()  # expand it again
    page.wait_for_function(
        "([el, n]) => Number(el.getAttribute('data-visible')) === n",
        arg=[graph.element_handle(), before],
        timeout=10_000,
    )
    return nodes
