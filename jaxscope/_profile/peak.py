"""Live bytes over a compiled module's schedule, and what is live at the peak.

See ``buffers.py`` for the model: argument and output allocations count for the
whole run, temporaries while live, one buffer per ``(allocation, offset, size)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxscope._profile.buffers import Allocation, BufferDump, Value

FIXED_KINDS = ("parameter", "output")


@dataclass(frozen=True, slots=True)
class Held:
    """One buffer at the peak: ``value`` (None: an allocation XLA named no value
    in) of ``allocation``. ``bytes`` is the value's own size; ``counted`` what it
    adds to the peak. They differ only in an argument or output allocation, which
    XLA holds for the whole run: while the argument is dead or the output not yet
    written (``live`` False) XLA lends its memory to temporaries, which count their
    own bytes, and the owner counts what is left of the allocation."""

    allocation: Allocation
    value: Value | None
    bytes: int
    counted: int
    live: bool = True


@dataclass(frozen=True, slots=True)
class Peak:
    """``live[t]``: bytes live at schedule position ``t``; the peak is at ``position``.

    ``fixed`` is the argument and output allocations (live throughout), ``temp``
    the temporaries live at the peak. ``at_peak`` holds every buffer there, each
    counted once: their ``counted`` bytes add up to ``bytes``. ``estimated`` is
    True when the dump had no live ranges and every temporary allocation was
    counted whole.
    """

    position: int
    fixed: int
    temp: int
    live: tuple[int, ...]
    at_peak: tuple[Held, ...]
    estimated: bool = False

    @property
    def bytes(self) -> int:
        return self.fixed + self.temp


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _temp_slots(
    dump: BufferDump,
) -> dict[tuple[int, int, int], list[tuple[Value, tuple[int, int]]]]:
    """Temporary values with a live range, keyed by ``(allocation, offset, size)``."""
    slots: dict[tuple[int, int, int], list[tuple[Value, tuple[int, int]]]] = {}
    for allocation in dump.allocations:
        if allocation.kind != "temp":
            continue
        for value in allocation.values:
            live = dump.ranges.get(value.name)
            if live is not None and value.size > 0:
                key = (allocation.index, value.offset, value.size)
                slots.setdefault(key, []).append((value, live))
    return slots


def _occupant(
    values: list[tuple[Value, tuple[int, int]]], position: int
) -> Value | None:
    """The value defined most recently of those live at ``position``."""
    live = [(r[0], v) for v, r in values if r[0] <= position <= r[1]]
    return max(live, key=lambda item: item[0])[1] if live else None


def owner(allocation: Allocation, dump: BufferDump) -> Value | None:
    """The value an argument or output allocation is for: the argument (defined
    first), or the output (live to the end of the program; defined last)."""
    ranged = [
        (v, dump.ranges[v.name]) for v in allocation.values if v.name in dump.ranges
    ]
    if not ranged:
        return allocation.values[0] if allocation.values else None
    if allocation.kind == "parameter":
        return min(ranged, key=lambda item: item[1][0])[0]
    return max(ranged, key=lambda item: (item[1][1], item[1][0]))[0]


def _fixed_held(allocation: Allocation, dump: BufferDump, position: int) -> list[Held]:
    """The buffers of an argument or output allocation at ``position``: the values
    live there at their own size (one per place: a bitcast shares its operand's),
    and the allocation's owner, which counts what they leave of it."""
    mine = owner(allocation, dump)
    places: dict[tuple[int, int], list[tuple[Value, tuple[int, int]]]] = {}
    for value in allocation.values:
        live = dump.ranges.get(value.name)
        if live is not None and value.size > 0:
            places.setdefault((value.offset, value.size), []).append((value, live))
    occupants = [v for values in places.values() if (v := _occupant(values, position))]
    held = [Held(allocation, v, v.size, v.size) for v in occupants]
    left = max(0, allocation.size - sum(v.size for v in occupants))
    if mine is None:  # an allocation XLA placed no value in
        return [Held(allocation, None, allocation.size, allocation.size)]
    for i, h in enumerate(held):
        if h.value is not None and h.value.name == mine.name:
            held[i] = Held(allocation, mine, h.bytes, h.counted + left)
            return held
    return [*held, Held(allocation, mine, mine.size, left, live=False)]


def find_peak(dump: BufferDump) -> Peak:
    """The position of the schedule where the most bytes are live, and those buffers."""
    fixed_allocations = [a for a in dump.allocations if a.kind in FIXED_KINDS]
    fixed = sum(a.size for a in fixed_allocations)
    slots = _temp_slots(dump)
    temps = [a for a in dump.allocations if a.kind == "temp"]
    n = max(
        [len(dump.schedule)]
        + [end + 1 for ranges in slots.values() for _, (_, end) in ranges]
    )
    if temps and not slots:
        whole = sum(a.size for a in temps)
        at_peak = [h for a in fixed_allocations for h in _fixed_held(a, dump, 0)]
        at_peak += [Held(a, v, v.size, v.size) for a in temps for v in a.values]
        return Peak(0, fixed, whole, (fixed + whole,) * max(1, n), tuple(at_peak), True)
    diff = [0] * (n + 1)
    for (_, _, size), values in slots.items():
        for start, end in _merged([r for _, r in values]):
            diff[max(0, start)] += size
            diff[min(n, end + 1)] -= size
    live: list[int] = []
    running = 0
    for t in range(max(1, n)):
        running += diff[t]
        live.append(fixed + running)
    position = max(range(len(live)), key=lambda t: (live[t], -t))
    at_peak = [h for a in fixed_allocations for h in _fixed_held(a, dump, position)]
    by_index = {a.index: a for a in dump.allocations}
    for (index, _, size), values in slots.items():
        occupant = _occupant(values, position)
        if occupant is not None:
            at_peak.append(Held(by_index[index], occupant, size, size))
    return Peak(
        position=position,
        fixed=fixed,
        temp=live[position] - fixed,
        live=tuple(live),
        at_peak=tuple(at_peak),
    )
