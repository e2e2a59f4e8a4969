"""Pictures of the autograd graph, drawn the way torchviz draws PyTorch's.

``make_dot(output, params=None)`` returns a ``Digraph`` whose ``source`` is Graphviz DOT:
the output tensor (green), one box per node (``MulBackward0`` ...), leaf tensors in place of
their ``AccumulateGrad`` (blue, named from ``params``), optionally the tensors each node
saved (orange). ``render()``/``pipe()`` write SVG/PNG/PDF through the optional ``graphviz``
Python package and the Graphviz ``dot`` program (``pip install "numgrad[viz]"`` and, e.g.,
``apt install graphviz``); without them, a layered layout drawn by matplotlib
(``numgrad/_graph_layout.py``) gives the picture; ``save`` writes the DOT text.
"""

import shutil

import numpy as np

from numgrad.autograd.graph import AccumulateGrad
from numgrad.tensor import Tensor

NODE_STYLE = ('node [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 '
              'shape=box style=filled]')


def _size(shape):
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


class Digraph:
    """DOT source of a graph, renderable when Graphviz is installed."""

    def __init__(self):
        self._lines = []
        self._nodes = {}  # name -> (label, attrs), for the drawing without Graphviz
        self._edges = []

    def node(self, name, label, **attrs):
        extra = "".join(f" {k}={v}" for k, v in attrs.items())
        self._lines.append(f"\t{name} [label={_quote(label)}{extra}]")
        self._nodes[str(name)] = (str(label), attrs)

    def edge(self, a, b, **attrs):
        extra = " [" + " ".join(f"{k}={v}" for k, v in attrs.items()) + "]" if attrs else ""
        self._lines.append(f"\t{a} -> {b}{extra}")
        self._edges.append((str(a), str(b), attrs))

    @property
    def source(self):
        return "digraph {\n\tgraph [size=\"12,12\"]\n\t" + NODE_STYLE + "\n" + \
            "\n".join(self._lines) + "\n}\n"

    def __str__(self):
        return self.source

    def _repr_svg_(self):  # notebooks show the picture when Graphviz is there
        try:
            return self.pipe("svg").decode()
        except RuntimeError:
            return None

    def pipe(self, format="svg"):
        """The picture's bytes: Graphviz's where ``dot`` is installed, else matplotlib's."""
        graphviz = _graphviz_or_none()
        if graphviz is None:
            return self._draw(format)
        return graphviz.Source(self.source).pipe(format=format)

    def render(self, filename="graph", format="svg", cleanup=True, view=False):
        """Write ``filename.<format>`` (keeping the DOT file unless ``cleanup``)."""
        graphviz = _graphviz_or_none()
        if graphviz is not None:
            return graphviz.Source(self.source).render(filename, format=format,
                                                       cleanup=cleanup, view=view)
        picture = self._draw(format)  # without dot: matplotlib's drawing (view is ignored)
        filename = str(filename)
        if not cleanup:
            self.save(filename)
        path = f"{filename}.{format}"
        with open(path, "wb") as fh:
            fh.write(picture)
        return path

    def _draw(self, format):
        from numgrad import _graph_layout
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            _graphviz()  # neither Graphviz nor matplotlib: raises the message naming both
            raise
        import matplotlib.figure
        formats = matplotlib.figure.Figure().canvas.get_supported_filetypes()
        if format not in formats:
            raise ValueError(
                f"without Graphviz's dot program the graph is drawn by matplotlib, which "
                f"writes {', '.join(sorted(formats))}, not {format!r}")
        return _graph_layout.draw(self._nodes, self._edges, format=format)

    def save(self, filename="graph.dot"):
        with open(filename, "w") as fh:
            fh.write(self.source)
        return filename


def _graphviz_or_none():
    """The graphviz package where it and ``dot`` are installed, else None."""
    try:
        import graphviz
    except ImportError:
        return None
    return graphviz if shutil.which("dot") is not None else None


def _graphviz():
    try:
        import graphviz
    except ImportError:
        raise RuntimeError(
            "rendering the graph needs matplotlib (pip install matplotlib), or the graphviz "
            "Python package and the Graphviz 'dot' program: pip install \"numgrad[viz]\" (or "
            "pip install graphviz) and install Graphviz (e.g. apt install graphviz). "
            "Digraph.source has the DOT text meanwhile."
        ) from None
    if shutil.which("dot") is None:
        raise RuntimeError(
            "rendering the graph needs matplotlib (pip install matplotlib), or the Graphviz "
            "'dot' program on PATH (e.g. apt install graphviz, brew install graphviz). "
            "Digraph.source has the DOT text meanwhile.")
    return graphviz


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50):
    """The autograd graph of ``var`` (a tensor or a sequence of tensors) as a Digraph."""
    param_names = {id(v): k for k, v in (params or {}).items()}
    dot = Digraph()
    seen = set()

    def tensor_label(t, name=None):
        name = param_names.get(id(t), name or "")
        return f"{name}\n {_size(t._data.shape)}"

    def fn_label(fn):
        name = type(fn).__name__
        if not show_attrs:
            return name
        lines = [name]
        for attr in getattr(type(fn), "_names_of_saved", ()):
            try:
                value = getattr(fn, "_saved_" + attr)
            except RuntimeError:
                continue
            text = (_size(value._data.shape) if isinstance(value, Tensor) else str(value))
            lines.append(f"{attr}: {text[:max_attr_chars]}")
        return "\n".join(lines)

    stack = []
    outputs = var if isinstance(var, (tuple, list)) else (var,)
    for t in outputs:
        dot.node(str(id(t)), tensor_label(t), fillcolor="darkolivegreen1")
        if t.grad_fn is not None:
            stack.append(t.grad_fn)
            dot.edge(str(id(t.grad_fn)), str(id(t)))
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if isinstance(fn, AccumulateGrad):
            dot.node(str(id(fn)), tensor_label(fn.variable), fillcolor="lightblue")
        else:
            dot.node(str(id(fn)), fn_label(fn))
            if show_saved and fn._saved:
                names = getattr(type(fn), "_names_of_saved", ())
                for k, value in enumerate(fn._saved):
                    if names and k >= len(names):
                        break  # past PyTorch's saved names: numgrad's own extras
                    if isinstance(value, (Tensor, np.ndarray)):
                        arr = value._data if isinstance(value, Tensor) else value
                        sid = f"{id(fn)}_saved{k}"
                        label = names[k] if k < len(names) else f"saved {k}"
                        dot.node(sid, f"{label}\n {_size(arr.shape)}", fillcolor="orange")
                        dot.edge(sid, str(id(fn)), dir="none")
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                dot.edge(str(id(nxt)), str(id(fn)))
                if id(nxt) not in seen:
                    stack.append(nxt)
    return dot
