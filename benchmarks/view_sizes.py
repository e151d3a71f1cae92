"""How much a view shows: lines, widest line and HTML bytes of three displays.

Not a timing benchmark (run_all.py does not run it): a readability measure, run
before and after a display change and quoted in its commit.

- ``%hlo --stage optimized`` of a Flax NNX MNIST train step (the Flax tutorial's CNN
  with optax's adamw), in a real terminal IPython shell: lines, and the line the
  ENTRY computation starts at;
- ``%jaxpr`` of a 60-layer MLP (``jax.nn.relu(x @ w + b)``): lines and widest line;
- ``js.jaxpr(f)(x)`` HTML of one function of 50,000 distinct lines (``--html-eqns``).

    python benchmarks/view_sizes.py [--html-eqns 50000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

FLAX_STEP = """
from functools import partial
import jax, jax.numpy as jnp, optax
from flax import nnx

class CNN(nnx.Module):
  def __init__(self, *, rngs: nnx.Rngs):
    self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
    self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
    self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
    self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
    self.linear2 = nnx.Linear(256, 10, rngs=rngs)

  def __call__(self, x):
    x = self.avg_pool(nnx.relu(self.conv1(x)))
    x = self.avg_pool(nnx.relu(self.conv2(x)))
    x = x.reshape(x.shape[0], -1)
    x = nnx.relu(self.linear1(x))
    x = self.linear2(x)
    return x

model = CNN(rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adamw(0.005, 0.9), wrt=nnx.Param)
metrics = nnx.MultiMetric(
  accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average('loss'))

def loss_fn(model: CNN, batch):
  logits = model(batch['image'])
  loss = optax.softmax_cross_entropy_with_integer_labels(
    logits=logits, labels=batch['label']).mean()
  return loss, logits

@nnx.jit
def train_step(model: CNN, optimizer: nnx.Optimizer, metrics: nnx.MultiMetric, batch):
  grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
  (loss, logits), grads = grad_fn(model, batch)
  metrics.update(loss=loss, logits=logits, labels=batch['label'])
  optimizer.update(model, grads)

batch = {'image': jnp.ones((32, 28, 28, 1)), 'label': jnp.zeros((32,), jnp.int32)}
"""

MLP = """
import jax, jax.numpy as jnp
def mlp(params, x):
    for w, b in params:
        x = jax.nn.relu(x @ w + b)
    return x
params = [(jnp.ones((64, 64)), jnp.ones(64)) for _ in range(60)]
xs = jnp.ones((8, 64))
"""


def _shown(shell: Any, magic: str, line: str) -> str:
    from IPython.utils.capture import capture_output

    with capture_output() as captured:
        shell.run_line_magic(magic, line)
    return captured.outputs[-1].data["text/plain"]


def _report(what: str, text: str) -> None:
    lines = text.splitlines()
    entry = next((i for i, ln in enumerate(lines) if ln.startswith("ENTRY")), None)
    where = f", ENTRY at line {entry + 1}" if entry is not None else ""
    print(f"{what}: {len(lines)} lines, widest {max(map(len, lines))}{where}")


def _html_size(n_lines: int) -> None:
    import jax.numpy as jnp

    import jaxscope as js

    body = "".join(f"    x = x * {1 + i * 1e-6:.6f}\n" for i in range(n_lines))
    source = f"def long_fn(x):\n{body}    return x\n"
    path = os.path.join(tempfile.mkdtemp(), "long_program.py")
    with open(path, "w", encoding="utf-8") as file:
        file.write(source)
    namespace: dict[str, Any] = {}
    exec(compile(source, path, "exec"), namespace)
    view = js.jaxpr(namespace["long_fn"])(jnp.ones(3))
    size = len(view._repr_mimebundle_()["text/html"].encode())
    print(f"js.jaxpr HTML, {len(view.eqns)} equations: {size / 1e6:.3f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description="lines and HTML bytes of views")
    parser.add_argument("--html-eqns", type=int, default=0)
    args = parser.parse_args()
    os.environ["IPYTHONDIR"] = tempfile.mkdtemp()
    from IPython.terminal.interactiveshell import TerminalInteractiveShell

    shell = TerminalInteractiveShell.instance(simple_prompt=True, colors="nocolor")
    if shell.history_manager is not None:
        shell.history_manager.enabled = False
    shell.run_line_magic("load_ext", "jaxscope")
    assert shell.run_cell(FLAX_STEP).success
    step = "train_step(model, optimizer, metrics, batch)"
    _report(
        "%hlo --stage optimized (Flax MNIST step)",
        _shown(shell, "hlo", f"--stage optimized {step}"),
    )
    assert shell.run_cell(MLP).success
    _report("%jaxpr (60-layer MLP)", _shown(shell, "jaxpr", "mlp(params, xs)"))
    if args.html_eqns:
        _html_size(args.html_eqns)


if __name__ == "__main__":
    main()
