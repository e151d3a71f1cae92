"""The user guide (docs/): every code block runs, and every name it uses exists.

Each page's ```python / ```ipython blocks run in order in the real IPython shell (one
namespace per page, as a reader runs them), its ```console commands in a scratch folder;
the same runner as the docs build (docs/gen_output.py), which writes their output into
the pages. ``mkdocs build --strict`` itself runs in .ci/run.
"""

from __future__ import annotations

import importlib.util
import re
import struct
import sys
import types
from pathlib import Path

import pytest

import jaxscope

DOCS = Path(__file__).resolve().parents[1] / "docs"
JAXSCOPE = Path(jaxscope.__file__).parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(
        f"jaxscope_docs_{name}", DOCS / f"{name}.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


gen_output = _load("gen_output")
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
RUNNABLE_PAGES = [
    p
    for p in PAGES
    if any(b.runs for b in gen_output.parse_blocks((DOCS / p).read_text()))
]


def _all_text() -> str:
    return "\n".join((DOCS / p).read_text() for p in PAGES)


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_guide_page_snippets_run(page, ipython_shell, tmp_path):
    text = (DOCS / page).read_text()
    gen_output.reset_shell(ipython_shell)
    try:
        results = gen_output.run_page(ipython_shell, text, page, tmp_path)
    finally:
        gen_output.reset_shell(ipython_shell)
    blocks = gen_output.parse_blocks(text)
    ran = [r for b, r in zip(blocks, results, strict=True) if b.runs]
    assert ran, f"{page} has no runnable block"
    shots = [b for b, r in zip(blocks, results, strict=True) if "screenshot" in b.flags]
    assert all(r.html for b, r in zip(blocks, results, strict=True) if b in shots)


def test_the_guide_runs_a_snippet_on_every_capability_page():
    assert len(RUNNABLE_PAGES) >= 17, RUNNABLE_PAGES
    n_snippets = sum(
        b.runs for p in PAGES for b in gen_output.parse_blocks((DOCS / p).read_text())
    )
    assert n_snippets >= 80, n_snippets


def test_api_reference_documents_exactly_the_public_names():
    reference = (DOCS / "reference.md").read_text()
    documented = re.findall(r"^::: jaxscope\.(\w+)$", reference, re.M)
    assert sorted(documented) == sorted(jaxscope.__all__)


def test_every_js_name_in_the_guide_is_public():
    used = set(re.findall(r"\bjs\.(\w+)", _all_text()))
    assert used, "the guide names no js.* API"
    assert used <= set(jaxscope.__all__), used - set(jaxscope.__all__)


def test_every_magic_and_magic_flag_in_the_guide_exists(ip):
    mentions = re.findall(r"(%%?)(\w+)((?:[ \t]+--?[a-z][\w-]*)*)", _all_text())
    line_magics = ip.magics_manager.magics["line"]
    cell_magics = ip.magics_manager.magics["cell"]
    assert mentions
    for prefix, name, flags in mentions:
        if prefix == "%%" and name not in cell_magics:
            pytest.fail(f"the guide names %%{name}, which is no cell magic")
        if prefix == "%" and name not in line_magics:
            pytest.fail(f"the guide names %{name}, which is no line magic")
        magic = (cell_magics if prefix == "%%" else line_magics)[name]
        usage = magic.__doc__ or ""
        for flag in flags.split():
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", usage), (
                f"the guide uses {prefix}{name} {flag}, which its usage lacks"
            )


def test_every_pytest_option_in_the_guide_exists():
    plugin_source = "\n".join(p.read_text() for p in JAXSCOPE.glob("_*/plugin.py"))
    options = set(re.findall(r"--jax-[a-z-]+", _all_text()))
    markers = set(re.findall(r"pytest\.mark\.(jax_\w+)", _all_text()))
    assert options and markers
    for name in options | markers:
        assert f'"{name}"' in plugin_source, (
            f"the guide names {name}, unknown to the plugin"
        )


def test_every_internal_link_points_at_a_page():
    for page in PAGES:
        for target in re.findall(
            r"\]\(([^)#:]+\.md)(?:#[\w-]+)?\)", (DOCS / page).read_text()
        ):
            assert (DOCS / page).parent.joinpath(target).resolve().is_file(), (
                page,
                target,
            )


def test_an_unknown_snippet_flag_is_a_one_line_error():
    with pytest.raises(gen_output.SnippetError, match="unknown snippet flag 'rasies'"):
        gen_output.parse_blocks("```python rasies\n1 / 0\n```\n")


def test_a_snippet_that_fails_names_its_page(ipython_shell, tmp_path):
    page = "# p\n\n```python\nx = 1\n```\n\n```python\nraise ValueError(x)\n```\n"
    gen_output.reset_shell(ipython_shell)
    try:
        with pytest.raises(gen_output.SnippetError, match=r"p\.md, block .* raised"):
            gen_output.run_page(ipython_shell, page, "p.md", tmp_path)
    finally:
        gen_output.reset_shell(ipython_shell)


def test_a_snippet_flagged_raises_must_raise(ipython_shell, tmp_path):
    page = "```python raises\nx = 1\n```\n"
    gen_output.reset_shell(ipython_shell)
    try:
        with pytest.raises(gen_output.SnippetError, match="did not raise"):
            gen_output.run_page(ipython_shell, page, "p.md", tmp_path)
    finally:
        gen_output.reset_shell(ipython_shell)


def test_output_keeps_print_display_and_value_in_order(ipython_shell, tmp_path):
    page = (
        "```python\nprint('first')\nfrom IPython.display import display\n"
        "display('second')\n'third'\n```\n\n```python lines=1 no-output\nprint(1)\n```\n"
        "```python lines=2\nprint('a\\nb\\nc\\nd')\n```\n"
    )
    gen_output.reset_shell(ipython_shell)
    try:
        results = gen_output.run_page(ipython_shell, page, "p.md", tmp_path)
    finally:
        gen_output.reset_shell(ipython_shell)
    assert results[0].output == "first\n'second'\n'third'"
    assert results[1].output == ""
    assert results[2].output == "a\nb\n… (2 more lines)"


def test_a_file_block_is_written_for_the_console_block_after_it(
    ipython_shell, tmp_path
):
    page = (
        "```python file=hello.py\nimport sys\nprint('hi', sys.argv[1])\n```\n\n"
        "```console\n$ python hello.py there\n```\n"
    )
    results = gen_output.run_page(ipython_shell, page, "p.md", tmp_path)
    assert results[0].output == ""
    assert results[1].output == "$ python hello.py there\nhi there"


hooks = _load("hooks")


def test_the_build_writes_each_output_under_its_block_titled_with_its_cell():
    markdown = (
        "Intro\n\n```python lines=3\nprint(1)\n```\n\n```python file=a.py\nx = 1\n```\n"
        "\n```console\n$ python a.py\n```\n\n```toml\n[a]\n```\n"
    )
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="guide/p.md"))
    hooks._results["guide/p.md"] = [
        {"output": "1", "cell": 1, "html": None},
        {"output": "", "cell": None, "html": None},
        {"output": "$ python a.py\n```", "cell": None, "html": None},
        {"output": "", "cell": None, "html": None},
    ]
    try:
        out = hooks.on_page_markdown(markdown, page, {}, None)
    finally:
        del hooks._results["guide/p.md"]
    assert out == (
        'Intro\n\n```python title="In [1]"\nprint(1)\n```\n\n'
        '```text title="Output"\n1\n```\n\n'
        '```python title="a.py"\nx = 1\n```\n\n'
        "````console\n$ python a.py\n```\n````\n\n```toml\n[a]\n```\n"
    )


@pytest.mark.browser
def test_screenshots_render_a_view_to_a_png(require_chromium):
    import jax.numpy as jnp

    view = jaxscope.jaxpr(lambda x: jnp.sin(x) * 2)(jnp.ones(3))
    shots = hooks.screenshots({"jaxpr": view._repr_mimebundle_()["text/html"]})
    png = shots["jaxpr"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 400 and height > 40  # the #shot box: min-width 400px


def test_serve_reruns_only_the_pages_that_changed(tmp_path):
    from mkdocs.config import load_config
    from mkdocs.structure.files import get_files

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("```python\nprint(1 + 1)\n```\n")
    (docs / "b.md").write_text("```python\nprint('b')\n```\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
    config = load_config(str(tmp_path / "mkdocs.yml"))

    def build():
        hooks.on_files(get_files(config), config)
        return {page: hooks._page_cache[page][1] for page in ("a.md", "b.md")}

    hooks.on_startup(command="serve", dirty=False)
    try:
        first = build()
        assert first["a.md"][0]["output"] == "2"
        (docs / "b.md").write_text("```python\nprint('b, edited')\n```\n")
        second = build()
    finally:
        hooks.on_startup(command="build", dirty=False)
        for page in ("a.md", "b.md"):
            hooks._page_cache.pop(page, None)
    assert second["a.md"] is first["a.md"]  # not run again
    assert second["b.md"][0]["output"] == "b, edited"


def test_every_flag_the_guide_names_belongs_to_a_magic_the_plugin_or_the_cli(ip):
    magics = ip.magics_manager.magics
    usages = [
        m.__doc__ or "" for kind in ("line", "cell") for m in magics[kind].values()
    ]
    sources = [
        *usages,
        *(p.read_text() for p in JAXSCOPE.glob("_*/plugin.py")),
        (JAXSCOPE / "_cli.py").read_text(),
    ]
    # Not jaxscope's: MkDocs', XLA's and nbconvert's flags, and the --help every
    # magic has.
    others = {
        "--strict",
        "--xla_force_host_platform_device_count",
        "--help",
        "--execute",
        "--to",
    }
    flags = set(re.findall(r"(?<![\w-])--[a-z][\w-]*", _all_text())) - others
    assert {"--stage", "--dims", "--jax-check-leaks", "--recompiles"} <= flags
    for flag in flags:
        pattern = rf"(?<![\w-]){re.escape(flag)}(?![\w-])"
        assert any(re.search(pattern, s) for s in sources), f"the guide names {flag}"


def test_a_block_flagged_stdin_reads_the_file_as_typed_input(ipython_shell, tmp_path):
    page = "```text file=typed.txt\nfirst\nsecond\n```\n\n```python stdin=typed.txt\nprint(input(), input())\n```\n"
    gen_output.reset_shell(ipython_shell)
    try:
        results = gen_output.run_page(ipython_shell, page, "p.md", tmp_path)
    finally:
        gen_output.reset_shell(ipython_shell)
    assert results[1].output == "first second"
