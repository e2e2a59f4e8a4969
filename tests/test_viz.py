"""make_dot: the graph as torchviz draws it, DOT always, pictures when Graphviz is installed."""

import importlib.util
import shutil

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


def test_clear_message_without_graphviz(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    _, _, z = _seed_graph()
    with pytest.raises(RuntimeError, match="Graphviz"):
        make_dot(z).render("unused")
