"""``load``: a module written to a real file (real line numbers), imported fresh."""

from __future__ import annotations

import importlib.util
import textwrap
import uuid

import pytest


@pytest.fixture
def load(tmp_path):
    """Write ``source`` to a module file and import it (a fresh module each call)."""

    def _load(source: str):
        name = f"purity_case_{uuid.uuid4().hex[:8]}"
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return _load
