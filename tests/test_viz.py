"""make_dot: the graph as torchviz draws it; pictures by Graphviz, or by matplotlib without it."""

import importlib.util
import os
import re
import shutil
import sys

import numpy as np
import pytest

import numgrad as ng
from numgrad.viz import make_dot

HAVE_GRAPHVIZ = importlib.util.find_spec("graphviz") is not None and shutil.which("dot")


def _seed_graph():
    x = ng.rand(5, 5, requires_grad=True)
    y = ng.rand(5, 5, requires_grad=True)
    return x, y, x ** 2 + y ** 3


def test_dot_source_has_tensors_nodes_and_edges():
    x, y, z = _seed_graph()
    src = make_dot(z, params={"x": x, "y": y}).source
    assert src.startswith("digraph {")
    assert src.count('label="PowBackward0"') == 2 and src.count('label="AddBackward0"') == 1
    assert 'label="x\n (5, 5)" fillcolor=lightblue' in src
    assert 'label="y\n (5, 5)" fillcolor=lightblue' in src
    assert "fillcolor=darkolivegreen1" in src
    add = z.grad_fn
    for fn, _ in add.next_functions:
        assert f"{id(fn)} -> {id(add)}" in src
    assert f"{id(add)} -> {id(z)}" in src
    assert src.count("->") == 5


def test_saved_tensors_and_attrs():
    x = ng.rand(3, requires_grad=True)
    y = x.exp() * x
    src = make_dot(y, show_saved=True, show_attrs=True).source
    assert "fillcolor=orange" in src and "result\n (3)" in src


@pytest.mark.skipif(not HAVE_GRAPHVIZ, reason="graphviz package or dot program missing")
def test_render_svg(tmp_path):
    _, _, z = _seed_graph()
    path = make_dot(z).render(str(tmp_path / "g"), format="svg")
    assert open(path).read().lstrip().startswith("<?xml")


def _labels(source):
    """{node name: label} of the DOT source."""
    found = re.findall(r'^\t(\S+) \[label="((?:[^"\\]|\\.)*)"', source, flags=re.M)
    return {name: re.sub(r"\\(.)", r"\1", label) for name, label in found}


def _mlp_graph():
    ng.manual_seed(0)
    model = ng.nn.Sequential(ng.nn.Linear(3, 4), ng.nn.ReLU(), ng.nn.Linear(4, 2))
    out = model(ng.rand(2, 3)).pow(2).sum() + model[0].weight.sum()
    return make_dot(out, params=dict(model.named_parameters()), show_saved=True)


def test_png_without_dot(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.image
    monkeypatch.setattr(shutil, "which", lambda name: None)
    dot = _mlp_graph()
    path = dot.render(str(tmp_path / "g"), format="png", cleanup=False)
    assert path == str(tmp_path / "g.png")
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert pixels[..., :3].min() < 0.1  # something drawn in black
    assert open(tmp_path / "g").read() == dot.source  # cleanup=False keeps the DOT file
    assert dot.pipe("png")[:8] == data[:8]


def test_svg_without_dot_has_every_label(monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    import xml.etree.ElementTree as ET
    monkeypatch.setattr(shutil, "which", lambda name: None)
    x, y, z = _seed_graph()
    for dot in (make_dot(z, params={"x": x, "y": y}), _mlp_graph()):
        path = dot.render(str(tmp_path / "g"), format="svg")
        assert not os.path.exists(tmp_path / "g")
        ns = "{http://www.w3.org/2000/svg}"
        drawn = {}
        for group in ET.parse(path).getroot().iter(ns + "g"):
            gid = group.get("id", "")
            if gid.startswith("node_"):
                texts = [t.text or "" for t in group.iter(ns + "text")]
                drawn[gid[5:]] = "\n".join(texts)
        assert drawn == _labels(dot.source)


def test_layout_is_layered_without_overlaps():
    from numgrad._graph_layout import layout
    rng = np.random.default_rng(0)
    for _ in range(5):
        n = 12
        edges = [(f"n{a}", f"n{b}") for a in range(n) for b in range(a + 1, n)
                 if rng.random() < 0.25]
        boxes, lines = layout({f"n{i}": f"node {i}" for i in range(n)}, edges)
        for (a, b), pts in zip(edges, lines):
            assert boxes[a][1] > boxes[b][1]  # every edge points down
            assert all(p[1] > q[1] for p, q in zip(pts, pts[1:]))
        rows = {}
        for x, y, w, _ in boxes.values():
            rows.setdefault(y, []).append((x - w / 2, x + w / 2))
        for spans in rows.values():
            spans.sort()
            assert all(r[1] < s[0] for r, s in zip(spans, spans[1:]))


def test_clear_message_without_graphviz_or_matplotlib(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    _, _, z = _seed_graph()
    with pytest.raises(RuntimeError, match="matplotlib.*Graphviz"):
        make_dot(z).render("unused")
