"""Source-mapped errors: their cost against plain JAX and plain IPython, in one run.

1. A cache-hit cell ``f(x)`` (50 cells per round) in an IPython shell with
   ``%load_ext jaxscope`` vs without (the error display only runs on exceptions).
2. ``str(js.explain(exc))`` (explain and render) against JAX raising that error
   (trace + raise), for three common errors.
3. A failing cell's display with the extension vs IPython's own traceback.

No budgets: reported for scale. The extension is loaded and unloaded outside the clock.

    python benchmarks/bench_errors.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import contextlib
import os
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp())

from collections.abc import Callable, Iterator

import harness
import jax
import jax.numpy as jnp
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.utils.capture import capture_output

import jaxscope as js

CELLS = 50


def clip_if(x, limit):
    if limit > 0:
        return jnp.minimum(x, limit)
    return x


def model(x, w):
    h = jnp.tanh(x)
    return h @ w


def positives(x):
    return x[x > 0]


CASES: dict[str, Callable[[], object]] = {
    "bool conversion": lambda: jax.jit(clip_if)(jnp.ones(3), 2.0),
    "matmul shapes": lambda: jax.jit(model)(jnp.ones((4, 3)), jnp.ones((4, 5))),
    "boolean index": lambda: jax.jit(positives)(jnp.ones(3)),
}


def raise_and_catch(fn: Callable[[], object]) -> Exception:
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("no error")


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    shell = TerminalInteractiveShell.instance(simple_prompt=True, colors="nocolor")
    if shell.history_manager is not None:
        shell.history_manager.enabled = False
    shell.run_cell(
        "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x * 2 + 1)\n"
        "x = jnp.ones(8)\nf(x)\n"
        "def clip_if(x, limit):\n    if limit > 0:\n        return x\n    return x\n"
    )

    @contextlib.contextmanager
    def extension() -> Iterator[None]:
        shell.run_line_magic("load_ext", "jaxscope")
        try:
            yield
        finally:
            shell.run_line_magic("unload_ext", "jaxscope")

    def hit_cells() -> None:
        for _ in range(CELLS):
            shell.run_cell("f(x)", silent=True)

    yield harness.compare(
        "errors: cache-hit cell, %load_ext jaxscope / plain",
        hit_cells,
        hit_cells,
        jaxscope_context=extension,
        rounds=cfg.n(21),
        warmup=cfg.warm(1),
        per=CELLS,
    )
    for name, fn in CASES.items():
        yield harness.compare(
            f"errors: str(js.explain(exc)) / JAX raising it, {name}",
            lambda exc: str(js.explain(exc)),
            lambda _exc, fn=fn: raise_and_catch(fn),
            make=lambda fn=fn: raise_and_catch(fn),
            rounds=cfg.n(9),
            warmup=cfg.warm(1),
        )

    def failing_cell() -> None:
        with capture_output():
            shell.run_cell("jax.jit(clip_if)(jnp.ones(3), 2.0)")

    yield harness.compare(
        "errors: failing cell display, jaxscope / IPython",
        failing_cell,
        failing_cell,
        jaxscope_context=extension,
        rounds=cfg.n(9),
        warmup=cfg.warm(1),
    )


if __name__ == "__main__":
    harness.main(bench, __doc__)
