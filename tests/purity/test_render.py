"""Purity findings rendered as text and HTML: user strings (names, reprs, paths) are
shown as they are, never read as rich markup or terminal control sequences."""

from __future__ import annotations

import importlib.util
import uuid

import jaxscope as js
from jaxscope._display import to_html, to_text
from jaxscope._purity.render import finding_line

_MARKUP = "[bold red]boom[/bold red]"
_ANSI = "\x1b[31mred\x1b]8;;http://evil.example\x07link"

_PROGRAM = """
import jax
value = 0
def fn(x):
    return x + len(str(value))
fn.__qualname__ = {qualname!r}
jit_fn = jax.jit(fn)
"""


def _hostile_findings(tmp_path):
    folder = tmp_path / "cache[" / "data]"
    folder.mkdir(parents=True)
    name = f"hostile_{uuid.uuid4().hex[:8]}"
    path = folder / f"{name}.py"
    path.write_text(_PROGRAM.format(qualname=f"step{_MARKUP}{_ANSI}"))
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    m.value = f"<script>{_MARKUP}"
    with js.watch_purity() as plog:
        m.jit_fn(1.0)
    m.value = f"{_ANSI}</td>"
    return plog


def _assert_shown_as_plain_text(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b" in text


def test_text_renderings_show_hostile_strings_literally(tmp_path):
    plog = _hostile_findings(tmp_path)
    (finding,) = plog.findings
    for text in (
        to_text(plog, width=400),
        to_text(finding, width=400),
        to_text(plog.summary(), width=400),
        finding_line(finding),
    ):
        _assert_shown_as_plain_text(text)
        assert _MARKUP in text, text
    for text in (to_text(plog, width=400), finding_line(finding)):
        assert "cache[/data]" in text
        assert "<script>" in text


def test_html_renderings_escape_hostile_strings(tmp_path):
    plog = _hostile_findings(tmp_path)
    (finding,) = plog.findings
    for page in (to_html(plog), to_html(finding), to_html(plog.summary())):
        assert "<script>" not in page and "</td>\\" not in page
        assert "&lt;script&gt;" in page or "step[bold red]" in page
        assert "\x1b" not in page and "\x07" not in page


def test_views_show_a_file_under_the_cwd_relative_to_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plog = _hostile_findings(tmp_path)
    (finding,) = plog.findings
    assert finding.source is not None
    full = finding.source.file
    assert full.startswith(str(tmp_path))  # the data keeps the full path
    short = full[len(str(tmp_path)) + 1 :]
    assert short.startswith("cache[/data]/hostile_")
    for text in (
        to_text(plog, width=400),
        to_text(finding, width=400),
        finding_line(finding),
    ):
        assert full not in text
        assert f"{short}:{finding.source.line}" in text
    page = to_html(plog)
    assert f'title="{full}:{finding.source.line}"' in page
