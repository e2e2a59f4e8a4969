"""Embedding as declared ops: ``embedding`` (``EmbeddingBackward0``) and its fused backward
``embedding_dense_backward`` (``EmbeddingDenseBackwardBackward0``): the rows of the gradient
added at the indices, whose own derivative gathers rows again (``embedding``), so every
order of derivative is these two ops. The gather plan is built on the host by
``numgrad.nn.functional.embedding``, which checks the arguments."""

import numpy as np

from numgrad import _arrays as A
from numgrad.autograd.grad_mode import no_grad
from numgrad.ops import elementwise as ew
from numgrad.ops import indexing as ix
from numgrad.ops._util import _wrap
from numgrad.ops.registry import op


def _row_scale(freq, like):
    """1 / (count of each position's index), shaped (*indices, 1), as a tensor like ``like``."""
    return _wrap(A.to_device(freq.astype(like._data.dtype), like.device))


def _keep_rows(padding_idx, rows, like):
    """A (rows, 1) mask that is 0 at the padding row (None when no row is dropped)."""
    if padding_idx is None or not 0 <= padding_idx < rows:
        return None
    keep = np.ones((rows, 1), like._data.dtype)
    keep[padding_idx] = 0
    return _wrap(A.to_device(A.constant(keep), like.device))


# d/dg <a, scatter(g s) keep> = gather(a keep) s: rows of a (the padding row zeroed) at the
# indices, scaled as the forward scaled g
def _dense_double(grad, indices, padding_idx, plan, freq):
    keep = _keep_rows(padding_idx, plan.in_shape[0], grad)
    a = grad if keep is None else ew.mul(grad, keep)
    rows = embedding(a, indices, None, plan, None)
    return rows if freq is None else ew.mul(rows, _row_scale(freq, grad))


@op(node="EmbeddingDenseBackwardBackward0", inputs=("grad_output",), variants=(),
    grads={"grad_output": _dense_double})
def embedding_dense_backward(grad_output, indices, padding_idx, plan, freq):
    """The weight's gradient: the rows of ``grad_output`` (times ``freq``, 1 / the count of
    each index, under scale_grad_by_freq) added at the indices, none to the padding row."""
    with no_grad():
        g = grad_output
        if freq is not None:
            g = ew.mul(g, _row_scale(freq, g))
        gw = ix._index_scatter(g, plan)
        keep = _keep_rows(padding_idx, plan.in_shape[0], g)
        if keep is not None:
            gw = ew.mul(gw, keep)
    return gw._data, {"indices": indices, "padding_idx": padding_idx, "plan": plan,
                      "freq": freq}


# d/dW embedding(idx, W) = embedding_dense_backward(g): rows of g added at idx
@op(node="EmbeddingBackward0", inputs=("weight",), variants=("functional",),
    grads={"weight": lambda grad, indices, padding_idx, plan, freq: embedding_dense_backward(
        grad, indices, padding_idx, plan, freq)})
def embedding(weight, indices, padding_idx, plan, freq):
    """The rows of ``weight`` at ``indices`` through the gather ``plan`` (``freq``: the
    scale_grad_by_freq factors or None)."""
    return ix._gather(weight._data, plan), {"indices": indices, "padding_idx": padding_idx,
                                            "plan": plan, "freq": freq}
