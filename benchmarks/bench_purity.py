"""Purity watcher: a jitted call's cache hit, and tracing, with ``js.watch_purity`` on vs off.

1. Cache hit: 5,000 calls of a compiled function per round, the watcher active
   (started outside the clock) vs inactive. Budget: median ratio <= 1.02.
2. Tracing: ``jax.jit(f).trace(x)`` of a fresh function (a new code object from a new
   file each round, as a re-run notebook cell makes; it captures globals the watcher
   snapshots), inside ``with js.watch_purity():`` vs without. Budget: <= 1.3.
3. A notebook cell under ``%purity on`` with 1,000 watched jitted functions (distinct
   functions, each traced once, all capturing the global array ``w``), in a real IPython shell, the
   session's watcher active vs stopped (outside the clock; it keeps what it
   recorded), 20 cells per round:
   - a trivial cell (``a = 1``). Budget: <= +1 ms per cell;
   - a cell that rebinds the captured array to an equal one (``w = w * 1``): every
     function that captured ``w`` is checked, and the array hashed once. Reported.

    python benchmarks/bench_purity.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import contextlib
import os
import tempfile

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp())

from collections.abc import Iterator

import harness
import jax
import jax.numpy as jnp
import programs

import jaxscope as js

CALLS = 5_000
WATCHED = 1_000
CELLS = 20

SOURCE = """
import jax.numpy as jnp

scale = 2.0
table = {"bias": 0.5}


def model(x):
    for _ in range(60):
        x = jnp.tanh(x * scale + table["bias"])
    return x.sum()
"""


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    x = jnp.ones(8)
    fn = jax.jit(lambda v: v * 2.0 + 1.0)
    jax.block_until_ready(fn(x))
    log = js.watch_purity()

    def calls() -> None:
        for _ in range(CALLS):
            fn(x)

    yield harness.compare(
        "purity cache hit, watcher on/off",
        calls,
        calls,
        jaxscope_context=lambda: log,
        rounds=cfg.n(41),
        warmup=cfg.warm(2),
        budget=harness.Budget(1.02),
        per=CALLS,
    )
    assert not log.findings, log.findings

    def watched(model) -> None:
        with js.watch_purity():
            jax.jit(model).trace(x)

    def plain(model) -> None:
        jax.jit(model).trace(x)

    yield harness.compare(
        "purity tracing, watcher on/off",
        watched,
        plain,
        make=lambda: programs.load(SOURCE, "model"),
        rounds=cfg.n(21),
        warmup=cfg.warm(2),
        budget=harness.Budget(1.3),
    )

    yield from _cells(cfg)


def _cells(cfg: harness.Config) -> Iterator[harness.Result]:
    from IPython.terminal.interactiveshell import TerminalInteractiveShell
    from IPython.utils.capture import capture_output

    shell = TerminalInteractiveShell.instance(simple_prompt=True, colors="nocolor")
    if shell.history_manager is not None:
        shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "jaxscope")

    def purity(action: str) -> None:
        with contextlib.redirect_stdout(None):
            shell.run_line_magic("purity", action)  # off keeps what was recorded

    purity("on")
    # Distinct functions, as a notebook's are (a finding is shown once per name).
    defs = "".join(f"def f{k}(x):\n    return x * w + {k}\n" for k in range(WATCHED))
    setup = shell.run_cell(
        "import jax, jax.numpy as jnp\n"
        "w = jnp.ones(256)\n"
        f"{defs}"
        f"fns = [jax.jit(globals()[f'f{{k}}']) for k in range({WATCHED})]\n"
        "for f in fns:\n"
        "    f(w)\n",
        store_history=False,
    )
    assert setup.success, setup.error_in_exec
    purity("off")

    @contextlib.contextmanager
    def watching() -> Iterator[None]:
        purity("on")
        try:
            yield
        finally:
            purity("off")

    for name, cell in (("trivial cell", "a = 1"), ("rebinding w", "w = w * 1")):

        def cells(cell: str = cell) -> None:
            for _ in range(CELLS):
                result = shell.run_cell(cell, store_history=False)
                assert result.success, result.error_in_exec

        budget = harness.Budget(1e-3, on="extra") if name == "trivial cell" else None
        yield harness.compare(
            f"%purity on, {WATCHED:,} watched functions: {name}, on/off",
            cells,
            cells,
            jaxscope_context=watching,
            rounds=cfg.n(21),
            warmup=cfg.warm(2),
            budget=budget,
            per=CELLS,
        )
    # Every function was watched: changing w makes each of them stale.
    with watching(), capture_output() as shown:
        assert shell.run_cell("w = w + 1", store_history=False).success
    text = shown.stdout + "".join(o.data.get("text/plain", "") for o in shown.outputs)
    assert text.count("jaxscope purity:") >= WATCHED, text[:300]


if __name__ == "__main__":
    harness.main(bench, __doc__)
