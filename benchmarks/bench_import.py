"""Import and load: ``import jax, jaxscope`` against ``import jax``, and an IPython shell
with ``%load_ext jaxscope`` against the shell alone; each in a fresh interpreter.

Each round starts both commands (alternating which goes first); CPU time is the
children's. Byte code is cached (in a temporary ``PYTHONPYCACHEPREFIX``, written by an
untimed first run of each side), as it is for an installed package. Budgets (median of
the paired differences): importing jaxscope adds at most 150 ms to ``import jax``;
``%load_ext jaxscope`` adds at most 50 ms to starting IPython's shell.

    python benchmarks/bench_import.py [--smoke] [--rounds N] [--json PATH]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import harness

_PYCACHE = tempfile.TemporaryDirectory(prefix="jaxscope-bench-pycache-")
ENV = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPYCACHEPREFIX=_PYCACHE.name)
ENV.pop("PYTHONDONTWRITEBYTECODE", None)

SHELL = (
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "shell = InteractiveShell.instance()\n"
)
LOAD_EXT = SHELL + "shell.run_line_magic('load_ext', 'jaxscope')\n"


def fresh_python(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV)


def bench(cfg: harness.Config) -> Iterator[harness.Result]:
    sides = {
        "import jax, jaxscope vs import jax": (
            "import jax, jaxscope",
            "import jax",
            0.15,
        ),
        "%load_ext jaxscope vs IPython shell alone": (LOAD_EXT, SHELL, 0.050),
    }
    for measure, (ours, theirs, extra) in sides.items():
        fresh_python(ours)  # writes the byte code, outside the clock
        fresh_python(theirs)
        yield harness.compare(
            measure,
            lambda code=ours: fresh_python(code),
            lambda code=theirs: fresh_python(code),
            rounds=cfg.n(15),
            warmup=cfg.warm(1),  # the OS file cache
            budget=harness.Budget(extra, on="extra"),
            cpu_clock=harness.children_cpu_time,
        )


if __name__ == "__main__":
    harness.main(bench, __doc__)
