"""The benchmark harness keeps its promises: alternating rounds, paired medians, verdicts.

Timing is never asserted. Running every benchmark once takes over a minute on a
shared 2-core machine, so that is a CI step, not a test:
``python benchmarks/run_all.py --smoke --json /tmp/bench-smoke.json``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _harness():
    spec = importlib.util.spec_from_file_location(
        "bench_harness", BENCHMARKS / "harness.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


harness = _harness()


def test_rounds_alternate_which_side_goes_first():
    order: list[str] = []
    harness.compare(
        "order",
        lambda: order.append("A"),
        lambda: order.append("B"),
        rounds=4,
        warmup=1,
    )
    assert order == ["A", "B", "A", "B", "B", "A", "A", "B", "B", "A"]


def test_each_call_gets_a_fresh_argument_and_only_its_own_context():
    made: list[int] = []
    seen: list[tuple[str, int, bool]] = []
    inside = [False]

    @contextlib.contextmanager
    def watcher():
        inside[0] = True
        yield
        inside[0] = False

    harness.compare(
        "fresh",
        lambda v: seen.append(("A", v, inside[0])),
        lambda v: seen.append(("B", v, inside[0])),
        make=lambda: made.append(len(made)) or made[-1],
        jaxscope_context=watcher,
        rounds=2,
        warmup=0,
    )
    assert seen == [("A", 0, True), ("B", 1, False), ("B", 2, False), ("A", 3, True)]


def test_verdict_is_on_the_median_of_paired_ratios():
    r = harness.paired(
        "m", [1.0, 3.0, 1.2], [1.0, 1.0, 1.0], budget=harness.Budget(1.25)
    )
    assert (r.ratio, r.ratio_min, r.ratio_max) == (1.2, 1.0, 3.0)
    assert r.verdict == "ok" and r.checked == 1.2
    over = harness.paired("m", [2.0, 2.0], [1.0, 1.0], budget=harness.Budget(1.5))
    assert over.verdict == "OVER"
    assert harness.exit_code([r, over], smoke=False) == harness.OVER_BUDGET
    assert harness.exit_code([r, over], smoke=True) == 0


def test_extra_and_value_budgets():
    extra = harness.paired(
        "import", [0.6, 0.7], [0.5, 0.5], budget=harness.Budget(0.15, on="extra")
    )
    assert extra.checked == pytest.approx(0.15) and extra.verdict == "ok"
    size = harness.value(
        "payload", [6e6], budget=harness.Budget(5e6, on="value"), unit="B"
    )
    assert size.verdict == "OVER"
    text = harness.table([extra, size])
    assert "+150.0 ms" in text and "<= 5.00 MB" in text and "OVER (6.00 MB)" in text


_TINY_BENCH = """
import sys
sys.path.insert(0, {benchmarks!r})
import harness


def bench(cfg):
    yield harness.paired("within", [1.0, 1.1, 1.2], [1.0, 1.0, 1.0],
                         budget=harness.Budget(1.5))
    yield harness.paired("over", [2.0, 2.0, 2.0], [1.0, 1.0, 1.0],
                         budget=harness.Budget({limit}))


harness.main(bench, "A tiny benchmark.")
"""


@pytest.mark.parametrize(
    ("limit", "flags", "code"),
    [(1.5, [], 1), (1.5, ["--smoke"], 0), (3.0, [], 0)],
)
def test_a_benchmark_exits_1_over_budget_and_writes_its_table_as_json(
    tmp_path, limit, flags, code
):
    import json
    import subprocess

    script = tmp_path / "bench_tiny.py"
    script.write_text(_TINY_BENCH.format(benchmarks=str(BENCHMARKS), limit=limit))
    out = tmp_path / "results.json"
    run = subprocess.run(
        [sys.executable, str(script), *flags, "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == code, run.stderr
    assert "ratio median [min-max]" in run.stdout
    assert ("| OVER" in run.stdout) == (limit < 2)
    results = json.loads(out.read_text())["results"]
    assert [(r["measure"], r["verdict"]) for r in results] == [
        ("within", "ok"),
        ("over", "OVER" if limit < 2 else "ok"),
    ]


def test_every_benchmark_runs_through_the_harness():
    # harness.main gives every script the same flags and exit status (1 over budget).
    scripts = sorted(BENCHMARKS.glob("bench_*.py"))
    assert len(scripts) >= 10
    for script in scripts:
        assert "harness.main(bench, __doc__)" in script.read_text(), script.name


def test_markdown_table_has_one_row_per_result_and_escapes_pipes():
    rows = [
        harness.paired("a | b", [1.2, 1.3], [1.0, 1.0], budget=harness.Budget(1.5)),
        harness.value("size", [6e6], budget=harness.Budget(5e6, on="value"), unit="B"),
    ]
    lines = harness.markdown(rows).splitlines()
    assert len(lines) == 4 and all(line.count("|") == 7 for line in lines)
    assert lines[2].startswith("| a / b | 1.25 s | 1.00 s | 1.250 [1.200-1.300] n=2")
    assert lines[3].endswith("| <= 5.00 MB | OVER (6.00 MB) |")
