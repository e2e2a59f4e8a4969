"""One named node for an op built as a composite of other ops (a 3-D layer run through the
2-D ops, say), so that its ``grad_fn`` is PyTorch's single node (``ConvolutionBackward0``,
``MaxPool3DWithIndicesBackward0``, ...) with PyTorch's ``next_functions``.

``record(name, forward, inputs, saved)`` runs ``forward`` on fresh leaves holding the inputs'
data (own version counters: the in-place checks are the node's, on ``saved``, as PyTorch's)
with recording on, and gives the result the node ``name``. Its backward differentiates the
recorded sub-graph; under create_graph it re-runs ``forward`` on the real inputs, so that the
gradients are functions of them (double backward through the composite). The sub-graph lives
in the node's saved values: freed after a backward without retain_graph, as any node's.
"""

from numgrad import _arrays
from numgrad.autograd.graph import Node
from numgrad.ops._util import _wrap, attach, edge, needs_grad, state

_CLASSES = {}


class _Composite(Node):
    __slots__ = ()

    # d out / d inputs: the chain rule through the recorded composite (the pieces' own rules)
    def _backward(self, g):
        from numgrad.autograd import grad
        out, leaves, forward, inputs = self._saved[-1]
        nf = self.next_functions
        want = [i for i, t in enumerate(inputs)
                if t is not None and nf[i][0] is not None and t._requires_grad]
        res = [None] * len(inputs)
        if not want:
            return tuple(res)
        if not out._requires_grad:  # a constant output (pdist with p = 0): zero gradients
            for i in want:
                res[i] = _zeros(inputs[i])
            return tuple(res)
        if state.enabled:  # create_graph: the gradients as functions of the real inputs
            y = forward(*inputs)
            y = y[0] if isinstance(y, tuple) else y
            wrt = [inputs[i] for i in want]
        else:
            y, wrt = out, [leaves[i] for i in want]
        gs = grad(y, wrt, g, retain_graph=True, create_graph=state.enabled, allow_unused=True)
        for i, gi in zip(want, gs):  # an input the composite does not use: zeros, as PyTorch
            res[i] = _zeros(inputs[i]) if gi is None else gi
        return tuple(res)


def _zeros(t):
    d = t._data
    return _wrap(_arrays.zeros(d, d.shape, d.dtype))


def _node_class(name, names_of_saved):
    cls = _CLASSES.get((name, names_of_saved))
    if cls is None:
        cls = _CLASSES[(name, names_of_saved)] = type(
            name, (_Composite,), {"__slots__": (), "_names_of_saved": names_of_saved})
    return cls


def record(name, forward, inputs, saved=(), names_of_saved=()):
    """``forward(*inputs)`` (a tensor, or a tuple whose first tensor is the differentiable
    output) recorded as one node ``name`` with an edge per input (``None`` inputs give
    PyTorch's ``(None, 0)``); ``saved`` are the tensors PyTorch saves (in-place checks, and
    ``node._saved_<names_of_saved[i]>``)."""
    if not needs_grad(*(t for t in inputs if t is not None)):
        return forward(*inputs)
    leaves = []
    for t in inputs:
        leaf = None
        if t is not None:
            leaf = _wrap(t._data)
            leaf._requires_grad = t._requires_grad
        leaves.append(leaf)
    res = forward(*leaves)
    sub = res[0] if isinstance(res, tuple) else res
    node = _node_class(name, tuple(names_of_saved))(
        tuple(edge(t) if t is not None else (None, 0) for t in inputs),
        tuple(saved) + ((sub, tuple(leaves), forward, tuple(inputs)),))
    out = attach(_wrap(sub._data), node)
    return (out,) + tuple(res[1:]) if isinstance(res, tuple) else out
