"""Run every benchmark, each in a fresh interpreter; print one table and write JSON.

    python benchmarks/run_all.py [--smoke] [--rounds N] [--json PATH] [NAME ...]

NAMEs pick benchmarks (``staging`` for ``bench_staging.py``); default: all. Exits 1
when a median is over its budget (never with ``--smoke``), 2 when a benchmark crashed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

HERE = Path(__file__).resolve().parent


def run_one(script: Path, flags: list[str]) -> tuple[list[harness.Result], dict]:
    """Run one ``bench_*.py``; its results and what happened (rc, seconds, error)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "results.json"
        start = time.perf_counter()
        rc = subprocess.run(
            [sys.executable, str(script), *flags, "--json", str(out)], cwd=HERE.parent
        ).returncode
        info: dict = {"rc": rc, "seconds": round(time.perf_counter() - start, 1)}
        data = json.loads(out.read_text("utf-8")) if out.exists() else {}
    results = [harness.Result(**r) for r in data.get("results", [])]
    error = data.get("error") if data else f"exited {rc} without results"
    if rc not in (0, harness.OVER_BUDGET) and not error:
        error = f"exited {rc}"
    if error:
        info["error"] = error
        results.append(
            harness.Result(
                f"{script.stem} CRASHED", None, None, verdict="CRASHED", note=error
            )
        )
    return results, info


def main() -> None:
    ap = harness.parser((__doc__ or "").strip().split("\n")[0])
    ap.set_defaults(json=HERE / "results.json")
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    args = ap.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.names:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in args.names]
        missing = set(args.names) - {s.stem.removeprefix("bench_") for s in scripts}
        if missing:
            ap.error(f"no benchmark named {', '.join(sorted(missing))}")
    flags = ["--smoke"] if args.smoke else []
    flags += ["--rounds", str(args.rounds)] if args.rounds else []
    load_start = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    results: list[harness.Result] = []
    runs: dict[str, dict] = {}
    for script in scripts:
        print(f"=== {script.name} {' '.join(flags)}", flush=True)
        got, runs[script.stem] = run_one(script, flags)
        results += got
    print()
    print(harness.table(results))
    crashed = [name for name, info in runs.items() if "error" in info]
    harness.write_json(
        args.json, results, args.smoke, loadavg_start=load_start, benchmarks=runs
    )
    print(f"\nwritten to {args.json}")
    if crashed:
        print(f"CRASHED: {', '.join(crashed)}")
        sys.exit(harness.CRASHED)
    sys.exit(harness.exit_code(results, args.smoke))


if __name__ == "__main__":
    main()
