"""Renderers of ``GraphView``: a text summary, and HTML embedding the viewer with its data.

The HTML needs no widget manager and no server: the built viewer (``_static/graph.js``)
is inlined (gzip, base64; the browser's ``DecompressionStream`` inflates it) and
imported from a ``blob:`` URL, and the graph travels as its JSON payload, gzip and
base64 too (``pack_payload``: a tenth of the JSON's size, and base64 holds no
character that could close the tag), which the viewer's worker reads
(``mountPacked``), so that no main-thread task runs long at 100,000 equations. The viewer writes every user string with
``textContent``.
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
from jaxscope._format import plural
from jaxscope._graph.records import GraphGroup
from jaxscope._graph.view import GraphView
from jaxscope._source import short_path

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
# end a JavaScript line, DEL and C1 controls (JSON escapes C0 controls itself), and
# lone surrogates, which a UTF-8 page cannot hold (JSON's \udc80 reads back the same).
_UNESCAPED = re.compile("[&<>\u2028\u2029\x7f-\x9f\ud800-\udfff]")


# How the payload block is encoded (its ``data-encoding``); readers check it.
PAYLOAD_ENCODING = "gzip+base64"
_PAYLOAD_BLOCK = re.compile(
    r'<script type="application/octet-stream" class="jaxscope-graph-data"'
    r' data-encoding="([^"]*)">([^<]*)</script>'
)


def pack_payload(payload: dict[str, Any]) -> str:
    """The payload as the HTML carries it: its JSON, gzip-compressed, base64."""
    # json_for_script writes lone surrogates (a user string may hold one) as escapes
    data = json_for_script(payload).encode("utf-8")
    return base64.b64encode(gzip.compress(data, 6, mtime=0)).decode("ascii")


def payload_from_html(html: str) -> dict[str, Any]:
    """The graph payload inside a graph output's ``text/html`` (``pack_payload``
    undone); ``ValueError`` when it holds none or one of another encoding."""
    found = _PAYLOAD_BLOCK.search(html)
    if found is None:
        raise ValueError("this HTML holds no jaxscope graph payload")
    if found.group(1) != PAYLOAD_ENCODING:
        raise ValueError(
            f"graph payload encoded as {found.group(1)!r}, not {PAYLOAD_ENCODING!r}"
        )
    return json.loads(gzip.decompress(base64.b64decode(found.group(2))).decode("utf-8"))


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
    data = pack_payload(view.payload())
    # What readers that strip scripts (GitHub) show: the summary and the group tree.
    summary = _html.escape(f"{view!r} (the interactive viewer needs JavaScript)\n")
    summary += _html.escape(to_text(view))
    return (
        f'<div class="jaxscope-graph-static" id="{uid}" data-jaxscope-graph>'
        f"<style>{css}</style>"
        f'<div class="jaxscope-graph-mount" style="height:{int(height)}px">'
        '<pre class="jaxscope-text" style="box-sizing:border-box;height:100%;'
        f'margin:0;overflow:auto">{summary}</pre></div>'
        '<script type="application/octet-stream" class="jaxscope-graph-data"'
        f' data-encoding="{PAYLOAD_ENCODING}">{data}</script>'
        f'<script type="application/octet-stream" class="jaxscope-graph-js">'
        f"{js_b64}</script>"
        '<script type="module">'
        f"const root=document.getElementById('{uid}');"
        "const inflate=async(b64)=>{const s=atob(b64),n=s.length,b=new Uint8Array(n);"
        "for(let i=0;i<n;i++)b[i]=s.charCodeAt(i);"
        "return new Response(new Blob([b]).stream()"
        ".pipeThrough(new DecompressionStream('gzip'))).text();};"
        "const js=await inflate(root.querySelector('.jaxscope-graph-js').textContent);"
        "const url=URL.createObjectURL(new Blob([js],{type:'text/javascript'}));"
        "const mod=await import(url);URL.revokeObjectURL(url);"
        "const data=root.querySelector('.jaxscope-graph-data').textContent;"
        "const mount=root.querySelector('.jaxscope-graph-mount');"
        # the viewer reads the payload in its worker (no long task on the page); a
        # bundle without mountPacked parses it here
        f"if(mod.mountPacked)mod.mountPacked(mount,data,{opts});"
        "else{const graph=JSON.parse(await inflate(data));mount.textContent='';"
        f"mod.mountStatic(mount,graph,{opts});}}"
        "</script></div>"
    )


@html.register
def _(view: GraphView) -> str:
    return standalone_html(view)


# Bounds of the text tree: groups shown per parent, nesting levels, groups in all.
TREE_WIDTH = 12
TREE_DEPTH = 4
TREE_BUDGET = 40


def _lines_text(lines: tuple[str, int, int] | None) -> str:
    if lines is None:
        return ""
    file, first, last = lines
    span = f"{first}" if first == last else f"{first}\u2013{last}"
    return f"{short_path(file)}:{span}"


def shown_groups(
    children: dict[str | None, list[GraphGroup]],
    width: int = TREE_WIDTH,
    depth: int = TREE_DEPTH,
    budget: int = TREE_BUDGET,
) -> set[str]:
    """The groups a bounded tree shows, chosen level by level (outer groups first):
    at most ``width`` per parent, ``depth`` levels and ``budget`` in all."""
    shown: set[str] = set()
    level: list[str | None] = [None]
    for _ in range(depth):
        below: list[str | None] = []
        for gid in level:
            for group in children.get(gid, [])[:width]:
                if len(shown) >= budget:
                    return shown
                shown.add(group.id)
                below.append(group.id)
        level = below
    return shown


@rich_renderable.register
def _(view: GraphView) -> Any:
    from rich.text import Text
    from rich.tree import Tree

    model = view.model
    title = Text()
    title.append("graph", style="bold")
    if view.title:
        title.append(plain(f" of {view.title}"))
    title.append(
        f": {plural(len(view.nodes), 'node')}, {plural(len(view.edges), 'edge')}, "
        f"{plural(len(view.groups), 'group')}",
        style="dim",
    )
    tree = Tree(title)
    children: dict[str | None, list[GraphGroup]] = {}
    for group in model.groups:
        children.setdefault(group.parent, []).append(group)
    parent_of = {g.id: g.parent for g in model.groups}
    eqns: dict[str | None, int] = {}  # equations inside each group, at any depth
    for node in model.nodes:
        gid: str | None = node.group
        if node.kind != "eqn":
            continue
        while True:
            eqns[gid] = eqns.get(gid, 0) + 1
            if gid is None:
                break
            gid = parent_of[gid]
    shown = shown_groups(children)

    def add(branch: Any, gid: str | None) -> None:
        kids = children.get(gid, [])
        for group in kids:
            if group.id not in shown:
                continue
            label = Text()
            label.append(
                plain(
                    group.label,
                    "bold magenta" if group.kind != "scope" else "yellow",
                )
            )
            label.append(f"  {plural(eqns.get(group.id, 0), 'eqn')}", style="dim")
            span = _lines_text(group.lines)
            if span:
                label.append(plain(f"  {span}", "cyan"))
            add(branch.add(label), group.id)
        hidden = [g for g in kids if g.id not in shown]
        if hidden:
            n_eqns = plural(sum(eqns.get(g.id, 0) for g in hidden), "eqn")
            more = "" if len(hidden) == len(kids) else " more"
            groups = plural(len(hidden), f"{more.strip()} group".strip())
            branch.add(Text(f"\u2026 {groups} ({n_eqns})", style="dim"))

    add(tree, None)
    top = eqns.get(None, 0) - sum(eqns.get(g.id, 0) for g in children.get(None, []))
    if top and children.get(None):
        tree.add(Text(f"{plural(top, 'eqn')} outside groups", style="dim"))
    return tree


@widget.register
def _(view: GraphView) -> Any:
    from jaxscope._graph.widget import GraphWidget

    return GraphWidget(graph=view.payload())
