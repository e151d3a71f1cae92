"""A staged program re-traced with chosen intermediates added as outputs.

``Rewriter.run`` walks the stepper's ``Plan`` of a program under a fresh ``jax.jit``
trace and binds every equation as JAX's own ``eval_jaxpr`` does, so the new program
computes what the original computes; where a selected equation sits inside a nested
jaxpr, that equation is rebuilt with the public API so the selected values leave it:

- a call (``jit``, ``closed_call``, ``checkpoint``, ``custom_jvp_call``,
  ``custom_vjp_call``) is inlined;
- a ``scan`` body returns them as extra stacked outputs (one row per iteration);
- a ``while`` body carries them: the last iteration's values (``"last"``), or, for
  flags, the values of the first iteration that set one (``"first"``), with its
  iteration number under ``"iter|<while path>|<key>"``;
- a ``shard_map`` body returns them with a leading axis, one row per device.

Equations whose nested jaxprs hold nothing selected are bound unchanged. Entries
are keyed by strings (``path_key``), as a pytree's dict keys must sort.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from jaxscope._stepper.plan import Node, Plan, read, write
from jaxscope.compat import probe as _cp

Key = str
Entries = dict[Key, Any]
#: What to record of a selected equation, given its inputs and outputs:
#: ``{key: traced value}``.
Record = Callable[[Node, list[Any], list[Any]], Entries]

#: Equations whose single nested jaxpr takes the equation's inputs as they are.
CALLS = frozenset(
    {
        "jit",
        "pjit",
        "closed_call",
        "core_call",
        "checkpoint",
        "remat",
        "remat2",
        "custom_jvp_call",
        "custom_vjp_call",
        "custom_vjp_call_jaxpr",
    }
)
LOOPS = frozenset({"scan", "while"})
#: Every primitive whose nested jaxpr a selection may reach into.
ENTERED = CALLS | LOOPS | {"shard_map"}


def path_key(path: tuple[int, ...], tag: str = "") -> str:
    """``"3.0.5"`` (``"3.0.5|nan"`` with a tag): an entry's key."""
    text = ".".join(map(str, path))
    return f"{text}|{tag}" if tag else text


def body_label(node: Node) -> str | None:
    """The label of the nested jaxpr a selection may reach into (None: none)."""
    prim = node.primitive
    if prim == "while":
        return "body_jaxpr"
    if prim not in ENTERED:
        return None
    subs = node.subs
    for label in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        if label in subs:
            return label
    return None


class Rewriter:
    """Binds a plan's equations, recording the selected ones (see the module doc).

    ``selected``: the paths of the equations to record; ``record`` makes their
    entries; ``while_mode``: ``"last"`` or ``"first"`` (entries are flags).
    """

    def __init__(
        self, selected: set[tuple[int, ...]], record: Record, while_mode: str
    ) -> None:
        self.selected = selected
        self.record = record
        self.while_mode = while_mode
        self.inside: set[tuple[int, ...]] = {
            path[:k] for path in selected for k in range(1, len(path))
        }

    def run(self, plan: Plan, args: Sequence[Any]) -> tuple[list[Any], Entries]:
        env: dict[Any, Any] = {}
        write(env, plan.constvars, plan.consts)
        write(env, plan.invars, args)
        entries: Entries = {}
        for node in plan.nodes:
            invals = [read(env, v) for v in node.invars]
            if node.path in self.inside:
                outs = self._enter(node, invals, entries)
            else:
                outs = node.runner()(invals)
            write(env, node.outvars, outs)
            if node.path in self.selected:
                entries.update(self.record(node, invals, outs))
        return [read(env, v) for v in plan.outvars], entries

    def _enter(self, node: Node, invals: list[Any], entries: Entries) -> list[Any]:
        prim = node.primitive
        label = body_label(node)
        if label is None:
            return node.runner()(invals)
        body = node.subs[label]
        if prim in CALLS:
            outs, found = self.run(body, invals)
        elif prim == "scan":
            outs, found = self._scan(node, body, invals)
        elif prim == "while":
            outs, found = self._while(node, body, invals)
        else:
            outs, found = self._shard_map(node, body, invals)
        entries.update(found)
        return outs

    def _scan(
        self, node: Node, body: Plan, invals: list[Any]
    ) -> tuple[list[Any], Entries]:
        params = node.eqn.params
        n_consts, n_carry = int(params["num_consts"]), int(params["num_carry"])
        consts = invals[:n_consts]
        carry = invals[n_consts : n_consts + n_carry]
        xs = invals[n_consts + n_carry :]

        def step(c: list[Any], x: list[Any]) -> tuple[list[Any], Any]:
            outs, found = self.run(body, [*consts, *c, *x])
            return outs[:n_carry], (outs[n_carry:], found)

        carry_out, (ys, found) = jax.lax.scan(
            step,
            carry,
            xs,
            length=int(params["length"]),
            reverse=bool(params["reverse"]),
            unroll=params.get("unroll", 1),
        )
        return [*carry_out, *ys], found

    def _while(
        self, node: Node, body: Plan, invals: list[Any]
    ) -> tuple[list[Any], Entries]:
        params = node.eqn.params
        n_cond, n_body = int(params["cond_nconsts"]), int(params["body_nconsts"])
        cond_consts = invals[:n_cond]
        body_consts = invals[n_cond : n_cond + n_body]
        carry = invals[n_cond + n_body :]
        cond_plan = node.subs["cond_jaxpr"]
        first = self.while_mode == "first"

        def run_body(c: list[Any]) -> tuple[list[Any], Entries]:
            return self.run(body, [*body_consts, *c])

        shapes: Entries = jax.eval_shape(lambda c: run_body(c)[1], carry)
        zeros: Entries = {k: jnp.zeros(s.shape, s.dtype) for k, s in shapes.items()}
        seen = {k: jnp.zeros((), bool) for k in shapes}
        iters = {k: jnp.full((), -1, jnp.int32) for k in shapes}

        def cond(state: tuple[Any, ...]) -> Any:
            c = state[0]
            return self.run(cond_plan, [*cond_consts, *c])[0][0]

        def step(state: tuple[Any, ...]) -> tuple[Any, ...]:
            c, acc, was, at, count = state
            outs, found = run_body(c)
            if not first:
                return outs, found, was, at, count + 1
            now = {k: _trigger(k, found) for k in found}
            new = {k: now[k] & ~was[k] for k in found}
            acc = {k: jnp.where(new[k], found[k], acc[k]) for k in found}
            at = {k: jnp.where(new[k], count, at[k]) for k in found}
            was = {k: was[k] | now[k] for k in found}
            return outs, acc, was, at, count + 1

        state = (carry, zeros, seen, iters, jnp.zeros((), jnp.int32))
        carry_out, acc, _, at, count = jax.lax.while_loop(cond, step, state)
        found = dict(acc)
        if first:
            for k, it in at.items():
                found[f"iter|{path_key(node.path)}|{k}"] = it
        else:
            found[f"count|{path_key(node.path)}"] = count
        return list(carry_out), found

    def _shard_map(
        self, node: Node, body: Plan, invals: list[Any]
    ) -> tuple[list[Any], Entries]:
        def local(*args: Any) -> tuple[Any, Any]:
            outs, found = self.run(body, list(args))
            return tuple(outs), {k: jnp.expand_dims(v, 0) for k, v in found.items()}

        outs, found = _cp.rebind_shard_map(node.eqn, local, invals)
        return outs, dict(found)


def trigger_key(key: Key) -> Key:
    """The flag entry ``key`` follows in a while loop's ``"first"`` mode: its own
    key, the flag of an ``"iter|..."`` entry, ``"<path>|hit"`` for ``"<path>|arg<k>"``
    (an equation's operands)."""
    if key.startswith("iter|"):
        return trigger_key(key.split("|", 2)[2])
    head, _, tag = key.rpartition("|")
    if head and (tag.startswith("arg")):
        return f"{head}|hit"
    return key


def _trigger(key: Key, found: Entries) -> Any:
    """Whether entry ``key`` is set this iteration (see ``trigger_key``)."""
    value = found[trigger_key(key)]
    return jnp.any(value != 0) if value.dtype != bool else jnp.any(value)
