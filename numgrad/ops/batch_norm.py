"""Batch norm as declared ops: ``native_batch_norm`` (``NativeBatchNormBackward0``) and its
fused backward ops, the input's, the weight's and the bias's gradient
(``NativeBatchNormBackwardBackward0``), each with its own derivative written with numgrad
ops, so double backward needs no second copy of the math.

Every channel is one "row" of the (N, C, L) view: in training its statistics are the batch's
(``P v = v - m(v) - xhat m(v xhat)``, m the mean over the channel, is layer norm's projection
on the channel rows, so the curvature term is ``norms.row_curvature``); in evaluation they
are the running ones, constants in the input. The kernels are the batch-norm kernels of
``numgrad.kernels`` (statistics and gradient sums in float64). ``numgrad.nn.functional``
keeps PyTorch's argument checks and calls ``native_batch_norm``.
"""

import numpy as np

from numgrad import _arrays as A
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, LazyKernels, _wrap
from numgrad.ops.norms import normalized_rows, row_curvature
from numgrad.ops.registry import op

NN = LazyKernels("nn")


def _channel_view(t, ndim):
    """A per-channel (C,) tensor shaped to broadcast over (N, C, *spatial)."""
    return sh.reshape(t, (1, -1) + (1,) * (ndim - 2))


def _channel_sum(t):
    """sum over the batch and space of (N, C, *spatial): a (C,) tensor."""
    n, c = t.shape[:2]
    return red.sum(sh.reshape(t, (n, c, -1)), (0, 2))


def _channel_rows(t):
    """(N, C, *spatial) as its (C, N L) rows, one per channel."""
    n, c = t.shape[:2]
    return sh.reshape(sh.permute(sh.reshape(t, (n, c, -1)), (1, 0, 2)), (c, -1))


def _from_rows(t2, shape):
    """The inverse of ``_channel_rows``."""
    n, c = shape[:2]
    return sh.reshape(sh.permute(sh.reshape(t2, (c, n, -1)), (1, 0, 2)), shape)


def _times_weight(t, weight):
    return t if weight is None else ew.mul(t, _channel_view(weight, t.dim()))


def _stat(a, like):
    """A float64 per-channel statistic as a constant (1, C, 1, ...) tensor in like's dtype."""
    return _channel_view(_wrap(A.astype(a, like._data.dtype)), like.dim())


def _xhat(input, mean, invstd, training, eps):
    """(x - mean) invstd as numgrad ops: the batch's statistics (differentiable in x) in
    training, the running ones (constants) in evaluation."""
    if training:
        return _from_rows(normalized_rows(_channel_rows(input), eps)[0], tuple(input.shape))
    return ew.mul(ew.sub(input, _stat(mean, input)), _stat(invstd, input))


def _sums(grad_out, input, mean, invstd):
    """Per channel, in float64: sum g and sum g xhat (one pass of the sums kernel)."""
    x = input._data
    n, c = x.shape[:2]
    x3 = A.contiguous(x).reshape(n, c, -1)
    g3 = A.contiguous(grad_out._data).reshape(n, c, -1)
    sum_g = A.empty(x3, c, np.float64)
    sum_gxhat = A.empty(x3, c, np.float64)
    NN.batch_norm_bwd_sums(g3, x3, mean, invstd, sum_g, sum_gxhat)
    return sum_g, sum_gxhat


# ----------------------------------------------------------------------------------------
# the backward ops
# ----------------------------------------------------------------------------------------


def _rpa(a, input, mean, invstd, training, eps):
    """r P(a) per channel in training, r a in evaluation."""
    return batch_norm_input_backward(a, input, None, mean, invstd, training, eps)


# with dx = r P(h), h = g gamma (training): as layer norm's, on the channel rows; in
# evaluation dx = r h does not depend on x (no gradient, as in PyTorch)
def _input_curvature(grad, grad_out, input, weight, mean, invstd, training, eps):
    if not training:
        return None
    h = _times_weight(grad_out, weight)
    rpa = _channel_rows(_rpa(grad, input, mean, invstd, training, eps))
    rph = _channel_rows(_rpa(h, input, mean, invstd, training, eps))
    c = input.shape[1]
    curv = row_curvature(_channel_rows(grad), _channel_rows(h), rpa, rph,
                         _channel_rows(input), eps, (c, input.numel() // c))
    return _from_rows(curv, tuple(input.shape))


# dx = r P(g gamma) (r g gamma in evaluation) is linear in g and P is symmetric:
# d/dg <a, dx> = gamma r P(a)
def _input_backward_grad_out(grad, input, weight, mean, invstd, training, eps):
    return _times_weight(_rpa(grad, input, mean, invstd, training, eps), weight)


# d/dgamma_c <a, dx> = sum over the channel of g r P(a)
def _input_backward_weight(grad, grad_out, input, mean, invstd, training, eps):
    return _channel_sum(ew.mul(grad_out, _rpa(grad, input, mean, invstd, training, eps)))


@op(node="NativeBatchNormBackwardBackward0", inputs=("grad_out", "input", "weight"),
    variants=(), grads={"grad_out": _input_backward_grad_out, "input": _input_curvature,
                        "weight": _input_backward_weight})
def batch_norm_input_backward(grad_out, input, weight, mean, invstd, training, eps,
                              sums=None):
    """The input's gradient of batch norm: per channel gamma invstd (g - m(g) - xhat m(g xhat))
    in training, gamma invstd g in evaluation (``sums``: the channel sums of g and g xhat
    when the caller has them)."""
    x = input._data
    n, c = x.shape[:2]
    x3 = A.contiguous(x).reshape(n, c, -1)
    g3 = A.contiguous(grad_out._data).reshape(n, c, -1)
    sum_g, sum_gxhat = sums if sums is not None else _sums(grad_out, input, mean, invstd)
    gam = weight._data if weight is not None else A.ones(x3, c, x3.dtype)
    gx = A.empty(x3, x3.shape, x3.dtype)
    NN.batch_norm_bwd_input(g3, x3, mean, invstd, gam, sum_g, sum_gxhat, training, gx)
    return gx.reshape(x.shape), {"mean": mean, "invstd": invstd, "training": training,
                                 "eps": eps}


# d/dg sum g xhat = xhat ggamma_c
def _weight_backward_grad_out(grad, input, mean, invstd, training, eps):
    return ew.mul(_xhat(input, mean, invstd, training, eps), _channel_view(grad, input.dim()))


# d/dx sum q xhat = r P(q) (r q in evaluation), q = g ggamma_c
def _weight_backward_input(grad, grad_out, input, mean, invstd, training, eps):
    return _rpa(ew.mul(grad_out, _channel_view(grad, input.dim())), input, mean, invstd,
                training, eps)


@op(node="NativeBatchNormBackwardBackward0", inputs=("grad_out", "input"), variants=(),
    grads={"grad_out": _weight_backward_grad_out, "input": _weight_backward_input})
def batch_norm_weight_backward(grad_out, input, mean, invstd, training, eps, sums=None):
    """The weight's gradient of batch norm: sum of g xhat over the batch and space (summed in
    float64, rounded once)."""
    sum_gxhat = (sums if sums is not None else _sums(grad_out, input, mean, invstd))[1]
    return EW.unary(EW.copy, sum_gxhat, input._data.dtype), {
        "mean": mean, "invstd": invstd, "training": training, "eps": eps}


# d/dg sum g = gbeta_c at every element of the channel
def _bias_backward_grad_out(grad, shape):
    return sh.expand(_channel_view(grad, len(shape)), shape)


@op(node="NativeBatchNormBackwardBackward0", inputs=("grad_out",), variants=(),
    grads={"grad_out": _bias_backward_grad_out})
def batch_norm_bias_backward(grad_out, sum_g):
    """The bias's gradient of batch norm: the float64 channel sums of g, rounded once."""
    return EW.unary(EW.copy, sum_g, grad_out._data.dtype), {"shape": tuple(grad_out.shape)}


# ----------------------------------------------------------------------------------------
# the forward op
# ----------------------------------------------------------------------------------------


# per channel: dx = gamma invstd (g - m(g) - xhat m(g xhat)) in training (gamma invstd g in
# evaluation); dgamma = sum g xhat; dbeta = sum g (sums over the batch and space); the two
# sums are one pass, shared by the three
def _bn_grads(grad, input, weight, result1, result2, training, eps, output_mask):
    sums = _sums(grad, input, result1, result2)
    gx = gw = gb = None
    if output_mask[0]:
        gx = batch_norm_input_backward(grad, input, weight, result1, result2, training, eps,
                                       sums)
    if output_mask[1]:
        gw = batch_norm_weight_backward(grad, input, result1, result2, training, eps, sums)
    if output_mask[2]:
        gb = batch_norm_bias_backward(grad, sums[0])
    return gx, gw, gb


@op(node="NativeBatchNormBackward0", inputs=("input", "weight", "bias"),
    variants=("functional",),
    save=("input", "weight", "result1", "result2", "training", "eps"),
    grads={("input", "weight", "bias"): _bn_grads})
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """Batch norm of a nonempty float (N, C, ...) input per channel (the caller checks the
    shapes and dtypes): training normalizes by the batch's statistics and updates the running
    ones in place (when given), evaluation by the running ones."""
    x = input._data
    n, c = x.shape[:2]
    x3 = A.contiguous(x).reshape(n, c, -1)
    if training:
        mean = A.empty(x, c, np.float64)
        var = A.empty(x, c, np.float64)
        invstd = A.empty(x, c, np.float64)
        NN.channel_stats(x3, float(eps), mean, var, invstd)
        if running_mean is not None:
            m = x3.shape[0] * x3.shape[2]
            NN.running_update(running_mean._data, mean, float(momentum), 1.0)
            NN.running_update(running_var._data, var, float(momentum), m / (m - 1))
            running_mean._bump_version()
            running_var._bump_version()
    else:
        mean = A.astype(running_mean._data.reshape(-1), np.float64)
        invstd = A.empty(x, c, np.float64)
        NN.inv_std(running_var._data.reshape(-1), float(eps), invstd)
    gam = weight._data.reshape(-1) if weight is not None else A.ones(x, c, x.dtype)
    bet = bias._data.reshape(-1) if bias is not None else A.zeros(x, c, x.dtype)
    out = A.empty(x, x3.shape, x.dtype)
    NN.batch_norm_apply(
        x3, mean, invstd, A.astype(gam, x.dtype), A.astype(bet, x.dtype), out)
    # the running statistics are not saved: the backward does not read them, and a later
    # training call updates them in place (PyTorch's node does not check their versions)
    return out.reshape(x.shape), {"result1": mean, "result2": invstd,
                                  "training": bool(training), "eps": float(eps)}
