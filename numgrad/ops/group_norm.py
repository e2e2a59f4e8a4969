"""Group norm as declared ops: ``native_group_norm`` (``NativeGroupNormBackward0``) and its
fused backward ops, the input's and the weight's gradient, each declared with its own
derivative written with numgrad ops (so double backward needs no second copy of the math).

Every (sample, group) is one row of the layer-norm kernels: the forward normalizes the rows
of the (N * G, C / G * spatial) view and applies the per-channel affine; the input's
gradient is the layer-norm input-gradient kernel on those rows. ``numgrad.nn.functional``
keeps PyTorch's argument checks and calls ``native_group_norm``.
"""

import numpy as np

from numgrad import _arrays as A
from numgrad.ops import elementwise as ew
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, RED, LazyKernels
from numgrad.ops.norms import normalized_rows, row_curvature
from numgrad.ops.registry import op

NN = LazyKernels("nn")
_F = ("functional",)


def _channel_view(t, ndim):
    """A per-channel (C,) tensor shaped to broadcast over (N, C, *spatial)."""
    return sh.reshape(t, (1, -1) + (1,) * (ndim - 2))


def _channel_sum(t):
    """sum over the batch and space of (N, C, *spatial): a (C,) tensor."""
    n, c = t.shape[:2]
    return red.sum(sh.reshape(t, (n, c, -1)), (0, 2))


def _rows(t, group):
    """(N, C, *spatial) as its (N * G, C / G * spatial) rows, one per (sample, group)."""
    return sh.reshape(t, (t.shape[0] * group, -1))


def _times_weight(t, weight):
    return t if weight is None else ew.mul(t, _channel_view(weight, t.dim()))


# ----------------------------------------------------------------------------------------
# the backward ops
# ----------------------------------------------------------------------------------------


def _input_curvature(grad, grad_out, input, weight, mean, rstd, group, eps):
    """d/dx <a, dx> for dx = r P(h) per row (h = g gamma, P v = v - m(v) - xhat m(v xhat),
    m the row mean, dxhat/dx = r P, dr/dx = -r^2 xhat / K):
    -r [r xhat (m((a - m(a)) h) - m(a xhat) m(h xhat)) + m(h xhat) r P(a) + m(a xhat) r P(h)]."""
    h = _times_weight(grad_out, weight)
    rpa = _rows(group_norm_input_backward(grad, input, None, mean, rstd, group, eps), group)
    rph = _rows(group_norm_input_backward(h, input, None, mean, rstd, group, eps), group)
    return row_curvature(_rows(grad, group), _rows(h, group), rpa, rph, _rows(input, group),
                         eps, tuple(input.shape))


# dx = r P(g gamma) is linear in g and P is symmetric: d/dg <a, dx> = gamma r P(a)
def _input_backward_grad_out(grad, input, weight, mean, rstd, group, eps):
    return _times_weight(
        group_norm_input_backward(grad, input, None, mean, rstd, group, eps), weight)


# d/dgamma_c <a, dx> = sum over the channel of g r P(a)
def _input_backward_weight(grad, grad_out, input, mean, rstd, group, eps):
    return _channel_sum(ew.mul(
        grad_out, group_norm_input_backward(grad, input, None, mean, rstd, group, eps)))


@op(node="NativeGroupNormBackwardBackward0", inputs=("grad_out", "input", "weight"),
    variants=(), grads={"grad_out": _input_backward_grad_out, "input": _input_curvature,
                        "weight": _input_backward_weight})
def group_norm_input_backward(grad_out, input, weight, mean, rstd, group, eps):
    """The input's gradient of group norm: per (sample, group) row
    rstd (h - mean(h) - xhat mean(h xhat)), h = grad_out gamma_c (``mean``, ``rstd``: the
    forward's float64 row statistics)."""
    shape = input._data.shape
    n, c = shape[:2]
    g3 = A.contiguous(grad_out._data).reshape(n, c, -1)
    h = g3 if weight is None else EW.binary(
        EW.mul, g3, weight._data.reshape(1, c, 1), g3.dtype, g3.shape)
    x2 = A.contiguous(input._data).reshape(n * group, -1)
    gx = A.empty(x2, x2.shape, x2.dtype)
    NN.layer_norm_bwd_input(
        A.contiguous(h).reshape(x2.shape), x2, mean, rstd, A.ones(x2, x2.shape[1], x2.dtype), gx)
    return gx.reshape(shape), {"mean": mean, "rstd": rstd, "group": group, "eps": eps}


# d/dg sum g xhat = xhat ggamma_c
def _weight_backward_grad_out(grad, input, group, eps):
    xhat = sh.reshape(normalized_rows(_rows(input, group), eps)[0], tuple(input.shape))
    return ew.mul(xhat, _channel_view(grad, input.dim()))


# d/dx sum q xhat = r P(q), q = g ggamma_c
def _weight_backward_input(grad, grad_out, input, mean, rstd, group, eps):
    return group_norm_input_backward(ew.mul(grad_out, _channel_view(grad, input.dim())), input,
                                     None, mean, rstd, group, eps)


@op(node="NativeGroupNormBackwardBackward0", inputs=("grad_out", "input"), variants=(),
    grads={"grad_out": _weight_backward_grad_out, "input": _weight_backward_input})
def group_norm_weight_backward(grad_out, input, mean, rstd, group, eps, xhat):
    """The weight's gradient of group norm: sum of grad_out xhat over the batch and space
    (``xhat``: the forward's normalized rows)."""
    n, c = input._data.shape[:2]
    g3 = A.contiguous(grad_out._data).reshape(n, c, -1)
    prod = EW.binary(EW.mul, g3, xhat.reshape(n, c, -1), g3.dtype, g3.shape)
    return RED.sum_dims(prod, (0, 2), g3.dtype, 1.0).reshape(c), {
        "mean": mean, "rstd": rstd, "group": group, "eps": eps}


# ----------------------------------------------------------------------------------------
# the forward op
# ----------------------------------------------------------------------------------------


# per (sample, group) row: dx = rstd (h - mean(h) - xhat mean(h xhat)), h = g gamma_c
def _gn_input(grad, input, weight, mean, rstd, group, eps):
    return group_norm_input_backward(grad, input, weight, mean, rstd, group, eps)


# dgamma_c = sum g xhat (over batch and space)
def _gn_weight(grad, input, mean, rstd, group, eps, xhat):
    return group_norm_weight_backward(grad, input, mean, rstd, group, eps, xhat)


# dbeta_c = sum g (over batch and space)
def _gn_bias(grad):
    return _channel_sum(grad)


@op(node="NativeGroupNormBackward0", inputs=("input", "weight", "bias"), variants=_F,
    save=("input", "weight", "mean", "rstd", "group", "xhat", "eps"),
    grads={"input": _gn_input, "weight": _gn_weight, "bias": _gn_bias})
def native_group_norm(input, weight, bias, group, eps):
    """Group norm of a nonempty float (N, C, *spatial) input whose C is divisible by
    ``group`` (the caller checks): each (sample, group) row normalized by the layer-norm
    kernel, then scaled and shifted per channel."""
    x = input._data
    n, c = x.shape[:2]
    x2 = A.contiguous(x).reshape(n * group, -1)
    k = x2.shape[1]
    xhat = A.empty(x, x2.shape, x.dtype)
    mean = A.empty(x, x2.shape[0], np.float64)
    rstd = A.empty(x, x2.shape[0], np.float64)
    NN.layer_norm_fwd(
        x2, A.ones(x, k, x.dtype), A.zeros(x, k, x.dtype), float(eps), xhat, mean, rstd)
    y = xhat3 = xhat.reshape(n, c, -1)
    if weight is not None:  # xhat itself stays as saved for the weight's gradient
        y = EW.binary(EW.mul, y, weight._data.reshape(1, c, 1), x.dtype, y.shape)
    if bias is not None:
        y = EW.binary(EW.add, y, bias._data.reshape(1, c, 1), x.dtype, y.shape,
                      out=None if y is xhat3 else y)
    return y.reshape(x.shape), {"mean": mean, "rstd": rstd, "group": group, "xhat": xhat,
                                "eps": eps}


# ----------------------------------------------------------------------------------------
# instance norm: batch norm of the (1, N*C, ...) view, as PyTorch computes it
# ----------------------------------------------------------------------------------------


def _repeat(t, b):
    """``t`` (C,) repeated ``b`` times (PyTorch's ``t.repeat(b)``)."""
    return sh.reshape(sh.expand(sh.unsqueeze(t, 0), b, t._data.shape[0]), (-1,))


def instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum,
                  eps, batch_norm):
    """Each channel of each sample of checked ``input`` normalized over its space by
    ``batch_norm`` (``F.batch_norm``'s signature) of the (1, N*C, ...) view (``ViewBackward0``
    over its node); the running statistics get the batch mean of the per-sample updates."""
    from numgrad.autograd.grad_mode import no_grad
    from numgrad.ops._util import _wrap
    shape = input._data.shape
    n, c = shape[:2]
    folded = sh.reshape(input, (1, n * c) + shape[2:])
    w = _repeat(weight, n) if weight is not None else None
    b = _repeat(bias, n) if bias is not None else None
    rm = rv = None
    if running_mean is not None:
        rm = _wrap(A.contiguous(_repeat(running_mean.detach(), n)._data).copy()) \
            if n * c else None
    if running_var is not None:
        rv = _wrap(A.contiguous(_repeat(running_var.detach(), n)._data).copy()) \
            if n * c else None
    out = batch_norm(folded, rm, rv, w, b, use_input_stats, momentum, eps)
    if use_input_stats and n * c:
        with no_grad():
            for run, folded_run in ((running_mean, rm), (running_var, rv)):
                if run is not None:
                    run.copy_(red.mean(sh.reshape(folded_run, (n, c)), 0))
    return sh.view(out, shape)
