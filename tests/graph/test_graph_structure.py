"""Groups come from the program: name scopes, module paths, transforms, traced functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

import jaxscope as js
from jaxscope._source import short_path


def _attention(x, w):
    q, k, v = x @ w["q"], x @ w["k"], x @ w["v"]
    a = jax.nn.softmax(q @ k.T / 8.0, axis=-1)
    return (a @ v) @ w["o"]


def _mlp(x, w):
    return jax.nn.gelu(x @ w["up"]) @ w["down"]


def _transformer(params, x):
    for i, w in enumerate(params):
        with jax.named_scope(f"layer{i}"):
            x = x + _attention(jax.nn.standardize(x), w)
            x = x + _mlp(jax.nn.standardize(x), w)
    return x


@jax.jit
def tf_step(params, x):
    loss, grads = jax.value_and_grad(lambda p: jnp.mean(_transformer(p, x) ** 2))(
        params
    )
    return jax.tree.map(lambda p, g: p - 0.01 * g, params, grads), loss


def _params(n_layers=6, d=8):
    names = ("q", "k", "v", "o", "up", "down")
    return [{k: jnp.ones((d, d)) for k in names} for _ in range(n_layers)]


def _inside(g, group_id):
    """The leaf nodes inside group ``group_id``, at any depth."""
    parent = {gr.id: gr.parent for gr in g.groups}

    def within(gid):
        while gid is not None:
            if gid == group_id:
                return True
            gid = parent[gid]
        return False

    return [n for n in g.nodes if within(n.group)]


def test_transformer_train_step_opens_as_forward_and_backward_layers():
    g = js.graph(tf_step)(_params(), jnp.ones((4, 8)))
    # the user's model function holds its layers' scopes, in each pass
    top = [gr for gr in g.groups if gr.parent is None]
    assert [(gr.kind, gr.label) for gr in top] == [
        ("call", "_transformer"),
        ("call", "_transformer (backward)"),
    ]
    forward, backward = (
        [gr for gr in g.groups if gr.parent == call.id] for call in top
    )
    assert [gr.label for gr in forward] == [f"layer{i}" for i in range(6)]
    assert [gr.label for gr in backward] == [f"layer{i}" for i in reversed(range(6))]
    for gr in forward + backward:
        assert gr.kind == "scope"
        assert gr.backward == (gr in backward)
        # the layer's calls are inside it
        assert [c.label for c in g.groups if c.parent == gr.id and c.kind == "call"]
        inside = _inside(g, gr.id)
        assert len(inside) == gr.size > 0
        # every equation of a forward layer is forward, and the other way round
        # (those nested in a jit record their name stack relative to the jit)
        transposed = ["transpose(" in n.scope for n in inside if n.group == gr.id]
        assert set(transposed) == {gr.backward}
        # the layer's source lines are _transformer's layer lines
        assert gr.lines is not None and gr.lines[0] == __file__
    # weights enter one layer and its backward only: nothing is auxiliary
    assert not [n for n in g.nodes if n.aux]


def _rnn_cell(h, x):
    return jnp.tanh(h * 0.5 + x), h


def _gru_cell(h, x):
    z = jax.nn.sigmoid(h + x)
    return z * h + (1 - z) * x, h


def test_two_rnn_scans_are_named_after_their_cells():
    def two_rnns(xs):
        h, _ = lax.scan(_rnn_cell, 0.0, xs)
        g, _ = lax.scan(_gru_cell, h, xs)
        k, _ = lax.scan(lambda c, v: (c + v, c), g, xs)
        n = lax.while_loop(lambda o: o < 10.0, _grow, k)
        return lax.fori_loop(0, 3, lambda i, c: c * 2.0, n)

    g = js.graph(two_rnns)(jnp.ones(5))
    labels = [gr.label for gr in g.groups if gr.parent is None]
    source = next(gr for gr in g.groups if gr.label.startswith("scan @")).source
    assert source is not None
    line = source.line
    name = short_path(__file__)  # as views show files: relative to the cwd
    assert labels == [
        "scan(_rnn_cell)",
        "scan(_gru_cell)",
        f"scan @ {name}:{line}",
        "while(_grow)",
        f"fori_loop @ {name}:{line + 2}",
    ]
    functions = [gr.function for gr in g.groups if gr.parent is None]
    assert functions == ["_rnn_cell", "_gru_cell", "", "_grow", ""]
    regions = [gr.label for gr in g.groups if gr.kind == "region"]
    assert regions == ["cond_jaxpr", "body_jaxpr (_grow)"]


def test_cond_branches_are_named_after_their_functions():
    def f(x):
        return lax.cond(x.sum() > 0, jnp.sin, _grow, x)

    g = js.graph(f)(jnp.ones(3))
    [cond] = [gr for gr in g.groups if gr.kind == "cond"]
    assert cond.label == "cond(_grow, sin)"
    regions = [gr.label for gr in g.groups if gr.parent == cond.id]
    assert regions == ["branches[0] (_grow)", "branches[1] (sin)"]


def _grow(o):
    return o + 1.0


def test_a_jitted_function_called_twice_wires_each_call_to_its_own_operands():
    inner = jax.jit(lambda v: jnp.sin(v) * 2.0)

    def f(x, y):
        return inner(x) + inner(y)

    g = js.graph(f)(jnp.ones(3), jnp.ones(3))
    x, y = (n for n in g.nodes if n.kind == "input")
    jits = [gr.id for gr in g.groups if gr.kind == "jit"]
    assert len(jits) == 2
    for source, group in zip((x, y), jits, strict=True):
        sins = [e.dst for e in g.edges if e.src == source.id]
        assert sins == [n.id for n in _inside(g, group) if n.label == "sin"]


def test_a_weight_shared_by_many_blocks_is_auxiliary():
    def tied(w, x):
        for i in range(6):
            with jax.named_scope(f"block{i}"):
                x = jnp.tanh(x @ w) + x
        return x

    g = js.graph(tied)(jnp.ones((4, 4)), jnp.ones((2, 4)))
    w, x = (n for n in g.nodes if n.kind == "input")
    assert w.aux and not x.aux
    p = g.payload()
    assert p["aux"] == [g.nodes.index(w)]
    assert p["auxMinGroups"] == 4


def test_linen_module_paths_become_groups_forward_and_backward():
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Dense(8)(x))
            return nn.Dense(2)(x)

    model = MLP()
    x = jnp.ones((3, 4))
    params = model.init(jax.random.PRNGKey(0), x)

    def loss(p):
        y = model.apply(p, x)
        assert isinstance(y, jax.Array)
        return jnp.mean(y**2)

    g = js.graph(jax.grad(loss))(params)
    paths = {(gr.scope, gr.backward) for gr in g.groups if gr.kind == "scope"}
    assert {
        ("MLP", False),
        ("MLP/Dense_0", False),
        ("MLP/Dense_1", False),
        ("MLP", True),
        ("MLP/Dense_0", True),
        ("MLP/Dense_1", True),
    } <= paths
    labels = {gr.label for gr in g.groups if gr.parent is None}
    assert {"MLP", "MLP (backward)"} <= labels


def test_equinox_module_names_become_groups_and_vmapped_layers_keep_names():
    import equinox as eqx

    model = eqx.nn.MLP(4, 2, 8, 2, key=jax.random.PRNGKey(0))

    @eqx.filter_jit
    def forward(model, xs):
        return jax.vmap(model)(xs)

    g = js.graph(forward)(model, jnp.ones((5, 4)))
    scopes = {gr.scope for gr in g.groups if gr.kind == "scope"}
    assert {"eqx.nn.MLP", "eqx.nn.MLP/eqx.nn.Linear"} <= scopes
    relu = [gr.label for gr in g.groups if gr.kind == "custom_jvp_call"]
    assert relu and set(relu) == {"custom_jvp_call(relu)"}


def test_flax_nnx_train_step_names_its_traced_functions():
    import optax
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(4, 8, rngs=rngs)
            self.l2 = nnx.Linear(8, 2, rngs=rngs)

        def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))

    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            return jnp.mean((model(x) - y) ** 2)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    g = js.graph(train_step)(model, optimizer, jnp.ones((3, 4)), jnp.ones((3, 2)))
    eqns = [n for n in g.nodes if n.kind == "eqn"]
    assert len({n.label for n in eqns}) > 5
    relu = [gr for gr in g.groups if gr.kind == "custom_jvp_call"]
    assert relu and all(gr.label == "custom_jvp_call(relu)" for gr in relu)
    # NNX records no module path in the name stack: no scope group is invented
    assert not [gr for gr in g.groups if gr.kind == "scope"]


def test_grad_inside_a_scope_keeps_its_backward_part_in_a_group_of_its_own():
    def f(x):
        return jnp.sum(jnp.tanh(x) * x)

    def g(x):
        with jax.named_scope("loss"):
            return jax.grad(f)(x)

    graph = js.graph(g)(jnp.ones(3))
    [loss] = [gr for gr in graph.groups if gr.parent is None]
    [backward] = [gr for gr in graph.groups if gr.parent == loss.id]
    assert (loss.label, loss.backward) == ("loss", False)
    assert (backward.label, backward.backward, backward.scope) == (
        "backward",
        True,
        "loss",
    )
    assert {"transpose" in n.scope for n in graph.nodes if n.group == backward.id} == {
        True
    }
    assert {"transpose" in n.scope for n in graph.nodes if n.group == loss.id} == {
        False
    }


def _tree(graph):
    """``(depth, group)`` of every group, parents before children."""
    by_id = {gr.id: gr for gr in graph.groups}

    def depth(gr):
        d = 0
        while gr.parent is not None:
            gr, d = by_id[gr.parent], d + 1
        return d

    return [(depth(gr), gr) for gr in graph.groups]


def test_flax_nnx_modules_become_call_groups_forward_and_backward():
    import optax
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, d, rngs):
            self.norm = nnx.LayerNorm(d, rngs=rngs)
            self.lin = nnx.Linear(d, d, rngs=rngs)

        def __call__(self, x):
            y = self.norm(x)
            y = nnx.relu(self.lin(y))
            return x + y

    class Model(nnx.Module):
        def __init__(self, rngs):
            self.inp = nnx.Linear(4, 8, rngs=rngs)
            self.blocks = nnx.List([Block(8, rngs) for _ in range(3)])

        def __call__(self, x):
            x = self.inp(x)
            for block in self.blocks:  # one call site for every block
                x = block(x)
            return x

    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    @nnx.jit
    def train_step(model, optimizer, x):
        def loss_fn(model):
            return jnp.mean(model(x) ** 2)

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    g = js.graph(train_step)(model, optimizer, jnp.ones((3, 4)))
    calls = [(d, gr.label) for d, gr in _tree(g) if gr.kind == "call"]
    forward = [(3, "self.norm"), (3, "self.lin")]
    backward = forward[::-1]
    assert calls == [
        (0, "loss_fn"),
        (1, "Model"),
        (2, "self.inp"),
        *[c for i in (1, 2, 3) for c in [(2, f"Block #{i}"), *forward]],
        (0, "loss_fn (backward)"),
        (1, "Model"),
        *[c for i in (3, 2, 1) for c in [(2, f"Block #{i}"), *backward]],
        (2, "self.inp"),
        (0, "optimizer.update"),
    ]
    for _depth, gr in _tree(g):
        if gr.kind == "call":
            assert gr.backward == (
                gr.label == "loss_fn (backward)" or _under(g, gr, "loss_fn (backward)")
            )
            assert gr.size >= 2 and gr.lines is not None
        if gr.label.startswith("Block"):
            # a block's equations come from Block.__call__, in this file
            assert gr.lines[0] == __file__ and gr.size > 10
    # the forward and backward halves hold the same number of blocks' nodes
    sizes = {gr.label: gr.size for _, gr in _tree(g) if gr.parent is None}
    assert sizes["loss_fn"] > 3 * 10 and sizes["loss_fn (backward)"] > 3 * 10


def _under(graph, group, label):
    by_id = {gr.id: gr for gr in graph.groups}
    while group.parent is not None:
        group = by_id[group.parent]
        if group.label == label:
            return True
    return False


def test_linen_train_step_keeps_module_paths_and_groups_the_optimizer_by_its_call():
    import flax.linen as nn
    import optax

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(nn.relu(nn.Dense(8)(x)))

    model, tx = MLP(), optax.adam(1e-3)
    x = jnp.ones((3, 4))
    params = model.init(jax.random.PRNGKey(0), x)

    @jax.jit
    def train_step(params, opt_state):
        def loss(p):
            return jnp.mean(model.apply(p, x) ** 2)

        grads = jax.grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    g = js.graph(train_step)(params, tx.init(params))
    top = [(gr.kind, gr.label) for gr in g.groups if gr.parent is None]
    # the loss function holds the model's module paths, in each pass
    assert top == [
        ("call", "loss"),
        ("call", "loss (backward)"),
        ("call", "tx.update"),
        ("call", "optax.apply_updates"),
    ]
    scopes = [(d, gr.label, gr.backward) for d, gr in _tree(g) if gr.kind == "scope"]
    assert sorted(scopes) == sorted(
        [(1, "MLP", b) for b in (False, True)]
        + [(2, f"Dense_{i}", b) for i in (0, 1) for b in (False, True)]
    )
    update = next(gr for gr in g.groups if gr.label == "tx.update")
    assert update.size > 20 and not _inside_scope(g, update)


def _inside_scope(graph, group):
    by_id = {gr.id: gr for gr in graph.groups}
    while group.parent is not None:
        group = by_id[group.parent]
        if group.kind == "scope":
            return True
    return False


def test_equinox_repeated_layers_are_a_group_each_as_nnx_blocks_are():
    import equinox as eqx
    import optax

    model = eqx.nn.MLP(4, 2, 8, depth=3, key=jax.random.PRNGKey(0))
    optim = optax.sgd(1e-2)
    opt_state = optim.init(eqx.filter(model, eqx.is_array))

    def loss(model, x, y):
        return jnp.mean((jax.vmap(model)(x) - y) ** 2)

    @eqx.filter_jit
    def make_step(model, opt_state, x, y):
        value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
        updates, opt_state = optim.update(grads, opt_state)
        return eqx.apply_updates(model, updates), opt_state, value

    g = js.graph(make_step)(model, opt_state, jnp.ones((5, 4)), jnp.ones((5, 2)))
    by_id = {gr.id: gr for gr in g.groups}

    def linears(backward):
        return [
            gr.size
            for gr in g.groups
            if gr.label == "eqx.nn.Linear"
            and by_id[gr.parent or ""].backward == backward
        ]

    # depth=3: four Linear layers, forward and backward, each its own group
    assert linears(False) == [4, 4, 4, 4]
    assert len(linears(True)) == 4
    relus = [gr for gr in g.groups if gr.label == "custom_jvp_call(relu)"]
    assert len(relus) == 3
