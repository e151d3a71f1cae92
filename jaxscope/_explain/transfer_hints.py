"""Messages and hints for how arrays, axis names and NNX objects cross transforms: a
reused donated array, an axis name no vmap binds, an NNX object captured from outside
its trace. Each builder is a pure function of the ``Facts`` it is given."""

from __future__ import annotations

from jaxscope._explain.axes import UNBOUND, UnboundAxis
from jaxscope._explain.capture import passed_to_transform
from jaxscope._explain.donation import Deleted
from jaxscope._explain.facts import Explanation, Facts
from jaxscope._explain.messages import first_line
from jaxscope._explain.wrappers import library_of
from jaxscope._source import short_path


def donated(facts: Facts) -> Explanation:
    gone = facts.deleted
    if gone is None:
        return Explanation(
            "An array used here was deleted: a jitted function it was donated to "
            "(donate_argnums / donate_argnames) took over its buffer, or it was freed "
            "with .delete()",
            "Use the value the donating call returns instead of its argument, or stop "
            "donating it (donate_argnums / donate_argnames of jax.jit or nnx.jit, "
            "donate= of eqx.filter_jit)",
        )
    name = f"`{gone.expr}`"
    file = short_path(facts.user_frame.file) if facts.user_frame is not None else ""
    at = f" at {file}:{gone.line}" if gone.line else ""
    extra = (f"last passed to: {gone.call}{at}",) if gone.call else ()
    if gone.by_hand:
        return Explanation(
            f"{name} was used after `{gone.call}`{at} deleted its buffer",
            f"Use {gone.expr} before deleting it, or delete it only once it is no "
            "longer needed",
            extra,
        )
    if not gone.call:
        return Explanation(
            f"{name} was used after its buffer was deleted (donated to a jitted "
            "function through donate_argnums / donate_argnames, or freed with "
            f"{gone.expr}.delete())",
            f"Use the value the donating call returns instead of {gone.expr}, or stop "
            "donating it; to keep both, donate a copy (jnp.copy)",
            extra,
        )
    via = f" ({gone.wrapper})" if gone.wrapper else ""
    message = (
        f"{name} was used after its buffer was deleted: a jitted function deletes the "
        f"arguments it is told to donate, and the last call above that took it is "
        f"`{gone.call}`{via}{at}"
    )
    if gone.result:
        reuse = (
            f"use `{gone.result}`, what {gone.call} returned, instead of {gone.expr}"
        )
    else:
        reuse = f"keep what the call returns: {gone.expr} = {gone.call}"
    return Explanation(
        message,
        f"Don't use {gone.expr} after the call that donated it; {reuse}. To keep "
        f"{gone.expr} as well, {_stop_donating(gone)}",
        extra,
    )


def _stop_donating(gone: Deleted) -> str:
    if gone.wrapper == "eqx.filter_jit":
        return (
            f"make {gone.callee} an eqx.filter_jit without donate= (or donate='none')"
        )
    if gone.wrapper in ("jax.jit", "nnx.jit"):
        return (
            f"drop it from donate_argnums / donate_argnames of "
            f"{gone.wrapper}({gone.callee}, ...)"
        )
    return (
        "stop donating it (donate_argnums / donate_argnames of jax.jit or nnx.jit, "
        "donate= of eqx.filter_jit)"
    )


def unbound_axis(facts: Facts) -> Explanation:
    if facts.axis is not None:
        axis = facts.axis
    else:
        found = UNBOUND.search(facts.text)
        axis = UnboundAxis(name=found.group("name") if found else "")
    name = axis.name or "..."
    quoted = f"'{axis.name}'" if axis.name else "an axis name"
    expr = facts.site.text(facts.site.node)
    at = f" (in `{expr}`)" if expr else ""
    if axis.batch_norm and axis.name:
        message = (
            f"eqx.nn.BatchNorm(axis_name={quoted}) averages over the vmapped axis "
            f"{quoted}{at}, but no enclosing jax.vmap binds that name"
        )
    elif axis.batch_norm:
        message = (
            f"eqx.nn.BatchNorm averages over a vmapped axis{at}, but no enclosing "
            "jax.vmap binds its name"
        )
    else:
        uses = f"the axis name {quoted}" if axis.name else "an axis name"
        message = (
            f"A collective uses {uses}{at}, but no enclosing jax.vmap, pmap or "
            "shard_map binds that name"
        )
    extra = (f"enclosing vmap: {axis.vmap} at {axis.where}",) if axis.vmap else ()
    if axis.binds:
        hint = (
            f"The vmap at {axis.where} binds axis_name={axis.binds}, not {quoted}: use "
            "the same name in both places"
        )
    elif axis.fixed:
        hint = f"Name the vmapped axis at {axis.where}: `{axis.fixed}`"
    elif axis.batch_norm:
        hint = (
            "eqx.nn.BatchNorm works on one example and averages over a vmapped batch: "
            f'call the model under jax.vmap(model, axis_name="{name}", '
            "in_axes=(0, None), out_axes=(0, None))(xs, state) (the state is shared, "
            "not batched)"
        )
    else:
        hint = (
            f"Run the function under a transform that binds the name: jax.vmap(f, "
            f'axis_name="{name}"), or jax.shard_map over a mesh with an axis named '
            f'"{name}"'
        )
    return Explanation(message, hint, extra)


_NNX_TWINS = ("jit", "vmap", "grad", "value_and_grad", "pmap", "remat", "scan")


def trace_level(facts: Facts) -> Explanation:
    grabbed = facts.capture
    passed = passed_to_transform(first_line(facts.text))
    doing = "passed to an nnx transform" if passed else "changed"
    if grabbed is None:
        return Explanation(
            f"An NNX object from outside a JAX transform is {doing} inside it",
            "Pass NNX objects into transforms as arguments of nnx transforms (nnx.jit, "
            "nnx.vmap, nnx.grad, ...) instead of capturing them; under jax transforms, "
            "split them outside (graphdef, state = nnx.split(model)) and merge them "
            "inside (model = nnx.merge(graphdef, state))",
        )
    name, fn, wrapper = grabbed.name, grabbed.function, grabbed.wrapper
    outside = f"its {wrapper} trace" if wrapper else "its trace"
    message = (
        f"`{name}` (an NNX {grabbed.type_name}) is captured by {fn} from outside "
        f"{outside} and {doing} inside it"
    )
    others = [p for p in grabbed.params if p != name]
    rest = ", ".join(others) or "..."
    if library_of(wrapper) == "nnx":
        hint = (
            f"Pass `{name}` in: {wrapper} only carries the state of objects passed to "
            f"it as arguments, so add `{name}` as a parameter of {fn} and call "
            f"{fn}({name}, {rest})"
        )
        return Explanation(message, hint)
    attr = wrapper.rsplit(".", 1)[-1]
    twin = f"nnx.{attr}" if wrapper.startswith("jax") and attr in _NNX_TWINS else ""
    under = wrapper or "the JAX transform"
    if twin:
        axes = ""
        if attr == "vmap":
            axes = ", in_axes=(" + ", ".join(["None"] + ["0"] * max(1, len(others)))
            axes += ")"
        use = (
            f"Use {twin} instead of {under} and pass `{name}` to it as an argument: add "
            f"it as a parameter of {fn} and call {twin}({fn}{axes})({name}, {rest})"
        )
    else:
        use = (
            f"Pass `{name}` as an argument of an nnx transform (nnx.jit, nnx.vmap, "
            f"nnx.grad, ...) rather than capturing it in {fn}"
        )
    hint = (
        f"{use}; or keep {under} and pass its state: graphdef, state = "
        f"nnx.split({name}) outside, {name} = nnx.merge(graphdef, state) inside {fn}, "
        f"and return nnx.state({name}) to apply with nnx.update({name}, new_state)"
    )
    return Explanation(message, hint)
