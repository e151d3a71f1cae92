// One container's layout: pure data in, pure data out, so it runs in the worker (the
// normal path) or inline (small graphs, and where a page forbids blob: workers).
import dagre from "@dagrejs/dagre";

/**
 * @param {{nodes: {id: string, w: number, h: number}[], edges: {a: string, b: string}[],
 *   rankdir?: string}} input (rankdir: dagre's, "TB" by default)
 * @returns {{w: number, h: number, pos: Object<string, number[]>, edges: number[][][]}}
 *   `pos[id]` is the node's top-left corner; `edges[i]` the points of `input.edges[i]`.
 */
export function layoutGraph(input) {
  if (!input.nodes.length) return { w: 0, h: 0, pos: {}, edges: [] };
  const gr = new dagre.graphlib.Graph({ multigraph: false });
  gr.setGraph({ rankdir: input.rankdir || "TB", nodesep: 14, ranksep: 26, edgesep: 8, marginx: 0, marginy: 0 });
  gr.setDefaultEdgeLabel(() => ({}));
  for (const n of input.nodes) gr.setNode(n.id, { width: n.w, height: n.h });
  for (const e of input.edges) gr.setEdge(e.a, e.b);
  dagre.layout(gr);
  const pos = {};
  for (const n of input.nodes) {
    const d = gr.node(n.id);
    pos[n.id] = [d.x - n.w / 2, d.y - n.h / 2];
  }
  const edges = input.edges.map((e) => {
    const d = gr.edge(e.a, e.b);
    return ((d && d.points) || []).map((p) => [p.x, p.y]);
  });
  return { w: gr.graph().width, h: gr.graph().height, pos, edges };
}
