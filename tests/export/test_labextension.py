"""The committed JupyterLab extension matches its sources and is packaged where
JupyterLab finds it (checked without Node)."""

from __future__ import annotations

import hashlib
import json
import tomllib

from .exporting import ROOT

EXTENSION = ROOT / "extension"
BUILT = ROOT / "jaxscope" / "labextension"
STALE = "labextension is stale: run `npm --prefix extension/labextension run build`"


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record() -> dict:
    return json.loads((BUILT / "BUILD.json").read_text("utf-8"))


def test_labextension_is_built_from_the_current_sources():
    """What record.mjs hashes: its src/**, package files, webpack config, the graph
    viewer it bundles, and both lockfiles."""
    lab = EXTENSION / "labextension"
    inputs = [
        *sorted(p for p in (lab / "src").rglob("*") if p.is_file()),
        lab / "package.json",
        lab / "package-lock.json",
        lab / "webpack.config.js",
        *sorted(p for p in (EXTENSION / "src" / "graph").rglob("*") if p.is_file()),
        EXTENSION / "package-lock.json",
    ]
    sources = {p.relative_to(EXTENSION).as_posix(): _sha(p) for p in inputs}
    assert _record()["sources"] == sources, STALE


def test_committed_build_is_what_was_recorded():
    files = {
        p.relative_to(BUILT).as_posix(): _sha(p)
        for p in BUILT.rglob("*")
        if p.is_file() and p.name != "BUILD.json"
    }
    assert _record()["built"] == files, STALE


def test_built_extension_names_its_entry_and_both_plugins():
    package = json.loads((BUILT / "package.json").read_text("utf-8"))
    assert package["name"] == "jaxscope"
    build = package["jupyterlab"]["_build"]
    assert (BUILT / build["load"]).is_file()
    assert build["extension"] and build["mimeExtension"]


def test_wheel_installs_it_where_jupyterlab_looks():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    shared = config["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert shared["jaxscope/labextension"] == "share/jupyter/labextensions/jaxscope"
    install = shared["extension/labextension/install.json"]
    assert install == "share/jupyter/labextensions/jaxscope/install.json"
    assert (ROOT / "extension/labextension/install.json").is_file()
