"""Cost of source-mapped errors, as ratios against plain JAX / plain IPython in one run.

1. The cache-hit path of a jitted call run in an IPython cell, extension loaded vs not
   (the error handler only runs on exceptions, so this should be ~1.0).
2. ``js.explain(exc)`` against the cost of JAX raising that error (trace + raise).
3. A failing cell's display with the extension vs IPython's own traceback.

Run: ``python benchmarks/bench_errors.py``
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp())

import jax
import jax.numpy as jnp
from IPython.terminal.interactiveshell import TerminalInteractiveShell
from IPython.utils.capture import capture_output

import jaxscope as js


def best(fn, repeat=7, number=1):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number)
    return min(times), statistics.median(times)


def clip_if(x, limit):
    if limit > 0:
        return jnp.minimum(x, limit)
    return x


def model(x, w):
    h = jnp.tanh(x)
    return h @ w


def positives(x):
    return x[x > 0]


CASES = {
    "bool conversion": lambda: jax.jit(clip_if)(jnp.ones(3), 2.0),
    "matmul shapes": lambda: jax.jit(model)(jnp.ones((4, 3)), jnp.ones((4, 5))),
    "boolean index": lambda: jax.jit(positives)(jnp.ones(3)),
}


def raise_and_catch(fn):
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("no error")


def main():
    print(f"jax {jax.__version__}, jaxscope {js.__version__}")
    shell = TerminalInteractiveShell.instance(simple_prompt=True, colors="nocolor")
    shell.history_manager.enabled = False
    shell.run_cell(
        "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x * 2 + 1)\nx = jnp.ones(8)\nf(x)"
    )

    def hit_cells():
        for _ in range(50):
            shell.run_cell("f(x)", silent=True)

    from jaxscope._ipython import ExtensionState
    from jaxscope._ipython import errors as ip_errors

    # Interleaved so machine noise hits both sides alike.
    plain, handler = [], []
    for _ in range(5):
        plain.append(best(hit_cells, repeat=3)[0] / 50)
        state = ExtensionState(shell)
        ip_errors.on_load(shell, state)
        handler.append(best(hit_cells, repeat=3)[0] / 50)
        ip_errors.on_unload(shell, state)
    plain_hit, handler_hit = min(plain), min(handler)
    print(
        f"1. cache-hit cell `f(x)`: plain {plain_hit * 1e6:.1f} us, with the error handler "
        f"installed {handler_hit * 1e6:.1f} us  ratio {handler_hit / plain_hit:.2f}"
    )
    shell.run_line_magic("load_ext", "jaxscope")

    print("2. js.explain(exc) vs JAX raising the error (trace + raise):")
    for name, fn in CASES.items():
        raise_t = best(lambda fn=fn: raise_and_catch(fn), repeat=5, number=3)[0]
        exc = raise_and_catch(fn)
        explain_t = best(lambda exc=exc: js.explain(exc), repeat=5, number=3)[0]
        text_t = best(lambda exc=exc: str(js.explain(exc)), repeat=5, number=3)[0]
        print(
            f"   {name:16s} raise {raise_t * 1e3:7.2f} ms  explain {explain_t * 1e3:6.2f} ms "
            f"(x{explain_t / raise_t:.2f})  explain+render {text_t * 1e3:6.2f} ms (x{text_t / raise_t:.2f})"
        )

    shell.run_cell(
        "def clip_if(x, limit):\n    if limit > 0:\n        return x\n    return x\n"
    )

    def failing_cell():
        with capture_output():
            shell.run_cell("jax.jit(clip_if)(jnp.ones(3), 2.0)")

    with_ext = best(failing_cell, repeat=5)[0]
    shell.run_line_magic("unload_ext", "jaxscope")
    without = best(failing_cell, repeat=5)[0]
    print(
        f"3. failing cell display: IPython {without * 1e3:.1f} ms, jaxscope {with_ext * 1e3:.1f} ms "
        f"ratio {with_ext / without:.2f}"
    )


if __name__ == "__main__":
    main()
