"""``embedding_bag`` as declared ops: ``_embedding_bag`` (``EmbeddingBagBackward0``): each
bag's sum, mean or max of weight rows, with ``padding_idx`` positions left out of the
reduction and of the bag's count (a bag of padding only gives zeros) and
``per_sample_weights`` in sum mode; and its two backward ops, the weight's gradient and the
per-sample weights' gradient, each declared with a derivative written with these same ops
(the three are linear in each argument, so they differentiate into one another). All run the
kernels of ``numgrad.kernels.embedding_bag`` on either device; the bags and each position's
bag are worked out on the host by ``numgrad.nn.functional.embedding_bag``."""

import numpy as np

from numgrad import _arrays as A
from numgrad.kernels import LazyKernels
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops._util import _wrap
from numgrad.ops.registry import op

EB = LazyKernels("embedding_bag")
_MODES = {"sum": 0, "mean": 1, "max": 2}


class Bags:
    """The host-side description of the bags: flat int64 indices ``idx``, each bag's
    positions ``starts[b]:ends[b]`` (``bags``: the (start, stop) pairs as given), the padding
    index (-1: none), the mode's code, the weight's row count and the per-sample weights'
    shape; after the forward, ``arg`` (the row that gave each max, -1: empty bag) and ``cnt``
    (each bag's count of non-padding positions)."""

    __slots__ = ("idx", "starts", "ends", "bags", "pad", "mode", "rows", "psw_shape", "_pos",
                 "arg", "cnt")

    def __init__(self, flat, bags, mode, padding_idx, rows, psw_shape):
        self.idx = A.astype(A.contiguous(flat._data).reshape(-1), np.int64)
        self.starts = np.array([a for a, _ in bags], np.int64)
        self.ends = np.array([max(a, e) for a, e in bags], np.int64)
        self.bags = bags
        self.pad = -1 if padding_idx is None else padding_idx
        self.mode = _MODES[mode]
        self.rows = rows
        self.psw_shape = psw_shape
        self._pos = self.arg = self.cnt = None

    def position_bags(self):
        """The bag of each position (-1: in none)."""
        if self._pos is None:
            pos = np.full(self.idx.shape[0], -1, np.int64)
            for b, (a, e) in enumerate(self.bags):
                if e > a:
                    pos[a:e] = b
            self._pos = pos
        return self._pos


def _psw_array(per_sample_weights, like):
    if per_sample_weights is None:
        return A.zeros(like, (1,), like.dtype)
    return A.astype(A.contiguous(per_sample_weights._data).reshape(-1), like.dtype)


def _max_gather(grad, max_indices):
    """out[b, d] = grad[max_indices[b, d], d], 0 for an empty bag (index -1)."""
    arg = _wrap(max_indices)
    live = ew.ge(arg, 0)
    picked = ix.gather(grad, 0, ew.where(live, arg, 0))
    return ew.where(live, picked, 0.0)


# ----------------------------------------------------------------------------------------
# the backward ops
# ----------------------------------------------------------------------------------------


# d/dg <a, dW> = the bags of a: bag(a) (sum, mean), a at the max's rows (max)
def _weight_backward_grad(grad, per_sample_weights, bags):
    if bags.mode == 2:
        return _max_gather(grad, bags.arg)
    return _embedding_bag(grad, per_sample_weights, bags)


# d/dpsw[i] <a, dW> = <g[bag of i], a[idx[i]]>
def _weight_backward_psw(grad, grad_out, bags):
    return _embedding_bag_per_sample_weights_backward(grad_out, grad, bags)


@op(node="EmbeddingBagBackwardBackward0", inputs=("grad_out", "per_sample_weights"),
    variants=(), grads={"grad_out": _weight_backward_grad,
                        "per_sample_weights": _weight_backward_psw})
def _embedding_bag_backward(grad_out, per_sample_weights, bags):
    """The weight's gradient: each bag's gradient added to the row that gave its max, or to
    every non-padding row of the bag (divided by the count for the mean, times the
    position's weight when given)."""
    ga = A.contiguous(grad_out._data)
    has_psw = per_sample_weights is not None
    out = A.zeros(ga, (bags.rows, ga.shape[1]), ga.dtype)
    EB.bag_weight_grad(ga, bags.idx, _psw_array(per_sample_weights, ga), bags.starts,
                       bags.ends, bags.arg, bags.cnt, out, bags.pad, bags.mode, has_psw)
    return out, {"bags": bags}


# d/dg <a, dpsw> = sum over the bag of a[i] W[idx[i]]: the bags of W weighted by a
def _psw_backward_grad(grad, weight, bags):
    return _embedding_bag(weight, grad, bags)


# d/dW <a, dpsw> = the weight's gradient of g with the positions weighted by a
def _psw_backward_weight(grad, grad_out, bags):
    return _embedding_bag_backward(grad_out, grad, bags)


@op(node="EmbeddingBagBackwardBackward0", inputs=("grad_out", "weight"), variants=(),
    grads={"grad_out": _psw_backward_grad, "weight": _psw_backward_weight})
def _embedding_bag_per_sample_weights_backward(grad_out, weight, bags):
    """The per-sample weights' gradient: <grad_out[bag of i], weight[idx[i]]> at each
    position i (0 for padding or a position in no bag)."""
    ga = A.contiguous(grad_out._data)
    w = A.contiguous(weight._data)
    n = bags.idx.shape[0]
    out = A.empty(ga, (n,), ga.dtype)
    EB.bag_psw_grad(ga, w, bags.idx, bags.position_bags(), out, bags.pad)
    return out.reshape(bags.psw_shape), {"bags": bags}


# ----------------------------------------------------------------------------------------
# the forward op
# ----------------------------------------------------------------------------------------


# d out[b] / d W[r] = 1 (sum), 1/count_b (mean) or [r gave the max] for each non-padding
# position of bag b holding r, times psw[i]
def _bag_weight(grad, per_sample_weights, bags):
    return _embedding_bag_backward(grad, per_sample_weights, bags)


# d out[b] / d psw[i] = W[idx[i]] for the positions i of bag b
def _bag_psw(grad, weight, bags):
    return _embedding_bag_per_sample_weights_backward(grad, weight, bags)


@op(node="EmbeddingBagBackward0", inputs=("weight", "per_sample_weights"),
    variants=("functional",), grads={"weight": _bag_weight, "per_sample_weights": _bag_psw})
def _embedding_bag(weight, per_sample_weights, bags):
    """The (B, D) bag reductions of ``weight`` rows at ``bags``' indices (checked in range by
    the caller)."""
    w = A.contiguous(weight._data)
    has_psw = per_sample_weights is not None
    n_bags, dim = len(bags.bags), w.shape[1]
    out = A.empty(w, (n_bags, dim), w.dtype)
    arg = A.empty(w, (n_bags, dim), np.int64)
    cnt = A.empty(w, (n_bags,), np.int64)
    if n_bags:
        EB.bag_forward(w, bags.idx, _psw_array(per_sample_weights, w), bags.starts,
                       bags.ends, out, arg, cnt, bags.pad, bags.mode, has_psw)
    if bags.cnt is None:  # the first run's: the gradients' (a derivative runs it again)
        bags.arg, bags.cnt = arg, cnt
    return out, {"bags": bags}
