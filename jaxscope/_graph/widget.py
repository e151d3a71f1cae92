"""``GraphWidget``: the anywidget that shows a ``GraphView`` in notebooks.

The front-end is ``jaxscope/_static/graph.js``, built from ``extension/src/graph/``
(see ``extension/README.md``); it is package data, so installing needs no Node.
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

_STATIC = Path(__file__).resolve().parent.parent / "_static"


class GraphWidget(anywidget.AnyWidget):
    """Interactive dataflow graph: pan, zoom, expand groups, click a node, search.

    Traits:
        graph: the payload of ``jaxscope._graph.to_payload`` (read by the front-end).
        selected: the index of the node the user clicked last (-1: none); set by the
            front-end, so Python can read what the user is looking at.
        height: the viewer's height in CSS pixels.
    """

    _esm = _STATIC / "graph.js"
    _css = _STATIC / "graph.css"

    graph = traitlets.Dict().tag(sync=True)
    selected = traitlets.Int(-1).tag(sync=True)
    height = traitlets.Int(520).tag(sync=True)
