"""Every ```python block under "## Quick start" in README.md runs, in order, in a fresh
interpreter (the snippets build on each other, as a reader runs them)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def quick_start_blocks(text: str) -> list[str]:
    match = re.search(r"^## Quick start\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, 'README.md has no "## Quick start" section'
    return re.findall(r"^```python\n(.*?)^```", match.group(1), re.M | re.S)


def test_quick_start_has_python_snippets():
    blocks = quick_start_blocks(README.read_text())
    assert blocks, "the Quick start section has no ```python block"
    assert all(b.strip() for b in blocks)


def test_quick_start_snippets_run(tmp_path):
    blocks = quick_start_blocks(README.read_text())
    script = tmp_path / "quick_start.py"
    script.write_text("\n\n".join(blocks))
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, (
        f"a README Quick start snippet failed:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    )


def test_block_extraction_stops_at_the_next_section():
    text = (
        "# x\n## Quick start\n```python\na = 1\n```\ntext\n```bash\nls\n```\n"
        "```python\nb = a\n```\n## Other\n```python\nnot_this\n```\n"
    )
    assert quick_start_blocks(text) == ["a = 1\n", "b = a\n"]
