"""Every staging capability runs on the programs Flax, Equinox and Optax users write,
without partitioning anything by hand, and agrees with running the program."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxscope as js

from .programs import PROGRAMS

NAMES = sorted(PROGRAMS)
# Each program's first input, as its user names it.
FIRST_INPUT_NAMES = [
    ("nnx_cnn", "model.conv1.bias"),
    ("eqx_cnn", "model.layers[0].weight"),
    ("eqx_gru", "model.cell.weight_ih"),
    ("linen_resnet", "params['Conv_0']['bias']"),
]


@pytest.mark.parametrize("name", NAMES)
def test_jaxpr_hlo_and_graph_trace_the_program(name):
    step, args = PROGRAMS[name]()
    view = js.jaxpr(step)(*args)
    assert len(view.eqns) > 10
    assert any(
        e.primitive in ("dot_general", "conv_general_dilated") for e in view.eqns
    )
    hlo = js.hlo(step)(*args)  # lowered HLO: compiling every program adds little
    assert any(op.source is not None for op in hlo.ops)
    graph = js.graph(step)(*args)
    assert len(graph.nodes) >= len([e for e in view.eqns if e.depth == 0])


@pytest.mark.parametrize("name", ["nnx_cnn", "eqx_gru", "eqx_mlp"])
def test_stepping_to_the_end_gives_the_programs_own_outputs(name):
    step, args = PROGRAMS[name]()
    stepper = js.step(step)(*args).run()
    assert stepper.done
    # What the real call returns (a library wrapper's pytree, not its staged
    # program's outputs), from fresh arguments: the call updates its model.
    real_step, real_args = PROGRAMS[name]()
    expected = _values(real_step(*real_args))
    got = _values(stepper.result)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _values(tree):
    """The leaves of ``tree`` that hold numbers (arrays and Python scalars)."""
    return [
        leaf
        for leaf in jax.tree_util.tree_leaves(tree)
        if hasattr(leaf, "dtype") or isinstance(leaf, (bool, int, float, complex))
    ]


@pytest.mark.parametrize("name", NAMES)
def test_find_nan_finds_nothing_in_a_healthy_step(name):
    step, args = PROGRAMS[name]()
    assert js.find_nan(step)(*args) is None


@pytest.mark.parametrize("name", ["nnx_cnn", "eqx_cnn", "linen_resnet"])
def test_shardings_of_the_compiled_step(name):
    step, args = PROGRAMS[name]()
    program = js.shardings(step)(*args)
    assert program.inputs and program.outputs


def test_equinox_non_array_fields_are_static_as_filter_jit_makes_them():
    step, args = PROGRAMS["eqx_gru"]()  # hidden_size: int is a field of the Module
    view = js.jaxpr(step)(*args)
    assert all(
        "int" not in dtype for _, dtype in view.eqns[0].inputs if _ == "hidden_size"
    )
    n_arrays = len([x for x in jax.tree_util.tree_leaves(args) if hasattr(x, "shape")])
    assert len(view.closed_jaxpr.jaxpr.invars) == n_arrays


@pytest.mark.parametrize(("name", "first"), FIRST_INPUT_NAMES)
def test_sharding_inputs_are_named_in_the_users_terms(name, first):
    step, args = PROGRAMS[name]()
    inputs = [path for path, _ in js.shardings(step)(*args).inputs]
    assert inputs[0] == first
    assert not any("states[" in p or "[0][0]" in p for p in inputs)


@pytest.mark.parametrize(("name", "first"), FIRST_INPUT_NAMES)
def test_jaxpr_graph_and_stepper_name_inputs_in_the_users_terms(name, first):
    # JAX's own names for these inputs are its wrappers' (model.states[0][3],
    # args[0][0][0].layers[0].weight): the views show the staged call's names.
    step, args = PROGRAMS[name]()
    view = js.jaxpr(step)(*args)
    assert view.arg_names is not None and view.arg_names[0] == first
    inputs = [n.label for n in js.graph(step)(*args).nodes if n.kind == "input"]
    assert inputs[0] == first
    stepper_names = list(js.step(step)(*args).arg_names.values())
    assert stepper_names[0] == first
    for names in (view.arg_names, inputs, stepper_names):
        assert not any("states[" in n or "[0][0]" in n for n in names), names


def test_linen_batchnorm_step_under_pmap():
    from .programs import ResNetTiny

    model = ResNetTiny()
    x = jax.numpy.ones((8, 2, 8, 8, 3))
    variables = model.init(jax.random.key(0), x[0])

    def step(variables, x):
        logits, updates = model.apply(variables, x, mutable=["batch_stats"])
        return jax.lax.pmean(logits.mean(), "batch"), updates

    pstep = jax.pmap(step, axis_name="batch", in_axes=(None, 0))
    assert any(
        e.primitive == "pmean" or "psum" in e.primitive
        for e in js.jaxpr(pstep)(variables, x).eqns
    )
    assert js.shardings(pstep)(variables, x).collectives
    assert js.step(pstep)(variables, x).run().done


def test_nnx_scan_over_layers_inside_nnx_jit():
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)

        def __call__(self, x):
            return nnx.relu(self.linear(x))

    @nnx.vmap(in_axes=0, out_axes=0)
    def make_blocks(rngs):
        return Block(rngs)

    blocks = make_blocks(nnx.Rngs(0).split(3))

    @nnx.jit
    def forward(blocks, x):
        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        def body(block, x):
            return block(x)

        return body(blocks, x)

    eqns = js.jaxpr(forward)(blocks, jax.numpy.ones(4)).eqns
    assert any(e.primitive == "scan" for e in eqns)
    stepper = js.step(forward)(blocks, jax.numpy.ones(4)).run()
    np.testing.assert_allclose(
        np.asarray(jax.tree_util.tree_leaves(stepper.result)[-1]),
        np.asarray(forward(blocks, jax.numpy.ones(4))),
        rtol=1e-6,
    )
