"""The harness every benchmark uses: interleaved A/B rounds, paired ratios, verdicts.

A measure compares jaxscope's side (A) with plain JAX/IPython doing the same work (B)
in the same process. After warm-up rounds, each round times both sides back to back,
alternating which goes first (A B, B A, A B, ...), so drift and other processes' load
hit both alike; a garbage collection runs before every timed call, outside the clock,
so neither side pays for the other's garbage. Each round gives one ratio A/B; the
verdict is on the *median* of those paired ratios (min and max are reported beside
it), never on a best-of. Process CPU time (all threads) is recorded beside wall time.

A script exits 1 when a median is over its budget, 2 when it crashed, 0 otherwise; with
``--smoke`` (one round at the smallest size, no warm-up) over-budget is reported but
does not fail: budgets are for quiet machines.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal

OVER_BUDGET = 1
CRASHED = 2

_NO_CONTEXT: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext


@dataclasses.dataclass(frozen=True)
class Budget:
    """The most a measure may cost.

    Attributes:
        limit: the bound.
        on: ``"ratio"`` (median paired ratio A/B), ``"extra"`` (median paired
            difference A - B, in the measure's unit) or ``"value"`` (A alone).
    """

    limit: float
    on: Literal["ratio", "extra", "value"] = "ratio"

    def describe(self, unit: str) -> str:
        if self.on == "ratio":
            return f"<= {self.limit:g}x"
        sign = "+" if self.on == "extra" else "<= "
        return sign + _quantity(self.limit, unit)


@dataclasses.dataclass
class Result:
    """One measure's outcome (a row of the table, an object of the JSON).

    Attributes:
        measure: what was measured.
        jaxscope: median of jaxscope's side (seconds per call, or bytes).
        baseline: median of the baseline side (None for a value-only measure).
        ratio: median of the paired ratios jaxscope / baseline.
        ratio_min: smallest paired ratio.
        ratio_max: largest paired ratio.
        cpu_ratio: median of the paired ratios of process CPU time.
        budget: the budget in words ("" for none).
        checked: the number compared against the budget.
        verdict: ``"ok"``, ``"OVER"`` or ``"info"`` (no budget).
        rounds: timed rounds.
        unit: ``"s"`` or ``"B"``.
        note: anything else worth a line (sizes, ranges, caveats).
    """

    measure: str
    jaxscope: float | None
    baseline: float | None
    ratio: float | None = None
    ratio_min: float | None = None
    ratio_max: float | None = None
    cpu_ratio: float | None = None
    budget: str = ""
    checked: float | None = None
    verdict: str = "info"
    rounds: int = 0
    unit: str = "s"
    note: str = ""


@dataclasses.dataclass
class Config:
    """What the command line asked for.

    Attributes:
        smoke: one round at the smallest size, no warm-up; over budget does not fail.
        rounds: overrides every measure's number of rounds (None: each its own).
        json_path: where to write the results as JSON (None: nowhere).
    """

    smoke: bool = False
    rounds: int | None = None
    json_path: Path | None = None

    def n(self, rounds: int) -> int:
        """Rounds to time for a measure that asks for ``rounds``."""
        if self.rounds is not None:
            return self.rounds
        return 1 if self.smoke else rounds

    def warm(self, warmup: int) -> int:
        """Warm-up rounds for a measure that asks for ``warmup``."""
        return 0 if self.smoke else warmup

    def sizes(self, sizes: Sequence[Any]) -> list[Any]:
        """The sizes to run: all of them, or the smallest in smoke mode."""
        return list(sizes[:1] if self.smoke else sizes)


@dataclasses.dataclass(frozen=True)
class _Sample:
    wall: float
    cpu: float


def children_cpu_time() -> float:
    """CPU seconds of finished child processes (for sides that run subprocesses)."""
    t = os.times()
    return t.children_user + t.children_system


def _timed(
    side: Callable[..., Any],
    make: Callable[[], Any] | None,
    context: Callable[[], AbstractContextManager[Any]],
    cpu_clock: Callable[[], float],
) -> _Sample:
    args = () if make is None else (make(),)
    gc.collect()
    with context():
        wall, cpu = time.perf_counter(), cpu_clock()
        side(*args)
        return _Sample(time.perf_counter() - wall, cpu_clock() - cpu)


def compare(
    measure: str,
    jaxscope: Callable[..., Any],
    baseline: Callable[..., Any],
    *,
    rounds: int,
    warmup: int = 1,
    make: Callable[[], Any] | None = None,
    jaxscope_context: Callable[[], AbstractContextManager[Any]] = _NO_CONTEXT,
    baseline_context: Callable[[], AbstractContextManager[Any]] = _NO_CONTEXT,
    budget: Budget | None = None,
    per: int = 1,
    cpu_clock: Callable[[], float] = time.process_time,
    note: str = "",
) -> Result:
    """Time ``jaxscope`` against ``baseline`` in interleaved rounds of alternating order.

    Args:
        measure: the row's name.
        jaxscope: jaxscope's side; called with ``make()`` when ``make`` is given.
        baseline: the same work without jaxscope.
        rounds: timed rounds (one call of each side per round).
        warmup: untimed rounds first (imports, JAX's first-use compiles, caches).
        make: builds each side's argument afresh, outside the clock (fresh
            functions: JAX caches traces per function object).
        jaxscope_context: entered around jaxscope's side, outside the clock.
        baseline_context: entered around the baseline's side, outside the clock.
        budget: the bound on the median (None: reported only).
        per: each side does this many calls; times are reported per call.
        cpu_clock: the CPU clock (``children_cpu_time`` for sides that run
            subprocesses).
        note: extra words for the row.

    Returns:
        The ``Result``; its verdict is on the median of the paired ratios.
    """
    for i in range(warmup):
        pair = [(jaxscope, jaxscope_context), (baseline, baseline_context)]
        for side, context in pair if i % 2 == 0 else pair[::-1]:
            _timed(side, make, context, cpu_clock)
    ours: list[_Sample] = []
    theirs: list[_Sample] = []
    for i in range(rounds):
        if i % 2 == 0:
            ours.append(_timed(jaxscope, make, jaxscope_context, cpu_clock))
            theirs.append(_timed(baseline, make, baseline_context, cpu_clock))
        else:
            theirs.append(_timed(baseline, make, baseline_context, cpu_clock))
            ours.append(_timed(jaxscope, make, jaxscope_context, cpu_clock))
    return paired(
        measure,
        [s.wall / per for s in ours],
        [s.wall / per for s in theirs],
        cpu=([s.cpu for s in ours], [s.cpu for s in theirs]),
        budget=budget,
        note=note,
    )


def paired(
    measure: str,
    ours: Sequence[float],
    theirs: Sequence[float],
    *,
    cpu: tuple[Sequence[float], Sequence[float]] | None = None,
    budget: Budget | None = None,
    unit: str = "s",
    note: str = "",
) -> Result:
    """A ``Result`` from samples taken in pairs (``ours[i]`` beside ``theirs[i]``)."""
    ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
    ratio = statistics.median(ratios)
    result = Result(
        measure,
        statistics.median(ours),
        statistics.median(theirs),
        ratio=ratio,
        ratio_min=min(ratios),
        ratio_max=max(ratios),
        rounds=len(ratios),
        unit=unit,
        note=note,
    )
    if cpu is not None and all(b > 0 for b in cpu[1]):
        result.cpu_ratio = statistics.median(a / b for a, b in zip(*cpu, strict=True))
    if budget is not None:
        checked = {
            "ratio": ratio,
            "extra": statistics.median(
                a - b for a, b in zip(ours, theirs, strict=True)
            ),
            "value": statistics.median(ours),
        }[budget.on]
        _judge(result, budget, checked)
    return result


def value(
    measure: str,
    samples: Sequence[float],
    *,
    budget: Budget | None = None,
    unit: str = "s",
    note: str = "",
) -> Result:
    """A ``Result`` for jaxscope alone (an absolute budget: seconds, bytes)."""
    med = statistics.median(samples)
    low, high = _quantity(min(samples), unit), _quantity(max(samples), unit)
    words = f"n={len(samples)}, min {low}, max {high}" if len(samples) > 1 else ""
    result = Result(
        measure,
        med,
        None,
        rounds=len(samples),
        unit=unit,
        note="; ".join(w for w in (note, words) if w),
    )
    if budget is not None:
        _judge(result, budget, med)
    return result


def _judge(result: Result, budget: Budget, checked: float) -> None:
    result.budget = budget.describe(result.unit)
    result.checked = checked
    result.verdict = "ok" if checked <= budget.limit else "OVER"


def _quantity(x: float, unit: str) -> str:
    if unit == "B":
        return f"{x / 1e6:.2f} MB" if x >= 1e5 else f"{x / 1e3:.1f} kB"
    if abs(x) >= 1:
        return f"{x:.2f} s"
    if abs(x) >= 1e-3:
        return f"{x * 1e3:.1f} ms"
    return f"{x * 1e6:.2f} us"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _row(r: Result) -> list[str]:
    def q(x: float | None) -> str:
        return "-" if x is None else _quantity(x, r.unit)

    ratio = "-"
    if r.ratio is not None:
        low, high = _ratio(r.ratio_min), _ratio(r.ratio_max)
        ratio = f"{_ratio(r.ratio)} [{low}-{high}] n={r.rounds}"
    verdict = r.verdict
    if r.checked is not None and r.budget and not r.budget.endswith("x"):
        sign = "+" if r.budget.startswith("+") and r.checked >= 0 else ""
        verdict += f" ({sign}{_quantity(r.checked, r.unit)})"
    cpu = "-" if r.cpu_ratio is None else _ratio(r.cpu_ratio)
    return [r.measure, q(r.jaxscope), q(r.baseline), ratio, cpu, r.budget, verdict]


HEADER = ["measure", "jaxscope", "baseline", "ratio median [min-max]", "cpu ratio"]
HEADER += ["budget", "verdict"]


def table(results: Iterable[Result]) -> str:
    """The results as one aligned plain-text table, notes underneath."""
    results = list(results)
    rows = [HEADER, *(_row(r) for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = [
        " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    notes = [f"  {r.measure}: {r.note}" for r in results if r.note]
    return "\n".join(lines + (["notes:", *notes] if notes else []))


def markdown(results: Iterable[Result]) -> str:
    """The results as a compact markdown table (for the README), without notes."""
    lines = [
        "| measure | jaxscope | baseline | ratio median [min-max] | budget | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        measure, ours, theirs, ratio, _cpu, budget, verdict = _row(r)
        cells = [measure.replace("|", "/"), ours, theirs, ratio, budget, verdict]
        lines.append("| " + " | ".join(c or "-" for c in cells) + " |")
    return "\n".join(lines)


def environment() -> dict[str, Any]:
    """The machine and versions, and its load (figures from a busy machine mislead)."""
    versions = {}
    for name in ("jax", "jaxlib", "flax", "equinox", "optax"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "versions": versions,
    }


def exit_code(results: Sequence[Result], smoke: bool) -> int:
    """1 when a median is over its budget (never in smoke mode), else 0."""
    over = any(r.verdict == "OVER" for r in results)
    return OVER_BUDGET if over and not smoke else 0


def parser(description: str) -> argparse.ArgumentParser:
    """The flags every benchmark (and ``run_all.py``) takes."""
    ap = argparse.ArgumentParser(
        description=description,
        epilog="Exit status: 1 when a median is over its budget (not with --smoke), "
        "2 when the benchmark crashed.",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="one round at the smallest size, no warm-up: proves it runs; "
        "over budget is reported but does not fail",
    )
    ap.add_argument("--rounds", type=int, help="timed rounds for every measure")
    ap.add_argument("--json", type=Path, help="write the results to this JSON file")
    return ap


def write_json(
    path: Path, results: Sequence[Result], smoke: bool, **extra: Any
) -> None:
    data = {
        "smoke": smoke,
        "environment": environment(),
        **extra,
        "results": [dataclasses.asdict(r) for r in results],
    }
    path.write_text(json.dumps(data, indent=2) + "\n", "utf-8")


def results_of(path: Path) -> list[Result]:
    """The results a ``--json`` file holds."""
    data = json.loads(path.read_text("utf-8"))
    return [Result(**r) for r in data.get("results", [])]


def main(bench: Callable[[Config], Iterable[Result]], doc: str | None) -> None:
    """Run ``bench`` from the command line: print rows as they come, then the table.

    Exits 1 over budget (not in smoke mode), 2 on a crash (the results so far are
    still printed and written).
    """
    args = parser((doc or "").strip().split("\n")[0]).parse_args()
    cfg = Config(smoke=args.smoke, rounds=args.rounds, json_path=args.json)
    results: list[Result] = []
    error = None
    try:
        for result in bench(cfg):
            results.append(result)
            print("  " + " | ".join(_row(result)), flush=True)
    except Exception:
        error = traceback.format_exc()
        print(error, file=sys.stderr, flush=True)
    print()
    print(table(results))
    if args.json is not None:
        write_json(args.json, results, cfg.smoke, error=error)
    sys.exit(CRASHED if error else exit_code(results, cfg.smoke))


if __name__ == "__main__":  # python benchmarks/harness.py results.json: as markdown
    print(markdown(results_of(Path(sys.argv[1]))))
