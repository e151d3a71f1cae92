"""Import: ``import jaxscope`` against ``import jax``, each in a fresh interpreter.

Each round starts ``python -c "import jax"`` and ``python -c "import jaxscope"``
(alternating which goes first); CPU time is the children's. Budget: jaxscope adds at
most 150 ms (median of the paired differences).

    python benchmarks/bench_import.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import harness

ENV = dict(os.environ, JAX_PLATFORMS="cpu")


def fresh_import(module: str) -> None:
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=ENV)


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    yield harness.compare(
        "import jaxscope vs import jax",
        lambda: fresh_import("jaxscope"),
        lambda: fresh_import("jax"),
        rounds=cfg.n(15),
        warmup=cfg.warm(1),  # the OS file cache
        budget=harness.Budget(0.150, on="extra"),
        cpu_clock=harness.children_cpu_time,
    )


if __name__ == "__main__":
    harness.main(bench, __doc__)
