"""The committed viewer bundle matches its sources (checked without Node)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "jaxscope" / "_static"
EXTENSION = ROOT / "extension"
STALE = "bundle is stale: run `npm --prefix extension run build`"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _inputs(name: str) -> dict[str, str]:
    """What build.mjs hashes: src/<name>/**, src/shared/** and the lockfile."""
    files = sorted(p for p in (EXTENSION / "src" / name).rglob("*") if p.is_file())
    shared = EXTENSION / "src" / "shared"
    if shared.exists():
        files += sorted(p for p in shared.rglob("*") if p.is_file())
    files.append(EXTENSION / "package-lock.json")
    return {p.relative_to(EXTENSION).as_posix(): _sha(p) for p in files}


def _record() -> dict:
    return json.loads((STATIC / "BUILD.json").read_text("utf-8"))


def test_every_bundle_in_build_json_is_current():
    """Every widget built by extension/build.mjs (listed in its ENTRIES)."""
    entries = _record()["entries"]
    assert "graph" in entries
    for name, entry in entries.items():
        assert entry["sources"] == _inputs(name), f"{name}: {STALE}"
        assert entry["bundle_sha256"] == _sha(STATIC / entry["bundle"]), (
            f"{name}: {STALE}"
        )


def test_build_records_the_esbuild_version_of_the_lockfile():
    lock = json.loads((EXTENSION / "package-lock.json").read_text("utf-8"))
    locked = lock["packages"]["node_modules/esbuild"]["version"]
    assert _record()["esbuild"] == locked, STALE


def test_bundle_is_self_contained_esm():
    js = (STATIC / "graph.js").read_text("utf-8")
    assert re.search(r"export\s*\{", js), "graph.js must be an ES module"
    assert not re.search(r"""\bimport\s*(\(|["'{*\w])""", js), (
        "graph.js must bundle its imports"
    )
    assert "https://" not in js and "cdn" not in js.lower()


@pytest.mark.slow
def test_wheel_ships_the_static_bundle(tmp_path):
    import subprocess
    import sys
    import zipfile

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next(tmp_path.glob("jaxscope-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for f in (
        "jaxscope/_static/graph.js",
        "jaxscope/_static/graph.css",
        "jaxscope/_static/jaxpr.js",
        "jaxscope/_static/hlo.js",
        "jaxscope/_static/BUILD.json",
    ):
        assert f in names


@pytest.mark.parametrize("name", ["jaxpr", "hlo"])
def test_inline_scripts_are_classic_scripts_that_can_sit_in_a_script_tag(name):
    """The jaxpr and HLO displays inline these (jaxscope/_bundles.py)."""
    js = (STATIC / f"{name}.js").read_text("utf-8")
    assert js.startswith(f"var jaxscope_{name}=("), "an IIFE naming its exports"
    assert not re.search(r"\bexport\s*\{|\bimport\s*[({\"']", js)
    assert "</script" not in js.lower() and "<!--" not in js
    assert "https://" not in js
