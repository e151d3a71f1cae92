"""Hints that work when pasted: for every error kind whose hint gives code, the code is
taken out of the hint, pasted into the failing program (as text, which is then run
as a module), and the error must be gone and the result right.

Each case is a small program written as users write it, with ``run()`` (the call
that fails) and ``expected()`` (the right answer, computed another way). A hint's
code is what it sets in backticks (or a ``did you mean ...?`` / ``np.f → jnp.f``
form); a fix says which piece of code to take and what text of the program it
replaces. Hints without code say what to do in words (checked at the end).
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxscope as js

N = jax.local_device_count()
_COUNTER = itertools.count()


@dataclass(frozen=True)
class Fix:
    """Take the hint's code that ``pick`` finds, write it in ``template`` (``{}`` is
    the code) and put that in place of ``old`` in the program."""

    pick: str
    old: str
    template: str = "{}"


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    program: str
    fixes: tuple[Fix, ...]


def _load(source: str, directory: Path):
    path = directory / f"pasted_{next(_COUNTER)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def code_in(hint: str) -> list[str]:
    """The pieces of code a hint offers: backticked, ``did you mean X?``, ``np.f →
    jnp.f`` (as ``jnp.f``)."""
    found = re.findall(r"`([^`]+)`", hint)
    found += re.findall(r"did you mean (.+?)\?", hint)
    found += re.findall(r"\bnp\.\w+ → (jnp\.\w+)", hint)
    return found


def _pick(hint: str, pick: str) -> str:
    matches = [c for c in code_in(hint) if c.startswith(pick)]
    assert matches, f"no code starting with {pick!r} in the hint: {hint}"
    return matches[0]


def _parses(piece: str) -> None:
    """Every piece of code in a hint is Python (a decorator, with what it decorates)."""
    ast.parse(piece + "\ndef f(): pass" if piece.startswith("@") else piece)


def _same(result, expected) -> None:
    got = jax.tree.leaves(result)
    want = jax.tree.leaves(expected)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _program(body: str) -> str:
    return textwrap.dedent(body).lstrip()


CASES = [
    Case(
        "branch on a loss computed from arrays (jax.jit)",
        "bool_conversion",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def loss_fn(params, x, y):
                return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

            @jax.jit
            def clipped_loss(params, x, y, max_loss):
                loss = loss_fn(params, x, y)
                if loss > max_loss:
                    return max_loss
                return loss

            params = {"w": jnp.ones((4, 1)), "b": jnp.zeros(1)}
            x, y = jnp.ones((8, 4)), jnp.zeros((8, 1))

            def run():
                return clipped_loss(params, x, y, 1.0), clipped_loss(params, x, y, 100.0)

            def expected():
                return 1.0, 16.0
            """
        ),
        tuple(
            Fix(
                pick,
                "    if loss > max_loss:\n        return max_loss\n    return loss",
                "    {}",
            )
            for pick in (
                "return jnp.where",
                "return jnp.minimum",
                "return jax.lax.cond",
            )
        ),
    ),
    Case(
        "branch on a Python scalar (@jax.jit)",
        "bool_conversion",
        _program(
            """
            import functools
            import jax
            import jax.numpy as jnp

            @jax.jit
            def relu_bad(v):
                if v > 0:
                    return v
                return 0.0

            def run():
                return relu_bad(2.0), relu_bad(-1.0)

            def expected():
                return 2.0, 0.0
            """
        ),
        (
            Fix(
                "jax.jit(relu_bad.__wrapped__",
                "relu_bad(2.0), relu_bad(-1.0)",
                "{0}(2.0), {0}(-1.0)",
            ),
            Fix("@functools.partial(jax.jit", "@jax.jit"),
            Fix(
                "return jnp.where",
                "    if v > 0:\n        return v\n    return 0.0",
                "    {}",
            ),
        ),
    ),
    Case(
        "branch assigning a variable from an array",
        "bool_conversion",
        _program(
            """
            import jax
            import jax.numpy as jnp

            @jax.jit
            def scale(x):
                if x.sum() > 0:
                    y = x * 2
                else:
                    y = -x
                return y

            def run():
                return scale(jnp.arange(3.0)), scale(-jnp.arange(3.0))

            def expected():
                return jnp.arange(3.0) * 2, jnp.arange(3.0)
            """
        ),
        tuple(
            Fix(
                pick,
                "    if x.sum() > 0:\n        y = x * 2\n    else:\n        y = -x",
                "    {}",
            )
            for pick in ("y = jnp.where", "y = jax.lax.cond")
        ),
    ),
    Case(
        "conditional expression under jax.vmap",
        "bool_conversion",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def relu(x):
                return x if x > 0 else 0.0

            def run():
                return jax.vmap(relu)(jnp.array([-1.0, 2.0]))

            def expected():
                return jnp.array([0.0, 2.0])
            """
        ),
        tuple(
            Fix(pick, "    return x if x > 0 else 0.0", "    {}")
            for pick in ("return jnp.where", "return jax.lax.cond")
        ),
    ),
    Case(
        "nnx.jit step branching on its loss",
        "bool_conversion",
        _program(
            """
            import jax
            import jax.numpy as jnp
            from flax import nnx

            class Regressor(nnx.Module):
                def __init__(self, rngs):
                    self.linear = nnx.Linear(4, 1, rngs=rngs)

                def __call__(self, x):
                    return self.linear(x)

            @nnx.jit
            def step(model, x, y, max_loss):
                loss = jnp.mean((model(x) - y) ** 2)
                if loss > max_loss:
                    return max_loss
                return loss

            model = Regressor(nnx.Rngs(0))
            x, y = jnp.ones((8, 4)), jnp.full((8, 1), 3.0)

            def run():
                return step(model, x, y, 0.5), step(model, x, y, 1e6)

            def expected():
                loss = jnp.mean((model(x) - y) ** 2)
                return jnp.minimum(loss, 0.5), loss
            """
        ),
        tuple(
            Fix(
                pick,
                "    if loss > max_loss:\n        return max_loss\n    return loss",
                "    {}",
            )
            for pick in (
                "return jnp.minimum",
                "return jnp.where",
                "return jax.lax.cond",
            )
        ),
    ),
    Case(
        "array size from an argument",
        "concretization",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def make_range(x, n):
                return jnp.arange(n) + x

            def run():
                return jax.jit(make_range)(1.0, 3)

            def expected():
                return jnp.array([1.0, 2.0, 3.0])
            """
        ),
        (Fix("jax.jit(make_range, static_argnums", "jax.jit(make_range)"),),
    ),
    Case(
        "Python index from an argument",
        "int_conversion",
        _program(
            """
            import jax

            def pick(x, i):
                return (1.0, 2.0, 3.0)[i] * x

            def run():
                return jax.jit(pick)(2.0, 1)

            def expected():
                return 4.0
            """
        ),
        (Fix("jax.jit(pick, static_argnums", "jax.jit(pick)"),),
    ),
    Case(
        "NumPy call on a traced array",
        "array_conversion",
        _program(
            """
            import jax
            import jax.numpy as jnp
            import numpy as np

            def soft(x):
                return np.sin(x) + 1.0

            def run():
                return jax.jit(soft)(jnp.ones(2))

            def expected():
                return np.sin(np.ones(2)) + 1.0
            """
        ),
        (Fix("jnp.sin", "np.sin(x)", "{}(x)"),),
    ),
    Case(
        "boolean mask indexing",
        "bool_index",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def positive_sum(x):
                return x[x > 0].sum()

            def run():
                return jax.jit(positive_sum)(jnp.array([-1.0, 2.0, 3.0]))

            def expected():
                return 5.0
            """
        ),
        (
            Fix("jnp.where(x > 0", "x[x > 0].sum()", "{}.sum()"),
            Fix("jnp.sum(x, where=", "x[x > 0].sum()"),
        ),
    ),
    Case(
        "in-place item assignment",
        "item_assignment",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def set_first(x):
                x[0] = 1.0
                return x

            def run():
                return jax.jit(set_first)(jnp.zeros(3))

            def expected():
                return jnp.array([1.0, 0.0, 0.0])
            """
        ),
        (Fix("x = x.at[0]", "x[0] = 1.0"),),
    ),
    Case(
        "matmul of mismatched shapes",
        "shape",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def layer(x, w):
                h = jnp.tanh(x)
                return h @ w

            x, w = jnp.ones((4, 3)), jnp.ones((4, 5))

            def run():
                return jax.jit(layer)(x, w)

            def expected():
                return jnp.tanh(x).T @ w
            """
        ),
        (Fix("h.T @ w", "h @ w"),),
    ),
    Case(
        "lax op on mixed dtypes",
        "dtype",
        _program(
            """
            import jax
            import jax.numpy as jnp
            from jax import lax

            def add(a, b):
                return lax.add(a, b)

            def run():
                return jax.jit(add)(jnp.arange(3), jnp.ones(3))

            def expected():
                return jnp.arange(3) + 1
            """
        ),
        (Fix("b.astype(a.dtype)", "lax.add(a, b)", "lax.add(a, {})"),),
    ),
    Case(
        "NaN from a log, found by jax_debug_nans",
        "nan",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def log_loss(v):
                y = jnp.log(v)
                return (y * 2.0).sum()

            def run():
                with jax.debug_nans(True):
                    return jax.jit(log_loss)(jnp.array([-1.0, 1.0]))

            def expected():
                return 2.0 * jnp.log(1e-30)
            """
        ),
        (Fix("jnp.log(jnp.maximum(v", "jnp.log(v)"),),
    ),
    Case(
        "collective with an unbound axis name",
        "unbound_axis",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def centered(x):
                return jax.vmap(lambda v: v - jax.lax.pmean(v, "batch"))(x)

            def run():
                return centered(jnp.array([1.0, 3.0]))

            def expected():
                return jnp.array([-1.0, 1.0])
            """
        ),
        (
            Fix(
                "jax.vmap(lambda v",
                'jax.vmap(lambda v: v - jax.lax.pmean(v, "batch"))',
            ),
        ),
    ),
    Case(
        "Equinox Module with a function field under jax.jit",
        "static_arg",
        _program(
            """
            from typing import Callable

            import equinox as eqx
            import jax
            import jax.numpy as jnp

            class Activated(eqx.Module):
                w: jax.Array
                activation: Callable

                def __call__(self, x):
                    return self.activation(self.w * x)

            def forward(model, x):
                return model(x)

            model = Activated(jnp.array([1.0, -1.0]), jax.nn.relu)

            def run():
                return jax.jit(forward)(model, jnp.ones(2))

            def expected():
                return jnp.array([1.0, 0.0])
            """
        ),
        (Fix("eqx.filter_jit(forward)", "jax.jit(forward)"),),
    ),
    Case(
        "jax.grad over an Equinox Module",
        "jax_other",
        _program(
            """
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            def loss(model, x):
                return jnp.sum(jax.vmap(model)(x))

            net = eqx.nn.MLP(2, 1, 4, 1, key=jax.random.key(0))
            x = jnp.ones((3, 2))

            def run():
                return jax.grad(loss)(net, x).layers[0].weight

            def expected():
                def of_weight(w):
                    return loss(eqx.tree_at(lambda m: m.layers[0].weight, net, w), x)

                return jax.grad(of_weight)(net.layers[0].weight)
            """
        ),
        (Fix("eqx.filter_grad", "jax.grad(loss)", "{}(loss)"),),
    ),
    Case(
        "Linen model on a new input shape",
        "shape",
        _program(
            """
            import flax.linen as nn
            import jax
            import jax.numpy as jnp

            class MLP(nn.Module):
                @nn.compact
                def __call__(self, x):
                    return nn.Dense(3)(x)

            model = MLP()
            params = model.init(jax.random.key(0), jnp.ones((2, 4)))

            def run():
                global params
                wide = jnp.ones((2, 6))
                return model.apply(params, wide)

            def expected():
                wide = jnp.ones((2, 6))
                return model.apply(model.init(jax.random.key(0), wide), wide)
            """
        ),
        (
            Fix(
                "params = model.init(",
                "    return model.apply(params, wide)",
                "    {}\n    return model.apply(params, wide)",
            ),
        ),
    ),
    Case(
        "shard_map output declared replicated without its psum",
        "shape",
        _program(
            f"""
            from functools import partial

            import jax
            import jax.numpy as jnp
            from jax.sharding import NamedSharding, PartitionSpec as P

            mesh = jax.make_mesh(({N},), ("i",))

            @jax.jit
            @partial(jax.shard_map, mesh=mesh, in_specs=P("i"), out_specs=P())
            def total(x):
                return jnp.sum(x, keepdims=True)

            x = jax.device_put(jnp.arange(2.0 * {N}), NamedSharding(mesh, P("i")))

            def run():
                return total(x)

            def expected():
                return jnp.array([jnp.arange(2.0 * {N}).sum()])
            """
        ),
        (Fix("return jax.lax.psum", "    return jnp.sum(x, keepdims=True)", "    {}"),),
    ),
    Case(
        "unsplit pmap batch",
        "shape",
        _program(
            f"""
            import jax
            import jax.numpy as jnp

            def step(w, x):
                return jnp.sum(w * x)

            weights = jnp.ones(({N}, 3))
            batch = jnp.arange({N} * 4 * 3.0).reshape({N} * 4, 3)

            def run():
                return jax.pmap(step)(weights, batch)

            def expected():
                return batch.reshape({N}, 4, 3).sum(axis=(1, 2))
            """
        ),
        (Fix("batch.reshape(", "(weights, batch)", "(weights, {})"),),
    ),
    Case(
        "unsplit eqx.filter_pmap batch",
        "shape",
        _program(
            f"""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            def step(w, x):
                return jnp.sum(w * x)

            weights = jnp.ones(({N}, 3))
            batch = jnp.arange({N} * 4 * 3.0).reshape({N} * 4, 3)

            def run():
                return eqx.filter_pmap(step)(weights, batch)

            def expected():
                return batch.reshape({N}, 4, 3).sum(axis=(1, 2))
            """
        ),
        (Fix("batch.reshape(", "(weights, batch)", "(weights, {})"),),
    ),
    # Sharding errors on the README's mesh (explicit axes): the fix names the
    # operands' layouts, in the program's own names for the mesh, P and jnp.
    Case(
        "matmul over a sharded contracting dimension (explicit axes)",
        "sharding",
        _program(
            """
            import jax
            import jax.numpy as jnp
            import numpy as np
            from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

            mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
            xa = jax.device_put(np.ones((64, 32), np.float32), NamedSharding(mesh, P("data", "model")))
            wa = jax.device_put(np.ones((32, 16), np.float32) / 64, NamedSharding(mesh, P("model", None)))

            @jax.jit
            def layer(a, w):
                return jnp.tanh(a @ w).sum(axis=0)

            def run():
                return layer(xa, wa)

            def expected():
                return np.tanh(np.ones((64, 32)) @ (np.ones((32, 16)) / 64)).sum(axis=0)
            """
        ),
        (
            Fix("jnp.matmul(", "jnp.tanh(a @ w)", "jnp.tanh({})"),
            Fix("jax.sharding.reshard(", "jnp.tanh(a @ w)", "jnp.tanh({})"),
        ),
    ),
    Case(
        "jnp.dot over a sharded contracting dimension, mesh made in a function",
        "sharding",
        _program(
            """
            import jax
            import jax.numpy as jnp
            import numpy as np
            from jax.sharding import AxisType, NamedSharding, PartitionSpec

            def make():
                mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
                x = jax.device_put(np.ones((8, 16), np.float32), NamedSharding(mesh, PartitionSpec(None, "data")))
                w = jax.device_put(np.ones((16, 4), np.float32), NamedSharding(mesh, PartitionSpec("data", "model")))
                return x, w

            x, w = make()

            @jax.jit
            def proj(x, w):
                return jnp.dot(x, w)

            def run():
                return proj(x, w)

            def expected():
                return np.full((8, 4), 16.0)
            """
        ),
        (Fix("jnp.dot(", "jnp.dot(x, w)"),),
    ),
    Case(
        "elementwise op on two layouts (explicit axes)",
        "sharding",
        _program(
            """
            import jax
            import jax.numpy as jnp
            import numpy as np
            from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

            mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2)
            a = jax.device_put(np.ones((8, 8), np.float32), NamedSharding(mesh, P("data", "model")))
            b = jax.device_put(np.full((8, 8), 2.0, np.float32), NamedSharding(mesh, P("model", "data")))

            @jax.jit
            def combine(x, y):
                return jnp.concatenate([x, y]) * 2

            def run():
                return combine(a, b)

            def expected():
                return np.concatenate([np.ones((8, 8)), np.full((8, 8), 2.0)]) * 2
            """
        ),
        (Fix("jnp.concatenate(", "jnp.concatenate([x, y])"),),
    ),
    Case(
        "dimension the mesh axis does not divide",
        "sharding",
        _program(
            """
            import jax
            import jax.numpy as jnp
            import numpy as np
            from jax.sharding import NamedSharding, PartitionSpec as P

            mesh = jax.make_mesh((4, 2), ("data", "model"))

            def place(batch):
                return jax.device_put(batch, NamedSharding(mesh, P("data", None)))

            def run():
                batch = jnp.ones((6, 3))
                return place(batch).sum()

            def expected():
                return 18.0
            """
        ),
        (Fix("jnp.pad(", "device_put(batch,", "device_put({},"),),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pasted_hint_fixes_the_program(case: Case, tmp_path: Path):
    failing = _load(case.program, tmp_path)
    try:
        failing.run()
    except Exception as exc:
        report = js.explain(exc)
    else:
        pytest.fail(f"{case.name}: the program did not fail")
    assert report.category == case.kind, report.hint
    for piece in code_in(report.hint):
        _parses(piece)
    for fix in case.fixes:
        code = _pick(report.hint, fix.pick)
        assert case.program.count(fix.old) == 1, fix.old
        fixed = _load(
            case.program.replace(fix.old, fix.template.format(code)), tmp_path
        )
        _same(fixed.run(), fixed.expected())


SOLVER = _program(
    """
    import equinox as eqx
    import jax.numpy as jnp

    def solve(y0):
        return eqx.filter_jit(eqx.error_if)(
            y0,
            jnp.isnan(y0).any(),
            "The maximum number of solver steps was reached. Try increasing `max_steps`.",
        )

    y0 = jnp.array([1.0, jnp.nan])

    def run():
        return solve(y0)
    """
)


def test_pasted_find_nan_check_of_a_solver_out_of_steps_finds_the_nan(tmp_path):
    """The check a solver's out-of-steps hint gives is a command that runs and finds
    the NaN input."""
    program = _load(SOLVER, tmp_path)
    try:
        program.run()
    except Exception as exc:
        report = js.explain(exc)
    else:
        pytest.fail("the solver did not fail")
    command = _pick(report.hint, "js.find_nan(")
    assert command == "js.find_nan(solve)(y0)"
    found = eval(command, {"js": js, **vars(program)})
    assert found.kind == "nan"
    assert "y0" in str(found)


WORDS_ONLY = [
    (
        "gradient of a non-scalar output",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def run():
                return jax.grad(lambda x: x * 2.0)(jnp.ones(3))
            """
        ),
    ),
    (
        "cond branches returning different shapes",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def run():
                x = jnp.ones(3)
                return jax.lax.cond(True, lambda y: y, lambda y: y[:2], x)
            """
        ),
    ),
    (
        "static argument holding arrays",
        _program(
            """
            import jax
            import jax.numpy as jnp

            def scale(x, factors):
                return x * factors[0]

            def run():
                return jax.jit(scale, static_argnums=1)(1.0, [jnp.ones(2)])
            """
        ),
    ),
]


@pytest.mark.parametrize(
    ("name", "program"), WORDS_ONLY, ids=[w[0] for w in WORDS_ONLY]
)
def test_hint_without_checkable_code_says_what_to_do_in_words(name, program, tmp_path):
    failing = _load(program, tmp_path)
    with pytest.raises(Exception) as caught:
        failing.run()
    report = js.explain(caught.value)
    assert report.hint
    assert code_in(report.hint) == [], name


def test_the_harness_covers_every_kind_with_a_code_fix():
    """12 kinds (plus the runtime error of a solver) and 29 pasted fixes (plus the
    find_nan check): a case removed by mistake shows here."""
    kinds = {c.kind for c in CASES}
    assert len(kinds) >= 12
    assert sum(len(c.fixes) for c in CASES) >= 29
