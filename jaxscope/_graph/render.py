"""Renderers of ``GraphView``: a text summary, and HTML embedding the viewer with its data.

The HTML needs no widget manager and no server: the built viewer (``_static/graph.js``)
is inlined (gzip, base64; the browser's ``DecompressionStream`` inflates it) and
imported from a ``blob:`` URL, and the graph travels as JSON
in a ``<script type="application/json">`` block whose ``<``, ``>`` and ``&`` are
escaped, so no user string can close the tag. The viewer writes every user string
with ``textContent``.
"""

from __future__ import annotations

import base64
import functools
import gzip
import html as _html
import json
import re
import uuid
from pathlib import Path
from typing import Any

from jaxscope._display import html, plain, rich_renderable, to_text, widget
from jaxscope._graph.view import GraphView

_STATIC = Path(__file__).resolve().parent.parent / "_static"


@functools.lru_cache(maxsize=1)
def _bundle() -> tuple[str, str]:
    # gzip: every graph output carries the viewer, and a notebook keeps each output.
    js = gzip.compress((_STATIC / "graph.js").read_bytes(), 9, mtime=0)
    css_path = _STATIC / "graph.css"
    css = css_path.read_text("utf-8") if css_path.exists() else ""
    return base64.b64encode(js).decode("ascii"), css


def json_for_script(data: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no ``<!--``), with
    no raw control character (JSON escapes C0 ones; DEL and C1 are escaped here)."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return _UNESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


# Characters JSON leaves raw that must not reach HTML: markup, line separators that
# end a JavaScript line, DEL and C1 controls (JSON escapes C0 controls itself).
_UNESCAPED = re.compile("[&<>\u2028\u2029\x7f-\x9f]")


def standalone_html(
    view: GraphView, *, height: int = 520, options: dict[str, Any] | None = None
) -> str:
    """A self-contained HTML fragment: the interactive viewer and its data.

    ``options`` go to the viewer (``chunkMax``/``chunkSize``: when a group's direct
    children are split into artificial layers; for benchmarks).
    """
    opts = json_for_script({"height": int(height), **(options or {})})
    js_b64, css = _bundle()
    uid = "jaxscope-graph-" + uuid.uuid4().hex[:12]
    data = json_for_script(view.payload())
    # What readers that strip scripts (GitHub) show: the summary and the group tree.
    summary = _html.escape(f"{view!r} (the interactive viewer needs JavaScript)\n")
    summary += _html.escape(to_text(view))
    return (
        f'<div class="jaxscope-graph-static" id="{uid}" data-jaxscope-graph>'
        f"<style>{css}</style>"
        f'<div class="jaxscope-graph-mount" style="height:{int(height)}px">'
        f'<pre class="jaxscope-text">{summary}</pre></div>'
        f'<script type="application/json" class="jaxscope-graph-data">{data}</script>'
        f'<script type="application/octet-stream" class="jaxscope-graph-js">'
        f"{js_b64}</script>"
        '<script type="module">'
        f"const root=document.getElementById('{uid}');"
        "const b64=root.querySelector('.jaxscope-graph-js').textContent;"
        "const bytes=Uint8Array.from(atob(b64),c=>c.charCodeAt(0));"
        "const js=await new Response(new Blob([bytes]).stream()"
        ".pipeThrough(new DecompressionStream('gzip'))).text();"
        "const url=URL.createObjectURL(new Blob([js],{type:'text/javascript'}));"
        "const mod=await import(url);URL.revokeObjectURL(url);"
        "const graph=JSON.parse(root.querySelector('.jaxscope-graph-data').textContent);"
        "const mount=root.querySelector('.jaxscope-graph-mount');mount.textContent='';"
        f"mod.mountStatic(mount,graph,{opts});"
        "</script></div>"
    )


@html.register
def _(view: GraphView) -> str:
    return standalone_html(view)


@rich_renderable.register
def _(view: GraphView) -> Any:
    from rich.text import Text
    from rich.tree import Tree

    title = Text()
    title.append("graph", style="bold")
    if view.title:
        title.append(plain(f" of {view.title}"))
    title.append(
        f": {len(view.nodes)} nodes, {len(view.edges)} edges, "
        f"{len(view.groups)} groups",
        style="dim",
    )
    tree = Tree(title)
    children: dict[str | None, list[Any]] = {}
    for group in view.groups:
        children.setdefault(group.parent, []).append(group)
    counts: dict[str | None, int] = {}
    for node in view.nodes:
        counts[node.group] = counts.get(node.group, 0) + 1

    budget = [60]

    def add(branch: Any, gid: str | None) -> None:
        for group in children.get(gid, ()):
            if budget[0] <= 0:
                branch.add(Text("...", style="dim"))
                return
            budget[0] -= 1
            label = Text()
            label.append(
                plain(
                    group.label,
                    "bold magenta" if group.kind != "scope" else "yellow",
                )
            )
            label.append(f"  {group.size} nodes", style="dim")
            if group.source is not None:
                label.append(plain(f"  # {group.source}", "yellow"))
            add(branch.add(label), group.id)

    add(tree, None)
    return tree


@widget.register
def _(view: GraphView) -> Any:
    from jaxscope._graph.widget import GraphWidget

    return GraphWidget(graph=view.payload())
