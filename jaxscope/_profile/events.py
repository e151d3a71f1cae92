"""Run a compiled call under ``jax.profiler`` and read the per-op events XLA records.

Only public JAX is used: ``jax.profiler.start_trace`` / ``stop_trace`` write an XSpace
(``*.xplane.pb``) to a temporary directory, read back with
``jax.profiler.ProfileData.from_file``. Where the events are:

* CPU: on the host threads that run the thunks, one event per executed op, named by
  the op, with stats ``hlo_op``, ``hlo_module``, ``run_id`` and ``device_ordinal``.
* GPU / TPU: on the device planes (``/device:GPU:0``, ...): each kernel carries
  ``hlo_op`` / ``hlo_module`` stats (one op may launch several kernels); TPU's
  ``XLA Ops`` line names the op by the event itself. When device planes have op
  events, host-side events (kernel launches) are left out.

An op that runs other ops (``while``, ``conditional``, ``call``) keeps only the time
no op inside it covers (its self time).

On GPU, XLA records a whole CUDA graph (a "command buffer", the default for most
ops since 2024) as one thunk: its kernels carry ``hlo_op: command_buffer_N``, a name
that is not an op of the program, so no kernel says which op launched it.
``grouped_ops`` finds such names; the profiler then measures a build with command
buffers off (``COMMAND_BUFFERS_OFF``) to attribute the time.
"""

from __future__ import annotations

import bisect
import contextlib
import glob
import itertools
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import jax

from jaxscope._exceptions import ProfileError

_DEVICE_PLANE = re.compile(r"^/device:([A-Z_]+):(\d+)")
# lines the profiler derives from the kernels themselves: counting them would count twice
_DERIVED_LINES = frozenset(
    {
        "XLA Ops",
        "XLA Modules",
        "Steps",
        "Framework Ops",
        "Framework Name Scope",
        "Source code",
        "XLA TraceMe",
        "TensorFlow Name Scope",
        "TensorFlow Ops",
    }
)
CONTROL_OPCODES = frozenset({"while", "conditional", "call"})
# XLA GPU's debug option: an empty list of command types turns CUDA graphs off
COMMAND_BUFFERS_OFF = {"xla_gpu_enable_command_buffer": ""}


@dataclass(frozen=True, slots=True)
class OpEvent:
    """One execution of one op on one device."""

    op: str
    device: int
    run: int | None
    start_ns: float
    duration_ns: float


@dataclass(slots=True)
class DeviceTimes:
    """What one device spent, summed over the profiled runs."""

    runs: int = 0
    op_ns: dict[str, float] = field(default_factory=dict)  # self time per op
    op_count: dict[str, int] = field(default_factory=dict)  # executions per op
    span_ns: list[float] = field(
        default_factory=list
    )  # first op start → last op end, per run


@contextlib.contextmanager
def tracing() -> Iterator[list[Any]]:
    """``jax.profiler`` on inside the block (Python tracer off); after it, the list
    it yields holds the ``ProfileData`` read back. The trace's directory is removed."""
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # Python calls are not what is measured
    log_dir = tempfile.mkdtemp(prefix="jaxscope-profile-")
    out: list[Any] = []
    try:
        try:
            jax.profiler.start_trace(log_dir, profiler_options=options)
        except RuntimeError as exc:
            raise ProfileError(
                f"js.profile could not start jax.profiler ({exc}); stop the running "
                "trace (jax.profiler.stop_trace()) and try again"
            ) from None
        try:
            yield out
        finally:
            jax.profiler.stop_trace()
        found = glob.glob(os.path.join(log_dir, "**", "*.xplane.pb"), recursive=True)
        if not found:
            raise ProfileError(
                "jax.profiler wrote no trace (*.xplane.pb); js.profile needs a jaxlib "
                "built with the profiler"
            )
        out.append(jax.profiler.ProfileData.from_file(max(found, key=os.path.getmtime)))
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


def run_under_profiler(
    prepare: Callable[[], Any], call: Callable[[Any], Any], repeat: int, warmup: int
) -> tuple[Any, list[float]]:
    """Run ``call(prepare())`` ``warmup`` times, then ``repeat`` times under the profiler.

    Returns the ``ProfileData`` and the wall time of each profiled run (from the
    call to ``block_until_ready``; ``prepare`` is not timed).
    """
    for _ in range(warmup):
        jax.block_until_ready(call(prepare()))
    times: list[float] = []
    with tracing() as data:
        for _ in range(repeat):
            prepared = prepare()
            start = time.perf_counter()
            jax.block_until_ready(call(prepared))
            times.append(time.perf_counter() - start)
    return data[0], times


def _device_of(plane_name: str) -> int | None:
    match = _DEVICE_PLANE.match(plane_name)
    if match is None or match.group(1) == "CUSTOM":
        return None
    return int(match.group(2))


def _event(
    event: Any, device: int | None, module: str, known: frozenset[str], by_name: bool
) -> OpEvent | None:
    stats = dict(event.stats)
    op = stats.get("hlo_op")
    if op is None and by_name:
        op = event.name
    if not isinstance(op, str) or op not in known:
        return None
    owner = stats.get("hlo_module")
    if owner is not None and owner != module:
        return None
    if device is None:
        ordinal = stats.get("device_ordinal", 0)
        device = int(ordinal) if isinstance(ordinal, (int, float)) else 0
    run = stats.get("run_id")
    return OpEvent(
        op=op,
        device=device,
        run=int(run) if isinstance(run, (int, float)) else None,
        start_ns=float(event.start_ns),
        duration_ns=float(event.duration_ns),
    )


def _plane_events(
    plane: Any, device: int | None, module: str, known: frozenset[str]
) -> list[OpEvent]:
    lines = list(plane.lines)
    primary: list[OpEvent] = []
    derived: list[OpEvent] = []
    for line in lines:
        is_derived = line.name in _DERIVED_LINES
        by_name = device is not None and line.name == "XLA Ops"
        for event in line.events:
            found = _event(event, device, module, known, by_name)
            if found is not None:
                (derived if is_derived else primary).append(found)
    return primary or derived


def op_events(data: Any, module: str, known: Iterable[str]) -> list[OpEvent]:
    """The events of ``module``'s ops (names in ``known``) in a ``ProfileData``:
    from the device planes where they have any, else from the host threads."""
    names = frozenset(known)
    device_events: list[OpEvent] = []
    host_events: list[OpEvent] = []
    for plane in data.planes:
        device = _device_of(plane.name)
        if device is not None:
            device_events.extend(_plane_events(plane, device, module, names))
        elif plane.name.startswith("/host:"):
            host_events.extend(_plane_events(plane, None, module, names))
    return device_events or host_events


def grouped_ops(data: Any, module: str, known: Iterable[str]) -> set[str]:
    """``hlo_op`` names on ``module``'s device events that are not ops of the program:
    thunks that run many ops as one (XLA GPU's ``command_buffer_N``)."""
    names = frozenset(known)
    found: set[str] = set()
    for plane in data.planes:
        if _device_of(plane.name) is None:
            continue
        for line in plane.lines:
            if line.name in _DERIVED_LINES:
                continue
            for event in line.events:
                stats = dict(event.stats)
                op = stats.get("hlo_op")
                owner = stats.get("hlo_module")
                if isinstance(op, str) and op not in names and owner in (None, module):
                    found.add(op)
    return found


def _group_runs(events: list[OpEvent], repeat: int) -> list[list[OpEvent]]:
    """One device's events split into runs: by ``run_id`` where XLA records it,
    else at the ``repeat - 1`` widest gaps between events."""
    if all(e.run is not None for e in events):
        runs: dict[int | None, list[OpEvent]] = {}
        for event in events:
            runs.setdefault(event.run, []).append(event)
        return [sorted(r, key=lambda e: e.start_ns) for r in runs.values()]
    ordered = sorted(events, key=lambda e: e.start_ns)
    if repeat <= 1 or len(ordered) < 2:
        return [ordered]
    ends = [ordered[0].start_ns + ordered[0].duration_ns]
    for e in ordered[1:]:
        ends.append(max(ends[-1], e.start_ns + e.duration_ns))
    gaps = sorted(
        range(1, len(ordered)),
        key=lambda i: ordered[i].start_ns - ends[i - 1],
        reverse=True,
    )[: repeat - 1]
    cuts = [0, *sorted(gaps), len(ordered)]
    return [ordered[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def _covered_ns(intervals: list[tuple[float, float]]) -> float:
    covered, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end <= reach:
            continue
        covered += end - max(start, reach)
        reach = end
    return covered


def _self_times(run: list[OpEvent], control: frozenset[str]) -> list[float]:
    """Each event's duration less the time events inside it cover (control ops).

    ``run`` is sorted by start time."""
    starts = [e.start_ns for e in run]
    out: list[float] = []
    for event in run:
        if event.op not in control:
            out.append(event.duration_ns)
            continue
        start, end = event.start_ns, event.start_ns + event.duration_ns
        inner = [
            (max(o.start_ns, start), min(o.start_ns + o.duration_ns, end))
            for o in run[
                bisect.bisect_left(starts, start) : bisect.bisect_left(starts, end)
            ]
            if o is not event
        ]
        out.append(max(0.0, event.duration_ns - _covered_ns(inner)))
    return out


def device_times(
    events: list[OpEvent], repeat: int, control: frozenset[str]
) -> dict[int, DeviceTimes]:
    """Per device: self time and executions of each op, and each run's span."""
    by_device: dict[int, list[OpEvent]] = {}
    for event in events:
        by_device.setdefault(event.device, []).append(event)
    out: dict[int, DeviceTimes] = {}
    for device, mine in sorted(by_device.items()):
        times = DeviceTimes()
        for run in _group_runs(mine, repeat):
            times.runs += 1
            for event, own in zip(run, _self_times(run, control), strict=True):
                times.op_ns[event.op] = times.op_ns.get(event.op, 0.0) + own
                times.op_count[event.op] = times.op_count.get(event.op, 0) + 1
            times.span_ns.append(
                max(e.start_ns + e.duration_ns for e in run)
                - min(e.start_ns for e in run)
            )
        out[device] = times
    return out
