"""Every view's HTML keeps its layout where ``<style>`` and ``<script>`` are removed,
as GitHub-like renderers and JupyterLab's sanitizer (untrusted notebooks) remove them:
monospaced code with its columns, the sharding tiles as a grid, tables aligned, and no
output running into the next one. Checked in Chromium on the views' real HTML."""

from __future__ import annotations

import os
import re

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

import jaxscope as js
from jaxscope._htmlstyle import inline_styles

pytestmark = pytest.mark.browser

STRIP = re.compile(r"<(style|script)\b[^>]*>.*?</\1\s*>", re.S | re.I)


def stripped(page: str) -> str:
    """What a GitHub-like renderer keeps: no ``<style>``, no ``<script>``."""
    return STRIP.sub("", page)


def mlp(params, x):
    h = jnp.tanh(x @ params["w1"])
    return jnp.sum(h @ params["w2"])


def layers(x):
    for i in range(12):
        with jax.named_scope(f"block{i}"):
            for part in ("norm", "attn", "mlp"):
                with jax.named_scope(part):
                    x = jnp.tanh(x) * 1.5
    return x


def wide(x):
    # One equation of a very long line: a concatenate of 60 operands.
    return jnp.concatenate([x * float(i) for i in range(60)])


def _params():
    return {"w1": jnp.ones((8, 16)) / 8, "w2": jnp.ones((16, 4)) / 16}


@pytest.fixture(scope="module")
def views() -> dict[str, str]:
    """The HTML of every kind of view, as ``_repr_mimebundle_`` gives it."""
    params, x = _params(), jnp.ones((4, 8))
    auto = jax.sharding.AxisType.Auto
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(auto, auto))
    sharded = jax.device_put(
        jnp.arange(64.0).reshape(8, 8), NamedSharding(mesh, P("data", "model"))
    )

    def matmul(a, b):
        return a @ b

    b = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P("model", None)))
    shown = {
        "jaxpr": js.jaxpr(mlp)(params, x),
        "hlo": js.hlo(mlp)(params, x),
        "sharding": js.sharding(sharded),
        "sharding tree": js.sharding({"w": sharded, "b": b}),
        "shardings": js.shardings(jax.jit(matmul))(sharded, b),
        "profile": js.profile(jax.jit(mlp), repeat=1)(params, x),
        "memory": js.memory(jax.jit(mlp))(params, x),
        # Where scripts are removed, its text tree: taller than the viewer's box.
        "graph": js.graph(layers)(x),
    }
    shown.update(_message_views())
    shown["jaxpr wide"] = js.jaxpr(wide)(jnp.ones(4))
    return {name: view._repr_mimebundle_()["text/html"] for name, view in shown.items()}


_leaked: list = []


def _message_views() -> dict:
    """The views of findings: leaks, an error, recompiles, purity, the stepper."""

    @jax.jit
    def leaks(x):
        _leaked.append(x)
        return x * 2

    with js.check_leaks(raise_on_leak=False) as report:
        leaks(jnp.ones(3))
    _leaked.clear()

    @jax.jit
    def branch(x):
        if x > 0:
            return x
        return -x

    try:
        branch(1.0)
    except Exception as exc:  # the error shown
        error = js.explain(exc)
    double = jax.jit(lambda x: x * 2)
    with js.watch_recompiles() as recompiles:
        double(jnp.ones(2))
        double(jnp.ones(3))
    calls: list = []

    @jax.jit
    def impure(x):
        calls.append(1)
        return x + 1

    with js.watch_purity() as purity:
        impure(jnp.ones(2))
    stepper = js.step(mlp)(_params(), jnp.ones((4, 8)))
    stepper.next()
    return {
        "leaks": report,
        "error": error,
        "recompiles": recompiles,
        "purity": purity,
        "stepper": stepper,
    }


@pytest.fixture(scope="module")
def browser(require_chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=require_chromium)
        yield b
        b.close()


def _load(browser, body: str, *, scripts: bool):
    context = browser.new_context(
        java_script_enabled=scripts, viewport={"width": 1100, "height": 900}
    )
    page = context.new_page()
    page.set_content(
        "<!doctype html><html><body style='font-family:sans-serif;color:#fff'>"
        f"{body}</body></html>"
    )
    return context, page


def _outputs(views: dict[str, str]) -> str:
    return "".join(
        f'<div class="out" data-kind="{name}">{stripped(html)}</div>'
        f'<div class="next" data-kind="{name}">next output</div>'
        for name, html in views.items()
    )


def _font(locator) -> str:
    return locator.first.evaluate("e => getComputedStyle(e).fontFamily")


def test_the_views_keep_their_layout_without_style_and_scripts(browser, views):
    context, page = _load(browser, _outputs(views), scripts=False)
    try:
        assert page.locator("style, script").count() == 0
        # The jaxpr: monospaced, its source annotations apart from the operands.
        jaxpr = page.locator('.out[data-kind="jaxpr"]')
        assert "monospace" in _font(jaxpr.locator(".jxs-e"))
        gap = jaxpr.locator(".jxs-l").first.evaluate(
            "e => e.getBoundingClientRect().left"
            " - e.previousElementSibling.getBoundingClientRect().right"
        )
        assert gap >= 10, gap
        assert (
            jaxpr.locator(".jxs-cols").evaluate("e => getComputedStyle(e).display")
            == "flex"
        )
        # The HLO: monospaced rows, one per line.
        hlo = page.locator('.out[data-kind="hlo"]')
        assert "monospace" in _font(hlo.locator(".jxh-l"))
        assert (
            hlo.locator(".jxh-l").first.evaluate("e => getComputedStyle(e).whiteSpace")
            == "pre"
        )
        # The 4x2 sharding: eight tiles, rows along 'data' (4), columns along 'model'.
        tiles = page.locator('.out[data-kind="sharding"] .jxs-grid').first
        boxes = tiles.locator(":scope > .jxs-cell").evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect();"
            " return [Math.round(r.left), Math.round(r.top), r.width]; })"
        )
        assert len(boxes) == 8
        assert len({left for left, _, _ in boxes}) == 2
        assert len({top for _, top, _ in boxes}) == 4
        width = tiles.evaluate("e => e.getBoundingClientRect().width")
        assert all(w < width / 1.5 for _, _, w in boxes)
        # Their labels keep their dark text on the tiles' light colours, whatever
        # the page's text colour (a dark theme's is white).
        colours = tiles.locator(":scope > .jxs-cell").evaluate_all(
            "els => els.map(e => getComputedStyle(e).color)"
        )
        assert set(colours) == {"rgb(17, 17, 17)"}, colours
        # The profile's and the memory view's rows are grids of columns.
        for kind in ("profile", "memory"):
            out = page.locator(f'.out[data-kind="{kind}"]')
            assert "monospace" in _font(out.locator("div").first), kind
            row = out.locator("details > summary").first
            assert row.evaluate("e => getComputedStyle(e).display") == "grid", kind
        # The findings' tables and code are monospaced too.
        for kind in ("leaks", "error", "recompiles", "purity", "stepper"):
            out = page.locator(f'.out[data-kind="{kind}"]')
            assert out.evaluate(
                "e => { const mono = (c) => getComputedStyle(c).fontFamily"
                ".includes('monospace'); const cells = [...e.querySelectorAll("
                "'td, pre')].filter(c => c.textContent.trim());"
                " return cells.length > 0 && cells.every(mono); }"
            ), kind
        # No output runs into the next one.
        for kind in views:
            out = page.locator(f'.out[data-kind="{kind}"]')
            bottom = out.evaluate(
                "e => Math.max(e.getBoundingClientRect().bottom,"
                " ...[...e.querySelectorAll('*')].filter(c => c.checkVisibility()).map(c =>"
                " c.getBoundingClientRect().bottom))"
            )
            top = page.locator(f'.next[data-kind="{kind}"]').evaluate(
                "e => e.getBoundingClientRect().top"
            )
            assert bottom <= top + 0.5, kind
    finally:
        context.close()


def _columns(page) -> dict[str, list[str]]:
    """Each column of the first table: its header's text, its cells' alignment."""
    return page.locator("table").first.evaluate(
        """t => { const heads = [...t.querySelectorAll('thead th')];
        const out = {}; heads.forEach((h, i) => { out[h.textContent] =
          [getComputedStyle(h).textAlign, ...[...t.querySelectorAll('tbody tr')]
           .map(r => getComputedStyle(r.children[i]).textAlign)]; });
        return out; }"""
    )


@pytest.mark.parametrize("sanitized", [False, True])
def test_sharding_tables_align_text_left_and_numbers_right(browser, views, sanitized):
    # A notebook's own table style right-aligns every cell (JupyterLab does).
    lab_like = "<style>div td, div th {text-align:right; padding:.5em}</style>"
    html = views["sharding tree"]
    context, page = _load(
        browser, lab_like + (stripped(html) if sanitized else html), scripts=False
    )
    try:
        columns = _columns(page)
        for text in ("path", "dtype", "spec", "shape"):
            assert set(columns[text]) == {"left"}, (text, columns[text])
        for number in ("bytes/device", "replication"):
            assert set(columns[number]) == {"right"}, (number, columns[number])
    finally:
        context.close()


def test_a_stylesheet_that_stays_still_wins_where_state_changes(browser):
    """With the block kept, a rule of a toggled class or a hover still overrides
    what was copied into the markup, as it overrode the static rule before."""
    page_html = inline_styles(
        "<div id='v'><style>#v .row{background:white;padding:2px}"
        "#v .row:hover{background:yellow}#v .pin{background:orange}</style>"
        "<div class='row' style='padding-left:4ch'>a</div></div>"
    )
    # Layout is copied (a ch length also in em, for Lab), colours stay in the block.
    copied = "padding:2px;padding-left:2.4em;padding-left:4ch"
    assert f"class='row' style=\"{copied}\"" in page_html
    context, page = _load(browser, page_html, scripts=True)
    try:
        row = page.locator(".row")
        row.evaluate("e => e.classList.add('pin')")
        assert row.evaluate("e => getComputedStyle(e).backgroundColor") == (
            "rgb(255, 165, 0)"
        )
    finally:
        context.close()


@pytest.mark.notebook
@pytest.mark.slow
def test_the_views_keep_their_layout_in_an_untrusted_jupyterlab_notebook(
    tmp_path, views, browser
):
    """Lab's own sanitizer, on a notebook it did not sign (one received from someone
    else): the views' HTML is sanitized, and keeps its layout and theme colours."""
    import nbformat

    from tests.export.test_jupyterlab import Lab, _open

    root = tmp_path / "notebooks"
    root.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            f"# {name}",
            outputs=[
                nbformat.v4.new_output(
                    "display_data", data={"text/html": html, "text/plain": name}
                )
            ],
        )
        for name, html in views.items()
    ]
    nbformat.write(nb, root / "received.ipynb")
    lab = Lab(tmp_path / "home", root)
    try:
        lab.start(tmp_path / "lab.log")
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        try:
            _open(page, lab, "received.ipynb")
            assert not page.evaluate(
                "() => window.jupyterapp.shell.currentWidget.content.model"
                ".cells.get(0).trusted"
            )
            page.locator(".jxs-grid").first.wait_for(timeout=60_000)
            # Sanitized: no style block and no script reached the page.
            assert page.locator(".jp-OutputArea-output style").count() == 0
            assert page.locator(".jp-OutputArea-output script").count() == 0
            assert "monospace" in _font(page.locator(".jxs-e"))
            gap = page.locator(".jxs-l").first.evaluate(
                "e => e.getBoundingClientRect().left"
                " - e.previousElementSibling.getBoundingClientRect().right"
            )
            assert gap >= 10, gap
            tiles = page.locator(".jxs-grid").first
            boxes = tiles.locator(":scope > .jxs-cell").evaluate_all(
                "els => els.map(e => Math.round(e.getBoundingClientRect().left))"
            )
            assert len(boxes) == 8 and len(set(boxes)) == 2
            rows = page.locator(".jaxscope-profile details > summary").first
            assert rows.evaluate("e => getComputedStyle(e).display") == "grid"
            path = page.locator("table").filter(has_text="bytes/device").first
            cells = path.locator("td").evaluate_all(
                "els => els.map(e => getComputedStyle(e).textAlign)"
            )
            assert cells[0] == "left" and "right" in cells
            # Equations keep their indentation (Lab drops lengths in ``ch``).
            indents = page.locator(".jxs-f, .jxs-e").evaluate_all(
                "els => els.slice(0, 2).map(e => e.getBoundingClientRect().left"
                " + parseFloat(getComputedStyle(e).paddingLeft))"
            )
            assert indents[1] >= indents[0] + 10, indents
            # A long line's source annotation stays in view (not scrolled away).
            code = page.locator(".jp-Cell", has_text="# jaxpr wide").locator(
                ".jxs-code"
            )
            assert code.locator(".jxs-e .jxs-l").count() >= 60
            assert code.evaluate(_HIDDEN_NOTES, ".jxs-e .jxs-l") == []
            shots = os.environ.get("JAXSCOPE_SCREENSHOT_DIR")
            if shots:  # for a change's review: the untrusted notebook as Lab shows it
                page.keyboard.press("Escape")  # the kernel dialog: no kernel needed
                for theme in ("Light", "Dark"):
                    page.evaluate(
                        "(t) => window.jupyterapp.commands.execute("
                        "'apputils:change-theme', {theme: `JupyterLab ${t}`})",
                        theme,
                    )
                    page.wait_for_timeout(1500)
                    page.screenshot(
                        path=f"{shots}/lab-untrusted-{theme.lower()}.png",
                        full_page=True,
                    )
        finally:
            page.close()
    finally:
        lab.stop()


# The annotations that are cut off (by a scrolling box, or the page) in `box`.
_HIDDEN_NOTES = """(box, notes) => {
  const hidden = [];
  for (const n of box.querySelectorAll(notes)) {
    const r = n.getBoundingClientRect();
    let left = 0, right = window.innerWidth;
    for (let p = n.parentElement; p; p = p.parentElement) {
      if (getComputedStyle(p).overflowX === 'visible') continue;
      const c = p.getBoundingClientRect();
      left = Math.max(left, c.left); right = Math.min(right, c.right);
    }
    if (r.width === 0 || r.left < left - 0.5 || r.right > right + 0.5) hidden.push(n.textContent);
  }
  return hidden;
}"""


@pytest.mark.parametrize("sanitized", [False, True])
def test_long_lines_keep_their_source_annotation_in_view(browser, sanitized):
    x = jnp.ones(4)
    shown = {"jaxpr": js.jaxpr(wide)(x), "hlo": js.hlo(wide)(x)}
    for kind, view in shown.items():
        page_html = view._repr_mimebundle_()["text/html"]
        if sanitized:
            page_html = stripped(page_html)
        context, page = _load(
            browser, f"<div style='width:900px'>{page_html}</div>", scripts=True
        )
        try:
            box, notes = {
                "jaxpr": (".jxs-code", ".jxs-e .jxs-l"),
                "hlo": (".jxh-code", ".jxh-op .jxh-at"),
            }[kind]
            assert page.locator(f"{box} {notes}").count() >= 60, kind
            hidden = page.locator(box).evaluate(_HIDDEN_NOTES, notes)
            assert hidden == [], (kind, hidden[:3])
        finally:
            context.close()
