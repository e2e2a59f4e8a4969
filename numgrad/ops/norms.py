"""Layer norm as declared ops: ``native_layer_norm`` (``NativeLayerNormBackward0``) and its
fused backward ops, the input's and the weight's gradient
(``NativeLayerNormBackwardBackward0``), each with its own derivative written with numgrad
ops, so double backward needs no second copy of the math. The rows are the
(M, K) view of the input over the normalized trailing dims; the kernels are the layer-norm
row kernels of ``numgrad.kernels`` (statistics in float64). ``numgrad.nn.functional`` keeps
PyTorch's argument checks and calls ``native_layer_norm``.
"""

import math

import numpy as np

from numgrad import _arrays as A
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import LazyKernels, Tensor, _wrap, state
from numgrad.ops.registry import op

NN = LazyKernels("nn")


def _rows(t, normalized_shape):
    return sh.reshape(t, (-1, math.prod(normalized_shape)))


def normalized_rows(x2, eps):
    """xhat = (x - mean) r and r = 1 / sqrt(var + eps) per row, as numgrad ops (so they are
    differentiable in x)."""
    d = ew.sub(x2, red.mean(x2, 1, keepdim=True))
    r = ew.pow(ew.add(red.mean(ew.mul(d, d), 1, keepdim=True), eps), -0.5)
    return ew.mul(d, r), r


def _times_weight(t, weight):
    return t if weight is None else ew.mul(t, weight)


def _row_sum(t, normalized_shape):
    """The sum over the rows (the leading dims): a tensor of ``normalized_shape``."""
    return sh.reshape(red.sum(_rows(t, normalized_shape), 0), tuple(normalized_shape))


# ----------------------------------------------------------------------------------------
# the backward ops
# ----------------------------------------------------------------------------------------


def _rpa(a, input, result1, result2, normalized_shape, eps):
    """r P(a) per row (P v = v - m(v) - xhat m(v xhat), m the row mean)."""
    return layer_norm_input_backward(a, input, None, result1, result2, normalized_shape, eps)


# with dx = r P(h), h = g gamma, dxhat/dx = r P, dr/dx = -r^2 xhat / K, per row:
# d/dx <a, dx> = -r [r xhat (m((a - m(a)) h) - m(a xhat) m(h xhat)) + m(h xhat) r P(a)
#                    + m(a xhat) r P(h)]
def _input_curvature(grad, grad_out, input, weight, result1, result2, normalized_shape, eps):
    h = _times_weight(grad_out, weight)
    rpa = _rows(_rpa(grad, input, result1, result2, normalized_shape, eps), normalized_shape)
    rph = _rows(_rpa(h, input, result1, result2, normalized_shape, eps), normalized_shape)
    return row_curvature(_rows(grad, normalized_shape), _rows(h, normalized_shape), rpa, rph,
                         _rows(input, normalized_shape), eps, tuple(input.shape))


def row_curvature(a2, h2, rpa, rph, x2, eps, shape):
    """The curvature term shared by the row norms (layer and group norm) on rows: a2, h2
    the two gradients, rpa, rph their r P(.) projections, x2 the input, reshaped to shape."""
    xh, r = normalized_rows(x2, eps)
    mah = red.mean(ew.mul(a2, xh), 1, keepdim=True)
    mhh = red.mean(ew.mul(h2, xh), 1, keepdim=True)
    mdh = red.mean(ew.mul(ew.sub(a2, red.mean(a2, 1, keepdim=True)), h2), 1, keepdim=True)
    along = ew.mul(ew.mul(xh, r), ew.sub(mdh, ew.mul(mah, mhh)))
    total = ew.add(ew.add(along, ew.mul(rpa, mhh)), ew.mul(rph, mah))
    return sh.reshape(ew.neg(ew.mul(total, r)), shape)


# dx = r P(g gamma) is linear in g and P is symmetric: d/dg <a, dx> = gamma r P(a)
def _input_backward_grad_out(grad, input, weight, result1, result2, normalized_shape, eps):
    return _times_weight(_rpa(grad, input, result1, result2, normalized_shape, eps), weight)


# d/dgamma <a, dx> = sum over the rows of g r P(a)
def _input_backward_weight(grad, grad_out, input, result1, result2, normalized_shape, eps):
    return _row_sum(ew.mul(grad_out, _rpa(grad, input, result1, result2, normalized_shape,
                                          eps)), normalized_shape)


@op(node="NativeLayerNormBackwardBackward0", inputs=("grad_out", "input", "weight"),
    variants=(), grads={"grad_out": _input_backward_grad_out, "input": _input_curvature,
                        "weight": _input_backward_weight})
def layer_norm_input_backward(grad_out, input, weight, result1, result2, normalized_shape,
                              eps):
    """The input's gradient of layer norm: per row rstd (h - mean(h) - xhat mean(h xhat)),
    h = grad_out gamma (``result1``, ``result2``: the forward's float64 mean and rstd)."""
    k = math.prod(normalized_shape)
    x2 = A.contiguous(input._data).reshape(-1, k)
    g2 = A.contiguous(grad_out._data).reshape(-1, k)
    gam = weight._data.reshape(-1) if weight is not None else A.ones(x2, k, x2.dtype)
    gx = A.empty(x2, x2.shape, x2.dtype)
    NN.layer_norm_bwd_input(g2, x2, result1, result2, gam, gx)
    return gx.reshape(input._data.shape), {
        "result1": result1, "result2": result2, "normalized_shape": normalized_shape,
        "eps": eps}


# d/dg sum_rows g xhat = xhat ggamma
def _weight_backward_grad_out(grad, input, normalized_shape, eps):
    xhat = sh.reshape(normalized_rows(_rows(input, normalized_shape), eps)[0], tuple(input.shape))
    return ew.mul(xhat, grad)


# d/dx sum_rows q xhat = r P(q), q = g ggamma
def _weight_backward_input(grad, grad_out, input, result1, result2, normalized_shape, eps):
    return _rpa(ew.mul(grad_out, grad), input, result1, result2, normalized_shape, eps)


@op(node="NativeLayerNormBackwardBackward0", inputs=("grad_out", "input"), variants=(),
    grads={"grad_out": _weight_backward_grad_out, "input": _weight_backward_input})
def layer_norm_weight_backward(grad_out, input, result1, result2, normalized_shape, eps):
    """The weight's gradient of layer norm: the sum over the rows of grad_out xhat (in
    float64, rounded once)."""
    k = math.prod(normalized_shape)
    x2 = A.contiguous(input._data).reshape(-1, k)
    g2 = A.contiguous(grad_out._data).reshape(-1, k)
    ggam = A.empty(x2, k, x2.dtype)
    gbet = A.empty(x2, k, x2.dtype)
    NN.layer_norm_bwd_params(g2, x2, result1, result2, ggam, gbet)
    return ggam.reshape(normalized_shape), {
        "result1": result1, "result2": result2, "normalized_shape": normalized_shape,
        "eps": eps}


# ----------------------------------------------------------------------------------------
# the forward op
# ----------------------------------------------------------------------------------------


# per row: dx = rstd (h - mean(h) - xhat mean(h xhat)), h = g gamma
def _ln_input(grad, input, weight, result1, result2, normalized_shape, eps):
    return layer_norm_input_backward(grad, input, weight, result1, result2, normalized_shape,
                                     eps)


# dgamma = sum_rows g xhat
def _ln_weight(grad, input, result1, result2, normalized_shape, eps):
    return layer_norm_weight_backward(grad, input, result1, result2, normalized_shape, eps)


# dbeta = sum_rows g
def _ln_bias(grad, normalized_shape):
    return _row_sum(grad, normalized_shape)


@op(node="NativeLayerNormBackward0", inputs=("input", "weight", "bias"),
    variants=("functional",),
    save=("input", "weight", "bias", "result1", "result2", "normalized_shape", "eps"),
    grads={"input": _ln_input, "weight": _ln_weight, "bias": _ln_bias})
def native_layer_norm(input, weight, bias, normalized_shape, eps):
    """Layer norm of a nonempty float input over its trailing ``normalized_shape`` dims (the
    caller checks the shapes and dtypes): each row normalized, scaled and shifted."""
    x = input._data
    k = math.prod(normalized_shape)  # Python ints (np.prod costs a few us per call)
    x2 = A.contiguous(x).reshape(-1, k)
    gam = weight._data.reshape(-1) if weight is not None else A.ones(x, k, x.dtype)
    bet = bias._data.reshape(-1) if bias is not None else A.zeros(x, k, x.dtype)
    out = A.empty(x, x2.shape, x.dtype)
    mean = A.empty(x, x2.shape[0], np.float64)
    rstd = A.empty(x, x2.shape[0], np.float64)
    NN.layer_norm_fwd(
        x2, gam.astype(x.dtype, copy=False), bet.astype(x.dtype, copy=False), float(eps),
        out, mean, rstd)
    return out.reshape(x.shape), {"result1": mean, "result2": rstd,
                                  "normalized_shape": tuple(normalized_shape), "eps": float(eps)}


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def layer_norm_no_graph(input, normalized_shape, weight, bias, eps):
    """``native_layer_norm``'s output where nothing records it (grad mode off or no argument
    requiring grad; the caller checks that no trace, profiler or exporter watches) for a
    nonempty float32 or float64 host tensor whose trailing dims are ``normalized_shape`` (a
    tuple of ints) and parameters of that shape and dtype (or None), ``eps`` a float: the
    op's kernel without the argument parsing and the op around it, whose checks all pass for
    such arguments. None: the checked path. (Token-by-token generation calls it 9 times a
    token.)"""
    if not isinstance(input, Tensor) or normalized_shape.__class__ is not tuple or \
            eps.__class__ is not float:
        return None
    x = input._data
    dt = x.dtype
    if x.__class__ is not np.ndarray or dt not in _FLOATS or not x.size:
        return None
    n = len(normalized_shape)
    if not n or x.ndim < n or x.shape[x.ndim - n:] != normalized_shape or \
            any(d.__class__ is not int for d in normalized_shape):
        return None
    needs = state.enabled and input._requires_grad
    params = []
    for t in (weight, bias):
        if t is None:
            params.append(None)
            continue
        if not isinstance(t, Tensor):
            return None
        d = t._data
        if d.__class__ is not np.ndarray or d.dtype != dt or d.shape != normalized_shape:
            return None
        needs = needs or (state.enabled and t._requires_grad)
        params.append(d.reshape(-1))
    if needs:
        return None
    k = math.prod(normalized_shape)
    x2 = A.contiguous(x).reshape(-1, k)
    gam, bet = params
    out = A.empty(x, x2.shape, dt)
    rows = x2.shape[0]
    NN.layer_norm_fwd(x2, gam if gam is not None else A.ones(x, k, dt),
                      bet if bet is not None else A.zeros(x, k, dt), eps, out,
                      A.empty(x, rows, np.float64), A.empty(x, rows, np.float64))
    return _wrap(out.reshape(x.shape))
