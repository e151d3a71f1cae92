"""``js.profile(f, repeat=5)(*args)``: measured time per source line of a compiled call.

The call is compiled once (not timed), run ``warmup`` times, then ``repeat`` times
under ``jax.profiler``; the per-op events XLA records are given to the lines of the
user's code that produced each op (see ``attribution.py``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax

from jaxscope._checks import check_count, takes_the_function_alone
from jaxscope._display import Renderable, printable
from jaxscope._exceptions import InvalidCallError, JaxscopeError, ProfileError
from jaxscope._format import plural, short_dtype
from jaxscope._hlo.view import HloView
from jaxscope._profile.attribution import attribute, hotspots, ops_at
from jaxscope._profile.compiling import (
    Runner,
    StagedCall,
    compile_lowered,
    optimized_view,
    stage_call,
)
from jaxscope._profile.costs import FREE
from jaxscope._profile.events import (
    COMMAND_BUFFERS_OFF,
    CONTROL_OPCODES,
    DeviceTimes,
    device_times,
    grouped_ops,
    op_events,
    run_under_profiler,
)
from jaxscope._profile.hlo_facts import ModuleFacts
from jaxscope._profile.records import FunctionTime, Hotspot, LineTime, OpTime
from jaxscope._profile.source import SourceBlock, source_blocks
from jaxscope._staging import first_line, staged

SPLIT_NOTE = (
    "a fusion's time is split over its member ops' lines in proportion to their "
    "estimated cost (flops, transcendentals x8, elements moved)"
)


@dataclass(frozen=True)
class Measurement:
    """What one ``js.profile`` call measured: the program and each device's times."""

    hlo: HloView
    module: ModuleFacts
    times: dict[int, DeviceTimes]
    run_times: tuple[float, ...]
    repeat: int
    function_name: str = ""
    platform: str = ""
    # XLA GPU's CUDA graphs that hid the kernels' ops in the build the user compiled;
    # when set, the times come from a build without them, and ``as_compiled_run_times``
    # are the runs of the build as compiled (see profile_call)
    command_buffers: tuple[str, ...] = ()
    as_compiled_run_times: tuple[float, ...] = ()


class ProfileView(Renderable):
    """Measured time of one compiled call, per op, per source line, per function.

    Every time is seconds per run: the mean over the ``repeat`` profiled runs and,
    for a program on several devices, over the devices (``for_device(d)`` gives one
    device's numbers).

    Attributes:
        lines: ``LineTime`` rows, most time first; ``by_line`` keys them by
            ``(file, line)``.
        ops: ``OpTime`` of every op that ran, most time first.
        functions: the user's call tree (``FunctionTime``), like a flame graph.
        total: the time of every op that ran (the lines' times plus
            ``unattributed``, the ops with no source line).
        wall: the measured span of a run on the device, first op start to last op
            end (mean over runs and devices, as every other time here).
        run_times: host wall time of each profiled run (call to result ready).
        command_buffers: on GPU, XLA's CUDA graphs (``command_buffer_N``) that hid
            which op each kernel ran for in the program as you compiled it; when
            there are any, every time above is from the same program compiled with
            command buffers off, and ``as_compiled_run_times`` holds the runs of the
            program as you compiled it (CUDA graphs save launch overhead).
        devices: every device the program ran on; ``devices_shown`` those whose
            numbers the view holds (all, or the one of ``for_device``);
            ``device_totals``: ``{device: op time per run}`` of those.
        hlo: the optimized ``HloView`` the ops come from.
    """

    def __init__(self, measured: Measurement, device: int | None = None) -> None:
        times = measured.times if device is None else {device: measured.times[device]}
        self.measured = measured
        self.hlo, self.module = measured.hlo, measured.module
        self.function_name, self.platform = measured.function_name, measured.platform
        self.repeat, self.run_times = measured.repeat, measured.run_times
        self.command_buffers = measured.command_buffers
        self.as_compiled_run_times = measured.as_compiled_run_times
        self.devices, self.devices_shown = tuple(measured.times), tuple(times)
        self.device_totals = {
            d: sum(t.op_ns.values()) / 1e9 / max(1, t.runs) for d, t in times.items()
        }
        spans = [statistics.mean(t.span_ns) / 1e9 for t in times.values() if t.span_ns]
        self.wall = sum(spans) / len(spans) if spans else 0.0
        self.attribution = attribute(self.module, times, self.code)
        self.lines: list[LineTime] = self.attribution.lines
        self.by_line = {line.key: line for line in self.lines}
        self.ops: list[OpTime] = self.attribution.ops
        self.functions: FunctionTime = self.attribution.functions
        self.total = self.attribution.total
        self.unattributed = self.attribution.unattributed
        self.show_top = 10

    @property
    def iterations(self) -> bool:
        """Whether any op ran more than once per run (a loop body)."""
        return any(line.count > 1.0001 for line in self.lines)

    def code(self, file: str, line: int) -> str:
        """The source text of ``file:line`` (stripped), or ``""``."""
        return self.hlo.source_line(file, line)

    def ops_at(self, file: str, line: int) -> list[tuple[OpTime, float]]:
        """The ops whose time went (in part) to ``file:line``, with that time."""
        return ops_at(self.ops, (file, line))

    def top(self, n: int = 10) -> list[Hotspot]:
        """The ``n`` biggest costs: source lines (their compute) and, as their own
        rows, each collective, copy and host transfer op."""
        check_count(n, "n", low=0, where="ProfileView.top", example="view.top(5)")
        return hotspots(self.attribution, self.code)[:n]

    def for_device(self, device: int) -> ProfileView:
        """The same profile with only ``device``'s measurements."""
        if device not in self.measured.times:
            raise InvalidCallError(
                f"device {device} ran no op of this program; measured devices: "
                f"{list(self.devices)}"
            )
        return ProfileView(self.measured, device)

    def source_blocks(self) -> list[SourceBlock]:
        """The source shown by the displays: every measured line, whole functions."""
        return source_blocks((line.key for line in self.lines), self.hlo.raw_file)

    def __repr__(self) -> str:
        name = f" of {printable(self.function_name)}" if self.function_name else ""
        return (
            f"<ProfileView{name}: {self.total * 1e3:.3f} ms per run, "
            f"{plural(len(self.lines), 'line')}, {plural(len(self.ops), 'op')}>"
        )


def _check_repeat(repeat: Any, warmup: Any) -> None:
    for name, value, low in (("repeat", repeat, 1), ("warmup", warmup, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise InvalidCallError(
                f"js.profile: {name} must be an int >= {low}, got {value!r}; "
                f"write e.g. js.profile(f, {name}={max(low, 1)})(x)"
            )


def profile_call(
    fun: Callable[..., Any],
    args: Sequence[Any],
    kwargs: dict[str, Any],
    *,
    repeat: int = 5,
    warmup: int = 1,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    api_name: str = "js.profile",
) -> ProfileView:
    """Compile ``fun(*args, **kwargs)``, run it under the profiler, attribute the time."""
    _check_repeat(repeat, warmup)
    call = stage_call(
        fun,
        args,
        kwargs,
        static_argnums=static_argnums,
        static_argnames=static_argnames,
        api_name=api_name,
    )
    _check_concrete(call, api_name)
    compiled = compile_lowered(call.lowered)
    view = optimized_view(call.lowered, compiled, call.function_name)
    module = ModuleFacts(view)
    runner = Runner(compiled, call.inputs)
    try:
        data, run_times = run_under_profiler(runner.prepare, runner, repeat, warmup)
    except JaxscopeError:
        raise
    except Exception as exc:
        raise _run_failed(exc, call, api_name) from exc
    events = op_events(data, module.module_name, module.ops)
    as_compiled: list[float] = []
    grouped = grouped_ops(data, module.module_name, module.ops)
    if grouped:
        # The kernels ran inside CUDA graphs that hide their ops: measure a build
        # without them for the per-op times, and say how the two builds' runs compare.
        compiled = compile_lowered(call.lowered, COMMAND_BUFFERS_OFF)
        view = optimized_view(call.lowered, compiled, call.function_name)
        module = ModuleFacts(view)
        runner = Runner(compiled, call.inputs)
        data, plain_times = run_under_profiler(runner.prepare, runner, repeat, warmup)
        events = op_events(data, module.module_name, module.ops)
        as_compiled, run_times = run_times, plain_times
    runs_ops = any(f.op.opcode not in FREE for f in module.ops.values())
    if not events and runs_ops:
        raise ProfileError(
            f"{api_name}: jax.profiler recorded no per-op events of {module.module_name} "
            f"on this backend ({_platform(compiled)}); the XLA build may not emit them"
        )
    control = frozenset(
        name for name, f in module.ops.items() if f.op.opcode in CONTROL_OPCODES
    )
    measured = Measurement(
        hlo=view,
        module=module,
        times=device_times(events, repeat, control),
        run_times=tuple(run_times),
        repeat=repeat,
        function_name=call.function_name,
        platform=_platform(compiled),
        command_buffers=tuple(sorted(grouped)),
        as_compiled_run_times=tuple(as_compiled),
    )
    return ProfileView(measured)


def _check_concrete(call: StagedCall, api_name: str) -> None:
    """Refuse shapes (``jax.ShapeDtypeStruct``): a profile runs the program."""
    leaves = jax.tree_util.tree_leaves(call.inputs)
    for index, leaf in enumerate(leaves):
        if isinstance(leaf, jax.ShapeDtypeStruct):
            names = call.input_names
            name = names[index] if index < len(names) else f"input {index}"
            shape = ",".join(map(str, leaf.shape))
            raise InvalidCallError(
                f"{api_name} needs concrete arrays (it runs the program), but "
                f"argument {name} is a ShapeDtypeStruct "
                f"{short_dtype(leaf.dtype)}[{shape}]; pass an array, or use js.memory "
                "or js.hlo, which take shapes"
            )


def _run_failed(exc: Exception, call: StagedCall, api_name: str) -> ProfileError:
    """The compiled program failed while profiled, as one line; out of memory
    points to ``js.memory``, which answers without allocating."""
    message = first_line(str(exc)).rstrip(".")
    name = call.function_name or "f"
    fix = "fix the program, or run it once outside the profiler to see the error"
    if "RESOURCE_EXHAUSTED" in message or "out of memory" in message.lower():
        fix = (
            f"js.memory({name})(...) shows what takes the memory without allocating it"
        )
    return ProfileError(
        f"{api_name}: running {name} raised {type(exc).__name__}: {message}; {fix}"
    )


def _platform(compiled: Any) -> str:
    """``"cpu"``, ``"gpu"``, ... of the devices the executable writes its outputs on."""
    try:
        for sharding in jax.tree.leaves(compiled.output_shardings):
            return next(iter(sharding.device_set)).platform
    except Exception:  # a backend without shardings on its executables
        pass
    return ""


@takes_the_function_alone
def profile(
    fun: Callable[..., Any],
    *,
    repeat: int = 5,
    warmup: int = 1,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
) -> Callable[..., ProfileView]:
    """Measure where a compiled call spends its time, per line of your code.

    ``js.profile(f)(*args)`` compiles ``f`` for ``args`` once (not timed), runs it
    ``warmup`` times, then ``repeat`` times under ``jax.profiler``, and gives each
    optimized-HLO op's measured time to the source line that produced it (a
    fusion's time is split over its members' lines in proportion to their
    estimated cost). Works on ``jax.jit``, ``nnx.jit`` and ``eqx.filter_jit``
    functions and plain callables; donated arguments are copied for each run.

    Example:
        >>> import jax.numpy as jnp, jaxscope as js
        >>> def f(a):
        ...     return (a @ a).sum()
        >>> view = js.profile(f, repeat=2)(jnp.ones((64, 64)))
        >>> view.lines[0].code
        'return (a @ a).sum()'
    """
    _check_repeat(repeat, warmup)
    return staged(
        fun,
        "js.profile",
        lambda f, args, kwargs: profile_call(
            f,
            args,
            kwargs,
            repeat=repeat,
            warmup=warmup,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
        ),
    )
