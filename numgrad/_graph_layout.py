"""A picture of a small directed graph without Graphviz: a layered layout drawn by matplotlib.

Used by ``numgrad.viz`` where Graphviz's ``dot`` program is missing. The layout is the
Sugiyama scheme in its simplest form: each node on the layer of its longest path from a
source (a source itself just above its first consumer), edges across several layers broken
by invisible points, nodes ordered within their layer by the mean position of their
neighbours (sweeps down and up), then placed at the mean x of their neighbours without
overlapping. Sizes are in points (1/72 inch), as Graphviz's.
"""

import io

# Graphviz's X11 names of the colours numgrad.viz uses; "filled" boxes default to lightgrey
COLOURS = {"darkolivegreen1": "#caff70", "lightblue": "#add8e6", "orange": "#ffa500",
           "lightgrey": "#d3d3d3"}
FONT_SIZE = 10.0
CHAR_W = 0.6 * FONT_SIZE   # a monospace character
LINE_H = 1.2 * FONT_SIZE
PAD_X, PAD_Y = 8.0, 5.0
NODE_GAP = 18.0            # between neighbours in a layer
LAYER_GAP = 36.0           # between layers
ARROW = 7.0               # arrowhead length
MAX_INCHES = 12.0          # graph [size="12,12"]: larger drawings are scaled down


def _layers(names, edges):
    """Layer of each node: the length of its longest path from a source (Kahn's order)."""
    preds = {n: [] for n in names}
    succs = {n: [] for n in names}
    for a, b in edges:
        succs[a].append(b)
        preds[b].append(a)
    indegree = {n: len(preds[n]) for n in names}
    layer = {}
    ready = [n for n in names if indegree[n] == 0]
    while ready:
        n = ready.pop(0)
        layer[n] = max((layer[p] + 1 for p in preds[n] if p in layer), default=0)
        for s in succs[n]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    for n in names:  # on a cycle (never in an autograd graph): below what is placed
        if n not in layer:
            layer[n] = max((layer[p] + 1 for p in preds[n] if p in layer), default=0)
    # sources (leaves, saved tensors) move down to just above their first consumer, as dot
    # draws them, instead of all waiting on the top layer
    for n in names:
        if not preds[n] and succs[n]:
            layer[n] = max(0, min(layer[s] for s in succs[n]) - 1)
    return layer


def _order(rows, preds, succs, sweeps=4):
    """Barycentre ordering: each layer sorted by its neighbours' mean index, down then up."""
    index = {n: i for row in rows for i, n in enumerate(row)}

    def sort_by(row, neighbours):
        def key(n):
            near = neighbours[n]
            return sum(index[m] for m in near) / len(near) if near else index[n]
        row.sort(key=key)
        for i, n in enumerate(row):
            index[n] = i

    for _ in range(sweeps):
        for row in rows[1:]:
            sort_by(row, preds)
        for row in reversed(rows[:-1]):
            sort_by(row, succs)
    return rows


def _place_row(row, x, width, neighbours):
    """Move a layer toward its neighbours' mean x, keeping its order and gaps."""
    want = []
    for n in row:
        near = neighbours[n]
        want.append(sum(x[m] for m in near) / len(near) if near else x[n])
    placed = []
    for i, n in enumerate(row):
        lo = placed[-1] + (width[row[i - 1]] + width[n]) / 2 + NODE_GAP if i else -1e300
        placed.append(max(want[i], lo))
    shift = sum(want) / len(want) - sum(placed) / len(placed)
    for n, value in zip(row, placed):
        x[n] = value + shift


def layout(nodes, edges):
    """Positions ``{name: (x, y, w, h)}`` of the boxes and one polyline per edge.

    ``nodes``: ``{name: label}``; ``edges``: ``[(tail, head)]`` (tail above head).
    """
    names = list(nodes)
    edges = [(a, b) for a, b in edges if a in nodes and b in nodes and a != b]
    layer = _layers(names, edges)
    width, height = {}, {}
    for n in names:
        lines = str(nodes[n]).split("\n")
        width[n] = max(len(s) for s in lines) * CHAR_W + 2 * PAD_X
        height[n] = len(lines) * LINE_H + 2 * PAD_Y
    # edges across several layers pass through invisible points, one per layer crossed
    chains = []
    preds = {n: [] for n in names}
    succs = {n: [] for n in names}
    for k, (a, b) in enumerate(edges):
        chain = [a]
        lo, hi = sorted((layer[a], layer[b]))
        for depth in range(lo + 1, hi):
            point = ("dummy", k, depth)
            layer[point] = depth
            width[point], height[point] = 2.0, 0.0
            preds[point], succs[point] = [], []
            chain.append(point)
        chain.append(b)
        if layer[a] > layer[b]:  # an upward edge: the chain runs through the layers upward
            chain = [a] + chain[1:-1][::-1] + [b]
        for u, v in zip(chain, chain[1:]):
            if layer[u] < layer[v]:
                succs[u].append(v)
                preds[v].append(u)
            elif layer[u] > layer[v]:
                succs[v].append(u)
                preds[u].append(v)
        chains.append(chain)
    rows = [[] for _ in range(max(layer.values(), default=0) + 1)]
    for n in names + [p for chain in chains for p in chain[1:-1]]:
        rows[layer[n]].append(n)
    rows = _order(rows, preds, succs)
    x = {}
    for row in rows:
        left = 0.0
        for n in row:
            x[n] = left + width[n] / 2
            left += width[n] + NODE_GAP
        for n in row:
            x[n] -= left / 2
    for _ in range(3):
        for row in rows[1:]:
            if row:
                _place_row(row, x, width, preds)
        for row in reversed(rows[:-1]):
            if row:
                _place_row(row, x, width, succs)
    y, top = {}, 0.0
    for row in rows:
        h = max((height[n] for n in row), default=0.0)
        for n in row:
            y[n] = top - h / 2
        top -= h + LAYER_GAP
    boxes = {n: (x[n], y[n], width[n], height[n]) for n in names}
    lines = []
    for chain in chains:
        pts = [(x[p], y[p]) for p in chain]
        a, b = chain[0], chain[-1]
        down = 1 if y[a] >= y[b] else -1
        pts[0] = (x[a], y[a] - down * height[a] / 2)
        pts[-1] = (x[b], y[b] + down * height[b] / 2)
        lines.append(pts)
    return boxes, lines


def draw(nodes, edges, format="png"):
    """The picture's bytes in ``format`` (png, svg, pdf...; what matplotlib writes).

    ``nodes``: ``{name: (label, attrs)}`` (``fillcolor``); ``edges``: ``[(tail, head, attrs)]``
    (``dir=none``: no arrowhead). In SVG each label is one group, id ``node_<name>``.
    """
    import matplotlib
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.figure import Figure

    boxes, lines = layout({n: label for n, (label, _) in nodes.items()},
                          [(a, b) for a, b, _ in edges])
    if boxes:
        x0 = min(x - w / 2 for x, _, w, _ in boxes.values()) - 4
        x1 = max(x + w / 2 for x, _, w, _ in boxes.values()) + 4
        y0 = min(y - h / 2 for _, y, _, h in boxes.values()) - 4
        y1 = max(y + h / 2 for _, y, _, h in boxes.values()) + 4
    else:
        x0, x1, y0, y1 = 0.0, 8.0, 0.0, 8.0
    scale = min(1.0, MAX_INCHES * 72 / max(x1 - x0, y1 - y0))
    kept = [attrs for a, b, attrs in edges if a in nodes and b in nodes and a != b]
    heads = []  # a filled triangle at the head of each directed edge
    for attrs, pts in zip(kept, lines):
        if attrs.get("dir") == "none":
            continue
        (ax_, ay), (bx, by) = pts[-2], pts[-1]
        length = max(((bx - ax_) ** 2 + (by - ay) ** 2) ** 0.5, 1e-9)
        ux, uy = (bx - ax_) / length, (by - ay) / length
        size = min(ARROW, length)
        cx, cy = bx - ux * size, by - uy * size
        half = size * 0.35
        heads.append([(bx, by), (cx - uy * half, cy + ux * half), (cx + uy * half, cy - ux * half)])
    fills = []
    for _, attrs in nodes.values():
        colour = str(attrs.get("fillcolor", "lightgrey")).strip('"')
        colour = COLOURS.get(colour, colour)
        fills.append(colour if matplotlib.colors.is_color_like(colour) else COLOURS["lightgrey"])
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "numgrad"}):
        fig = Figure(figsize=((x1 - x0) * scale / 72, (y1 - y0) * scale / 72))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.set_axis_off()
        ax.add_collection(LineCollection(lines, colors="black", linewidths=scale), autolim=False)
        ax.add_collection(PolyCollection(heads, facecolors="black", edgecolors="black",
                                         linewidths=scale), autolim=False)
        rects = [[(x - w / 2, y - h / 2), (x + w / 2, y - h / 2), (x + w / 2, y + h / 2),
                  (x - w / 2, y + h / 2)] for x, y, w, h in (boxes[n] for n in nodes)]
        ax.add_collection(PolyCollection(rects, facecolors=fills, edgecolors="black",
                                         linewidths=scale), autolim=False)
        for n, (label, _) in nodes.items():
            x, y, _, _ = boxes[n]
            ax.text(x, y, str(label), ha="center", va="center", family="monospace",
                    fontsize=FONT_SIZE * scale, gid=f"node_{n}", linespacing=1.2)
        buf = io.BytesIO()
        fig.savefig(buf, format=format, dpi=96)
    return buf.getvalue()
