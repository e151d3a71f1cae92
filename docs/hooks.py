"""MkDocs hooks: every page's code blocks run, and their real output goes under them.

``on_files`` runs all pages' snippets once, in a fresh interpreter with 8 fake CPU
devices (docs/gen_output.py), and renders the screenshot-flagged HTML outputs to PNG
in Chromium; ``on_page_markdown`` writes each block's output under it and titles each
cell with its ``In [N]``, the name its lines carry in jaxscope's output.
"""

from __future__ import annotations

import hashlib
import html
import importlib.util
import json
import os
import posixpath
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from gen_output import RUNNABLE, parse_blocks

_results: dict[str, list[dict[str, Any]]] = {}
_images: dict[str, str] = {}  # screenshot name -> its generated file's src_uri
# MkDocs keeps this module across `mkdocs serve` rebuilds, so these caches live on.
_serving = False
_page_cache: dict[str, tuple[str, list[dict[str, Any]]]] = {}  # page -> (key, results)
_shot_cache: dict[str, bytes] = {}  # digest of an HTML fragment -> its PNG
_CHROMIUM = "/usr/bin/chromium"
SHOT_WIDTH = 960


def on_startup(command: str, dirty: bool) -> None:
    """Under ``mkdocs serve``, a rebuild reruns only the pages that changed."""
    global _serving
    _serving = command == "serve"


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    docs_dir = config["docs_dir"]
    pages = [f.src_uri for f in files.documentation_pages()]
    code = _code_fingerprint()
    keys = {p: _digest((Path(docs_dir) / p).read_text() + code) for p in pages}
    stale = [
        p for p in pages if not _serving or _page_cache.get(p, ("",))[0] != keys[p]
    ]
    fresh = _run_snippets(docs_dir, stale)
    for page in stale:
        _page_cache[page] = (keys[page], fresh.get(page, []))
    _results.clear()
    _results.update({page: _page_cache[page][1] for page in pages})
    shots = {
        block["screenshot"]: result["html"]
        for page in pages
        for block, result in _flagged(docs_dir, page)
    }
    started = time.perf_counter()
    new_shots = {n: h for n, h in shots.items() if _digest(h) not in _shot_cache}
    for name, png in screenshots(new_shots).items():
        _shot_cache[_digest(new_shots[name])] = png
    for name, fragment in shots.items():
        src_uri = f"img/generated/{name}.png"
        png = _shot_cache[_digest(fragment)]
        files.append(File.generated(config, src_uri, content=png))
        _images[name] = src_uri
    if new_shots:
        print(
            f"docs: {len(new_shots)} screenshots in "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    return files


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _code_fingerprint() -> str:
    """Changes whenever jaxscope's code or this runner changes (by mtime and size)."""
    spec = importlib.util.find_spec("jaxscope")
    assert spec and spec.origin, "jaxscope is not importable"
    files = sorted(Path(spec.origin).parent.rglob("*.py"))
    files.append(Path(__file__).with_name("gen_output.py"))
    return "".join(f"{f}:{f.stat().st_mtime_ns}:{f.stat().st_size};" for f in files)


def _flagged(docs_dir: str, page: str) -> list[tuple[dict[str, str], dict[str, Any]]]:
    blocks = parse_blocks((Path(docs_dir) / page).read_text())
    return [
        (b.flags, r)
        for b, r in zip(blocks, _results.get(page, []), strict=True)
        if "screenshot" in b.flags
    ]


def _run_snippets(docs_dir: str, pages: list[str]) -> dict[str, Any]:
    runnable = [
        p
        for p in pages
        if any(b.runs for b in parse_blocks((Path(docs_dir) / p).read_text()))
    ]
    if not runnable:
        return {}
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
    env["JAX_PLATFORMS"] = "cpu"
    env.pop("COLUMNS", None)
    # Two interpreters share the pages (more would fight over CI's two cores). Their
    # stdout is not a terminal, so every page is drawn at the same width.
    workers = max(1, min(2, os.cpu_count() or 1, len(runnable)))
    with tempfile.TemporaryDirectory(prefix="jaxscope-docs-") as tmp:
        started = time.perf_counter()
        runs = []
        for n in range(workers):
            out = Path(tmp) / f"results{n}.json"
            command = [sys.executable, str(Path(__file__).with_name("gen_output.py"))]
            command += [docs_dir, str(out), *runnable[n::workers]]
            process = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
            )
            runs.append((process, out))
        if any(process.wait() != 0 for process, _ in runs):
            for process, _ in runs:
                process.kill()
                process.wait()
            from mkdocs.exceptions import PluginError

            raise PluginError("docs: running the guide's snippets failed (see above)")
        print(
            f"docs: ran the snippets of {len(runnable)} pages in "
            f"{time.perf_counter() - started:.1f} s ({workers} processes)",
            file=sys.stderr,
        )
        results: dict[str, Any] = {}
        for _, out in runs:
            results.update(json.loads(out.read_text()))
        return results


def screenshots(fragments: dict[str, str]) -> dict[str, bytes]:
    """PNG bytes of each HTML fragment (name -> HTML), rendered in Chromium."""
    if not fragments:
        return {}
    from playwright.sync_api import sync_playwright

    shots: dict[str, bytes] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_CHROMIUM)
        page = browser.new_page(
            viewport={"width": SHOT_WIDTH, "height": 600}, device_scale_factor=1
        )
        for name, fragment in fragments.items():
            page.set_content(
                "<!doctype html><html><head><meta charset='utf-8'>"
                "<style>body{margin:0;background:#fff;font-family:sans-serif}"
                "#shot{display:inline-block;padding:12px;min-width:400px}</style>"
                f"</head><body><div id='shot'>{fragment}</div></body></html>"
            )
            page.wait_for_load_state("networkidle")
            shots[name] = page.locator("#shot").screenshot()
        browser.close()
    return shots


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    results = _results.get(page.file.src_uri)
    blocks = parse_blocks(markdown)
    pieces: list[str] = []
    at = 0
    for n, block in enumerate(blocks):
        pieces.append(markdown[at : block.start])
        at = block.end
        result = results[n] if results else None
        if block.lang == "console" and result and result["output"]:
            # The transcript shows each command with its output.
            pieces.append(_block("console", result["output"]))
            continue
        pieces.append(_fence(block, result))
        if result and result["output"]:
            pieces.append(_output(result["output"]))
        if "screenshot" in block.flags:
            src = _images[block.flags["screenshot"]]
            link = posixpath.relpath(src, posixpath.dirname(page.file.src_uri))
            pieces.append(f"\n\n![the HTML view in a notebook]({link})")
    pieces.append(markdown[at:])
    return "".join(pieces)


def _fence(block: Any, result: dict[str, Any] | None) -> str:
    lang = {"ipython": "ipython3", "console": "console"}.get(block.lang, block.lang)
    title = ""
    if "file" in block.flags:
        title = block.flags["file"]
    elif result and result["cell"] is not None:
        title = f"In [{result['cell']}]"
    info = f'{lang} title="{html.escape(title)}"' if title else lang
    if block.lang in RUNNABLE or block.flags:
        return f"```{info}\n{block.code}```"
    return (
        f"```{block.lang}\n{block.code}```" if block.lang else f"```\n{block.code}```"
    )


def _output(text: str) -> str:
    return "\n\n" + _block('text title="Output"', text)


def _block(info: str, text: str) -> str:
    # A fence longer than any backtick run in the text, so the text cannot close it.
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"
