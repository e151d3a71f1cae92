"""Run the user guide's code blocks and collect their real output.

Every ```python and ```ipython block of a page runs, in order, as one cell of a real
IPython shell (one namespace per page, so later blocks use earlier names); a
```console block runs its ``$ command`` lines in a scratch folder where each
```python block flagged ``file=NAME`` was written instead of run. The MkDocs hook
(docs/hooks.py) writes the output under each block and turns flagged HTML outputs
into screenshots; tests/test_docs.py runs the same blocks in the test suite.

Flags follow the language in the fence's info string, e.g. ```python raises lines=20:

    file=NAME        write the block to NAME in the scratch folder instead of running it
    raises           the block must raise; its (source-mapped) error display is the output
    no-output        run it but show no output under it
    lines=N          show the first N lines of the output (the rest is counted, not shown)
    screenshot=NAME  also screenshot the block's last HTML output as img/generated/NAME.png
    stdin=NAME       the block reads the file NAME (a ```text file=NAME block) as its stdin
    skip             neither run nor written (an install command)

Run as a script it executes the given pages and writes the results as JSON (what the
MkDocs hook does, in a fresh interpreter with 8 fake CPU devices).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

RUNNABLE = {"python", "ipython", "console"}
FLAGS = {"file", "raises", "no-output", "lines", "screenshot", "skip", "stdin"}
_FENCE = re.compile(
    r"^(?P<fence>```)(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S
)


class SnippetError(Exception):
    """A guide snippet failed (or did not raise when flagged ``raises``)."""


@dataclass
class Block:
    start: int  # offsets of the whole fenced block in the page
    end: int
    lang: str
    flags: dict[str, str]
    code: str

    @property
    def runs(self) -> bool:
        return (
            self.lang in RUNNABLE
            and "skip" not in self.flags
            and "file" not in self.flags
        )


@dataclass
class Result:
    output: str = ""
    cell: int | None = None  # the shell's execution count: the "In [N]" of its lines
    html: str | None = None  # the last HTML output, for screenshot-flagged blocks
    extra: dict[str, Any] = field(default_factory=dict)


def parse_blocks(markdown: str) -> list[Block]:
    """The fenced code blocks of a page, with their flags parsed."""
    blocks: list[Block] = []
    for match in _FENCE.finditer(markdown):
        words = match["info"].split()
        lang = words[0] if words else ""
        flags: dict[str, str] = {}
        if lang in RUNNABLE or lang in {"bash", "text"}:
            for word in words[1:]:
                key, _, value = word.partition("=")
                if key not in FLAGS:
                    raise SnippetError(
                        f"unknown snippet flag {key!r} in ```{match['info']}; "
                        f"use one of {sorted(FLAGS)}"
                    )
                flags[key] = value
        blocks.append(Block(match.start(), match.end(), lang, flags, match["body"]))
    return blocks


class _Capture:
    """stdout, stderr, ``display()`` and the cell's ``Out`` value as one text stream."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.text = io.StringIO()
        self.html: str | None = None

    def add(self, data: dict[str, Any]) -> None:
        if "text/html" in data:
            self.html = data["text/html"]
        text = data.get("text/plain", "")
        if text:
            self.text.write(text.rstrip("\n") + "\n")

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher

        capture = self

        class Publisher(DisplayPublisher):
            def publish(self, data: Any, *args: Any, **kwargs: Any) -> None:
                capture.add(data)

        class Hook(DisplayHook):
            def __call__(self, result: Any = None) -> None:
                if result is not None:
                    capture.add(shell.display_formatter.format(result)[0])

        shell = self.shell
        saved = shell.display_pub, shell.display_trap.hook
        shell.display_pub = Publisher(shell=shell)
        shell.display_trap.hook = Hook(shell=shell)
        try:
            with (
                contextlib.redirect_stdout(self.text),
                contextlib.redirect_stderr(self.text),
            ):
                yield
        finally:
            shell.display_pub, shell.display_trap.hook = saved


def _shown(text: str, flags: dict[str, str]) -> str:
    text = text.rstrip()
    if "lines" in flags:
        lines = text.splitlines()
        keep = int(flags["lines"])
        if len(lines) > keep:
            more = len(lines) - keep
            text = "\n".join([*lines[:keep], f"… ({more} more lines)"])
    return text


def reset_shell(shell: Any) -> None:
    """A fresh page in a running shell: jaxscope unloaded, an empty namespace."""
    if "jaxscope" in shell.extension_manager.loaded:
        shell.run_line_magic("unload_ext", "jaxscope")
    shell.reset(new_session=False)


def run_page(shell: Any, markdown: str, name: str, workdir: Path) -> list[Result]:
    """Run a page's blocks in ``shell`` (already reset); one ``Result`` per block."""
    results: list[Result] = []
    for block in parse_blocks(markdown):
        result = Result()
        results.append(result)
        if "file" in block.flags:
            (workdir / block.flags["file"]).write_text(block.code)
        if not block.runs:
            continue
        where = f"{name}, block at offset {block.start} (```{block.lang})"
        if block.lang == "console":
            result.output = _shown(
                _run_console(block.code, workdir, where), block.flags
            )
            continue
        capture = _Capture(shell)
        result.cell = shell.execution_count
        stdin = workdir / block.flags["stdin"] if "stdin" in block.flags else None
        with _in_dir(workdir), capture.active(), _stdin_from(stdin):
            outcome = shell.run_cell(block.code, store_history=True)
        text = capture.text.getvalue()
        failed = not outcome.success
        if failed != ("raises" in block.flags):
            problem = "raised" if failed else "did not raise (flagged `raises`)"
            raise SnippetError(f"{where} {problem}:\n{block.code}\n---\n{text}")
        result.output = "" if "no-output" in block.flags else _shown(text, block.flags)
        if "screenshot" in block.flags:
            if capture.html is None:
                raise SnippetError(f"{where} is flagged screenshot but shows no HTML")
            result.html = capture.html
    return results


@contextlib.contextmanager
def _stdin_from(path: Path | None) -> Iterator[None]:
    """``sys.stdin`` reads ``path`` (what a user types at a prompt), if given."""
    if path is None:
        yield
        return
    saved = sys.stdin
    with path.open() as typed:
        sys.stdin = typed
        try:
            yield
        finally:
            sys.stdin = saved


@contextlib.contextmanager
def _in_dir(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _run_console(code: str, workdir: Path, where: str) -> str:
    """Run each ``$ command`` line; the transcript, commands included."""
    env = dict(os.environ)
    # `python` in a command is this interpreter, as an activated venv would make it.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    transcript: list[str] = []
    for line in code.splitlines():
        if not line.startswith("$ "):
            continue
        command = line[2:]
        args = shlex.split(command)
        if args[0] == "python":
            args[0] = sys.executable
        done = subprocess.run(
            args,
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        out = (done.stdout + done.stderr).rstrip()
        transcript.append(f"$ {command}\n{out}" if out else f"$ {command}")
        if done.returncode not in (0, 1):  # 1: a test run that reports a failure
            raise SnippetError(f"{where}: `{command}` exited {done.returncode}:\n{out}")
    return "\n".join(transcript)


def new_shell() -> Any:
    """A new real terminal IPython shell, as a user's (simple prompt, no colours).

    A new one per page numbers its cells from 1 again; one shell renumbered would
    give two cells the same ``In [N]``, and jaxscope would show the older one's text.
    """
    from IPython.terminal.interactiveshell import TerminalInteractiveShell

    if TerminalInteractiveShell.initialized():
        reset_shell(TerminalInteractiveShell.instance())
        TerminalInteractiveShell.clear_instance()
    shell: Any = TerminalInteractiveShell.instance(simple_prompt=True, colors="nocolor")
    shell.history_manager.enabled = False
    return shell


def run_pages(pages: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Run every page (name -> markdown), each in a new shell."""
    results: dict[str, list[dict[str, Any]]] = {}
    for name, markdown in pages.items():
        started, cpu = time.perf_counter(), time.process_time()
        shell = new_shell()
        with tempfile.TemporaryDirectory(prefix="jaxscope-docs-") as workdir:
            page_results = run_page(shell, markdown, name, Path(workdir))
        results[name] = [asdict(r) for r in page_results]
        reset_shell(shell)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        print(f"docs: {name}: {wall:.1f} s ({cpu:.1f} s CPU)", file=sys.stderr)
    return results


def main(argv: list[str]) -> int:
    """``gen_output.py DOCS_DIR OUT.json PAGE.md...``: run the pages, write results."""
    docs_dir, out, *pages = argv
    os.environ.setdefault("IPYTHONDIR", tempfile.mkdtemp(prefix="jaxscope-ipython-"))
    # This runner stands where IPython's own frames would: not the reader's code.
    os.environ["JAXSCOPE_LIBRARY_PATHS"] = str(Path(__file__).resolve().parent)
    texts = {page: (Path(docs_dir) / page).read_text() for page in pages}
    try:
        results = run_pages(texts)
    except SnippetError as exc:
        sys.stderr.write(f"docs: a guide snippet failed: {exc}\n")
        return 1
    Path(out).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
