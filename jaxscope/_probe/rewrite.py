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
    entries; ``mode``: ``"stack"`` (scan rows stacked, a while's last iteration) or
    ``"first"`` (in both loops, the entries of the first iteration whose flag is
    set, see ``trigger_key``).
    """

    def __init__(
        self, selected: set[tuple[int, ...]], record: Record, mode: str
    ) -> None:
        self.selected = selected
        self.record = record
        self.mode = mode
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
        options = {
            "length": int(params["length"]),
            "reverse": bool(params["reverse"]),
            "unroll": params.get("unroll", 1),
        }

        def run_body(c: list[Any], x: list[Any]) -> tuple[list[Any], Entries]:
            return self.run(body, [*consts, *c, *x])

        if self.mode != "first":

            def step(c: list[Any], x: list[Any]) -> tuple[list[Any], Any]:
                outs, found = run_body(c, x)
                return outs[:n_carry], (outs[n_carry:], found)

            carry_out, (ys, found) = jax.lax.scan(step, carry, xs, **options)
            return [*carry_out, *ys], found

        rows = [jax.ShapeDtypeStruct(x.shape[1:], x.dtype) for x in xs]
        state = _first_state(
            jax.eval_shape(lambda c, x: run_body(c, x)[1], carry, rows)
        )

        def first_step(st: tuple[Any, ...], x: list[Any]) -> tuple[Any, list[Any]]:
            c, rest = st[0], st[1:]
            outs, found = run_body(c, x)
            return (outs[:n_carry], *_first_update(found, *rest)), outs[n_carry:]

        final, ys = jax.lax.scan(first_step, (carry, *state), xs, **options)
        return [*final[0], *ys], _first_entries(node, *final[1:4])

    def _while(
        self, node: Node, body: Plan, invals: list[Any]
    ) -> tuple[list[Any], Entries]:
        params = node.eqn.params
        n_cond, n_body = int(params["cond_nconsts"]), int(params["body_nconsts"])
        cond_consts = invals[:n_cond]
        body_consts = invals[n_cond : n_cond + n_body]
        carry = invals[n_cond + n_body :]
        cond_plan = node.subs["cond_jaxpr"]

        def run_body(c: list[Any]) -> tuple[list[Any], Entries]:
            return self.run(body, [*body_consts, *c])

        def cond(st: tuple[Any, ...]) -> Any:
            return self.run(cond_plan, [*cond_consts, *st[0]])[0][0]

        shapes = jax.eval_shape(lambda c: run_body(c)[1], carry)
        if self.mode != "first":
            zeros = {k: jnp.zeros(v.shape, v.dtype) for k, v in shapes.items()}

            def step(st: tuple[Any, ...]) -> tuple[Any, ...]:
                outs, found = run_body(st[0])
                return outs, found, st[2] + 1

            init = (carry, zeros, jnp.zeros((), jnp.int32))
            carry_out, found, count = jax.lax.while_loop(cond, step, init)
            return list(carry_out), {**found, f"count|{path_key(node.path)}": count}

        def first_step(st: tuple[Any, ...]) -> tuple[Any, ...]:
            outs, found = run_body(st[0])
            return (outs, *_first_update(found, *st[1:]))

        final = jax.lax.while_loop(cond, first_step, (carry, *_first_state(shapes)))
        return list(final[0]), _first_entries(node, *final[1:4])

    def _shard_map(
        self, node: Node, body: Plan, invals: list[Any]
    ) -> tuple[list[Any], Entries]:
        def local(*args: Any) -> tuple[Any, Any]:
            outs, found = self.run(body, list(args))
            return tuple(outs), {k: jnp.expand_dims(v, 0) for k, v in found.items()}

        outs, found = _cp.rebind_shard_map(node.eqn, local, invals)
        return outs, dict(found)


def _first_state(shapes: Entries) -> tuple[Entries, Entries, Entries, Any]:
    """``(values, seen, iteration, count)`` before a loop's first iteration."""
    return (
        {k: jnp.zeros(v.shape, v.dtype) for k, v in shapes.items()},
        {k: jnp.zeros((), bool) for k in shapes},
        {k: jnp.full((), -1, jnp.int32) for k in shapes},
        jnp.zeros((), jnp.int32),
    )


def _first_update(
    found: Entries, acc: Entries, seen: Entries, at: Entries, count: Any
) -> tuple[Entries, Entries, Entries, Any]:
    """Keep each entry of the first iteration that set its flag."""
    now = {k: _trigger(k, found) for k in found}
    new = {k: now[k] & ~seen[k] for k in found}
    return (
        {k: jnp.where(new[k], found[k], acc[k]) for k in found},
        {k: seen[k] | now[k] for k in found},
        {k: jnp.where(new[k], count, at[k]) for k in found},
        count + 1,
    )


def _first_entries(node: Node, acc: Entries, seen: Entries, at: Entries) -> Entries:
    """A loop's entries in ``"first"`` mode, with the iteration (counted in the
    order the loop ran, -1 when never set) of each under ``"iter|<loop>|<key>"``."""
    del seen
    loop = path_key(node.path)
    return {**acc, **{f"iter|{loop}|{k}": it for k, it in at.items()}}


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
