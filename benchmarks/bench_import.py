"""``import jaxscope`` vs ``import jax``: median wall time of fresh interpreters.

Budget: jaxscope adds at most 150 ms. Run: ``python benchmarks/bench_import.py [runs]``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

BUDGET_MS = 150.0


def wall(module: str) -> float:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, env=env)
    return time.perf_counter() - start


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    wall("jax"), wall("jaxscope")  # warm the OS file cache
    jax_t, js_t = [], []
    for _ in range(runs):  # interleaved so machine noise hits both alike
        jax_t.append(wall("jax"))
        js_t.append(wall("jaxscope"))
    a, b = statistics.median(jax_t) * 1e3, statistics.median(js_t) * 1e3
    extra = b - a
    print(f"median of {runs} fresh interpreters (python -c 'import X'):")
    print(f"  import jax       {a:8.1f} ms")
    print(
        f"  import jaxscope  {b:8.1f} ms   (+{extra:.1f} ms; budget +{BUDGET_MS:.0f} ms)"
    )
    print("within budget" if extra <= BUDGET_MS else "OVER BUDGET")
    return 0 if extra <= BUDGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
