"""Programs that stand for what users write, built fresh for every measurement.

JAX caches traces per function object, so every builder returns a *new* function each
call. The generated programs are written to real temporary files and compiled from
them, so every equation has its own source line, as in a user's module: one long
function of distinct lines, many small functions calling each other, and a Python loop
(few lines, each traced many times). Train steps of an Equinox MLP and of a Flax NNX
MLP with optax's Adam stand for library code between the user's lines and the
primitives. ``layered`` puts functions in named scopes (the
groups the graph viewer draws).
"""

from __future__ import annotations

import atexit
import functools
import itertools
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

_TMP = Path(tempfile.mkdtemp(prefix="jaxscope-bench-"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
_SERIAL = itertools.count()

# One jaxpr equation per line; the constants stay near 1 so eager runs stay finite.
_LINES = (
    "x = jnp.sin(x)",
    "x = x * {c}",
    "x = jnp.cos(x) + {c}",  # two equations: cos, add
    "x = jnp.tanh(x)",
    "x = x - {c}",
)


def _body(n_eqns: int, indent: str, seed: int) -> list[str]:
    """Distinct source lines making exactly ``n_eqns`` equations (``n_eqns`` >= 1)."""
    lines: list[str] = []
    made = 0
    for i in itertools.count():
        template = _LINES[i % len(_LINES)]
        cost = 2 if "cos" in template else 1
        if made + cost > n_eqns:
            template, cost = "x = jnp.sin(x)", 1
        lines.append(indent + template.format(c=f"{1 + (seed + i) % 997 * 1e-6:.6f}"))
        made += cost
        if made == n_eqns:
            return lines
    raise AssertionError("unreachable")


def load(source: str, name: str) -> Callable[..., Any]:
    """Write ``source`` to a new file, run it as a module, return its ``name``."""
    path = _TMP / f"user_program_{next(_SERIAL)}.py"
    path.write_text(source, "utf-8")
    namespace: dict[str, Any] = {"__name__": path.stem, "__file__": str(path)}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace[name]


def long_function(n_eqns: int) -> Callable[..., Any]:
    """A fresh one-argument function of ``n_eqns`` equations, one source line each."""
    lines = ["import jax.numpy as jnp", "", "", "def program(x):"]
    lines += _body(n_eqns, "    ", seed=n_eqns)
    lines.append("    return x")
    return load("\n".join(lines) + "\n", "program")


def many_functions(n_eqns: int, per_function: int = 10) -> Callable[..., Any]:
    """A fresh ``program`` calling ``n_eqns / per_function`` small distinct functions.

    Each helper is defined on its own lines and called once, as the layers of a model
    written function by function would be.
    """
    lines = ["import jax.numpy as jnp", ""]
    calls: list[str] = []
    left, k = n_eqns, 0
    while left > 0:
        size = min(per_function, left)
        lines += ["", f"def block_{k}(x):"]
        lines += _body(size, "    ", seed=k * per_function)
        lines.append("    return x")
        calls.append(f"    x = block_{k}(x)")
        left -= size
        k += 1
    lines += ["", "", "def program(x):", *calls, "    return x"]
    return load("\n".join(lines) + "\n", "program")


def loop(n_eqns: int, per_iteration: int = 10) -> Callable[..., Any]:
    """A fresh ``program`` whose Python loop runs ``per_iteration`` distinct lines
    ``n_eqns / per_iteration`` times: many equations share each source line."""
    iterations, rest = divmod(n_eqns, per_iteration)
    lines = ["import jax.numpy as jnp", "", "", "def program(x):"]
    lines.append(f"    for _ in range({iterations}):")
    lines += _body(per_iteration, "        ", seed=0)
    if rest:
        lines += _body(rest, "    ", seed=per_iteration)
    lines.append("    return x")
    return load("\n".join(lines) + "\n", "program")


@functools.lru_cache(maxsize=4)
def _mlp(depth: int, width: int) -> tuple[Any, Any, Any, Any]:
    import equinox as eqx
    import jax
    import optax

    model = eqx.nn.MLP(width, 1, width, depth, key=jax.random.PRNGKey(0))
    params, static = eqx.partition(model, eqx.is_array)
    optimizer = optax.adam(1e-3)
    return params, static, optimizer, optimizer.init(params)


def train_step(n_eqns: int, width: int = 32) -> tuple[Callable[..., Any], tuple]:
    """A fresh Equinox MLP train step (MSE loss, optax Adam) and its arguments.

    ``step(params, opt_state, x, y) -> (params, opt_state, loss)``; its jaxpr has about
    ``n_eqns`` equations at all nesting levels (50 per layer, 60 more). The model is
    built once per size; the step and loss functions are new on every call.
    """
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import optax

    params, static, optimizer, opt_state = _mlp(
        max(1, round((n_eqns - 60) / 50)), width
    )

    def loss_fn(params, x, y):
        net = eqx.combine(params, static)
        pred = jax.vmap(net)(x)
        return jnp.mean((pred - y) ** 2)

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step, (params, opt_state, jnp.ones((8, width)), jnp.zeros((8, 1)))


_FLAX_MODEL = """
import jax.numpy as jnp
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, width: int, depth: int, *, rngs: nnx.Rngs):
        self.layers = nnx.List(
            [nnx.Linear(width, width, rngs=rngs) for _ in range(depth)]
        )
        self.head = nnx.Linear(width, 1, rngs=rngs)

    def __call__(self, x):
        for layer in self.layers:
            x = nnx.relu(layer(x))
        return self.head(x)


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)
"""

_FLAX_STEP = """
from flax import nnx

from flax_model import loss_fn


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss
"""


@functools.lru_cache(maxsize=4)
def _flax_model(depth: int, width: int) -> tuple[Any, Any]:
    import sys

    import optax
    from flax import nnx

    if "flax_model" not in sys.modules:
        sys.modules["flax_model"] = _module(_FLAX_MODEL, "flax_model")
    model = sys.modules["flax_model"].MLP(width, depth, rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)


def _module(source: str, name: str) -> Any:
    import types

    path = _TMP / f"{name}.py"
    path.write_text(source, "utf-8")
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def flax_train_step(n_eqns: int, width: int = 32) -> tuple[Callable[..., Any], tuple]:
    """A fresh Flax NNX train step (``nnx.jit``, ``nnx.value_and_grad``, optax Adam
    through ``nnx.Optimizer``), as Flax's docs write it, and its arguments.

    The jaxpr has about ``n_eqns`` equations (48 per layer, 60 more); the model is
    built once per size, the step is new on every call.
    """
    import jax.numpy as jnp

    model, optimizer = _flax_model(max(1, round((n_eqns - 60) / 48)), width)
    step = load(_FLAX_STEP, "train_step")
    return step, (model, optimizer, jnp.ones((8, width)), jnp.zeros((8, 1)))


def staging_programs(n_eqns: int, x: Any) -> dict[str, Callable[[], tuple]]:
    """``user_programs`` and two more shapes: a Python loop, a Flax NNX train step."""
    return {
        "loop": lambda: (loop(n_eqns), (x,)),
        **user_programs(n_eqns, x),
        "flax train step": lambda: flax_train_step(n_eqns),
    }


def user_programs(n_eqns: int, x: Any) -> dict[str, Callable[[], tuple]]:
    """Builders of ``(fresh function, args)`` for each kind of program, by name."""
    return {
        "long function": lambda: (long_function(n_eqns), (x,)),
        "many functions": lambda: (many_functions(n_eqns), (x,)),
        "equinox train step": lambda: train_step(n_eqns),
    }


def layered(layers: int, per_layer: int) -> Callable[..., Any]:
    """A fresh ``program``: ``layers`` named scopes (``layer0``...) of distinct lines.

    Each layer is its own function of ``per_layer`` equations, called inside
    ``jax.named_scope``, as a model's blocks are.
    """
    lines = ["import jax", "import jax.numpy as jnp", ""]
    for k in range(layers):
        lines += ["", f"def layer_{k}(x):"]
        lines += _body(per_layer, "    ", seed=k * per_layer)
        lines.append("    return x")
    lines += ["", "", "def program(x):"]
    for k in range(layers):
        lines += [f"    with jax.named_scope('layer{k}'):", f"        x = layer_{k}(x)"]
    lines.append("    return x")
    return load("\n".join(lines) + "\n", "program")
