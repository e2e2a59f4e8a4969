"""``embedding_bag`` as one op (``EmbeddingBagBackward0``): each bag's sum, mean or max of
weight rows, with ``padding_idx`` positions left out of the reduction and of the bag's count
(a bag of padding only gives zeros) and ``per_sample_weights`` in sum mode. Forward and
both gradients run the kernels of ``numgrad.kernels.embedding_bag`` on either device; the
bags and each position's bag are worked out on the host."""

import numpy as np

from numgrad import _arrays as A
from numgrad.autograd.graph import Node
from numgrad.kernels import LazyKernels
from numgrad.ops._util import _wrap, attach, edge, state

EB = LazyKernels("embedding_bag")
_MODES = {"sum": 0, "mean": 1, "max": 2}


def _position_bags(n, bags):
    """The bag of each of the n positions (-1: in none), from the bags' (start, stop)."""
    pos = np.full(n, -1, np.int64)
    for b, (a, e) in enumerate(bags):
        if e > a:
            pos[a:e] = b
    return pos


class EmbeddingBagBackward0(Node):
    __slots__ = ()
    _names_of_saved = ()

    # d out[b] / d W[r] = 1 (sum), 1/count_b (mean) or [r gave the max] for each
    # non-padding position of bag b holding r, times psw[i]; d out[b] / d psw[i] = W[idx[i]]
    def _backward(self, g):
        (w, idx, psw, starts, ends, arg, cnt, pad, mode, bags, psw_shape) = self._saved
        has_psw = psw is not None
        nw, np_ = self.next_functions if has_psw else (self.next_functions[0], (None, 0))
        if state.enabled and (has_psw or g._requires_grad):
            raise NotImplementedError("embedding_bag: a differentiable gradient (create_graph="
                                      "True) is not supported by numgrad")
        ga = A.contiguous(g._data)
        psw_arr = psw if has_psw else A.zeros(ga, (1,), ga.dtype)
        K = EB.on(ga)
        gw = None
        if nw[0] is not None:
            out = A.zeros(ga, w.shape, ga.dtype)
            K.bag_weight_grad(ga, idx, psw_arr, starts, ends, arg, cnt, out, pad, mode, has_psw)
            gw = _wrap(out)
        gp = None
        if has_psw and np_[0] is not None:
            out = A.empty(ga, (idx.shape[0],), ga.dtype)
            K.bag_psw_grad(ga, w, idx, _position_bags(idx.shape[0], bags), out, pad)
            gp = _wrap(out.reshape(psw_shape))
        return (gw, gp) if has_psw else (gw,)


def embedding_bag_op(flat, weight, bags, mode, per_sample_weights, padding_idx):
    """The (B, D) bag reductions of ``weight`` rows at the int ``flat`` indices (checked in
    range); ``bags`` lists each bag's (start, stop) positions in ``flat``."""
    w = A.contiguous(weight._data)
    idx = A.astype(A.contiguous(flat._data).reshape(-1), np.int64)
    starts = np.array([a for a, _ in bags], np.int64)
    ends = np.array([max(a, e) for a, e in bags], np.int64)
    n_bags, dim = len(bags), w.shape[1]
    has_psw = per_sample_weights is not None
    psw = (A.astype(A.contiguous(per_sample_weights._data).reshape(-1), w.dtype) if has_psw
           else A.zeros(w, (1,), w.dtype))
    pad = -1 if padding_idx is None else padding_idx
    code = _MODES[mode]
    out = A.empty(w, (n_bags, dim), w.dtype)
    arg = A.empty(w, (n_bags, dim), np.int64)
    cnt = A.empty(w, (n_bags,), np.int64)
    if n_bags:
        EB.on(w).bag_forward(w, idx, psw, starts, ends, out, arg, cnt, pad, code, has_psw)
    res = _wrap(out)
    parts = (weight, per_sample_weights) if has_psw else (weight,)
    if state.enabled and any(t._requires_grad for t in parts):
        attach(res, EmbeddingBagBackward0(tuple(edge(t) for t in parts), (
            w, idx, psw if has_psw else None, starts, ends, arg, cnt, pad, code, bags,
            tuple(per_sample_weights.shape) if has_psw else None)))
    return res
