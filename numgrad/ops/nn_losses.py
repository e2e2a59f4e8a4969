"""nn losses declared as ops: ``mse_loss`` (``MseLossBackward0``). The forward runs the
``sqdiff`` kernel and a float64-accumulated sum; the derivative is written with numgrad ops,
so it is differentiable again. Reached through ``numgrad.nn.functional.mse_loss``
(variant ``"functional"``), which parses and checks the arguments."""

import numpy as np

from numgrad import _arrays as A
from numgrad.ops import elementwise as ew
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import EW, RED, LazyKernels, _wrap, meta_for, state
from numgrad.ops.registry import op

NN = LazyKernels("nn")
_F = ("functional",)


# d/dx mean((x - t)^2) = 2 (x - t) g / n (2 (x - t) g for 'sum' and 'none'), d/dt = -that
def _mse_grads(grad, self, target, reduction, n, output_mask):
    x, t = self, target
    if t._data.dtype.kind == "b" or x._data.dtype.kind == "b":  # sub refuses bool
        x, t = (sh.to_dtype(v, grad.dtype) if v._data.dtype.kind == "b" else v for v in (x, t))
    d = ew.mul(ew.sub(x, t), (2.0 / n if n else 0.0) if reduction == "mean" else 2.0)
    gx = ew.mul(d, grad)
    return (gx if output_mask[0] else None, ew.neg(gx) if output_mask[1] else None)


@op(node="MseLossBackward0", inputs=("self", "target"), variants=("functional",),
    grads={("self", "target"): _mse_grads})
def mse_loss(input, target, reduction, shape, dt):
    """(input - target)^2 over the broadcast ``shape`` in float dtype ``dt``, reduced (the
    caller checks the arguments and gives the broadcast shape and result dtype)."""
    el = EW.binary(EW.sqdiff, A.astype(input._data, dt.np), A.astype(target._data, dt.np), dt.np,
                   shape)
    if reduction == "none":
        out = el
    else:
        scale = (1.0 / el.size if el.size else np.nan) if reduction == "mean" else 1.0
        out = RED.sum_all(el, dt.np, scale)
    values = {"reduction": reduction, "n": el.size}
    metas = (meta_for(input, shape, dt), meta_for(target, shape, dt))
    if metas != (None, None):
        values["_meta"] = metas
    return out, values


# ----------------------------------------------------------------------------------------
# negative log likelihood: nll_loss_forward (NllLossBackward0) for (C,) and (N, C) inputs,
# nll_loss2d_forward (NllLoss2DBackward0) for (N, C, H, W) ones, and their backward ops
# (linear in the output's gradient; the adjoint of the backward is the forward again)
# ----------------------------------------------------------------------------------------


def _class_rows(x):
    """The (rows, C) array of class scores: (C,) as one row, (N, C) as it is, (N, C, H, W)
    as its (N H W, C) transposed copy."""
    if x.ndim == 2:
        return A.contiguous(x)
    if x.ndim == 4:
        n, c, h, w = x.shape
        return A.contiguous(x.transpose(0, 2, 3, 1)).reshape((n * h * w, c))
    return A.contiguous(x).reshape((1, x.shape[0]))


def _target_rows(t):
    """The targets as one contiguous int64 line (Byte ones cast by a kernel, which a compiled
    step replays)."""
    t = A.contiguous(t) if t.dtype == np.int64 else EW.unary(EW.copy, t, np.int64)
    return t if t.ndim == 1 else t.reshape(-1)


def _nll(self, target, weight, reduction, ignore_index):
    x = self._data
    x2 = _class_rows(x)
    t = _target_rows(getattr(target, "_data", target))
    if x2.shape[0] != t.shape[0]:  # (the callers check; the kernel writes a loss per row)
        raise RuntimeError(f"size mismatch (got input: {list(x.shape)} , target: "
                           f"{list(getattr(target, 'shape', t.shape))}")
    c, dt = x2.shape[1], x.dtype
    w = weight._data.reshape(-1) if weight is not None else A.ones(x, c, dt)
    losses = A.empty(x, t.shape[0], dt)
    weights = A.empty(x, t.shape[0], dt)
    bad = NN.on(x).nll(x2, t, w, ignore_index, losses, weights) if t.size else -1
    if bad >= 0:
        raise IndexError(f"Target {A.host(t)[bad]} is out of bounds.")
    total = A.item(RED.sum_all(weights, dt, 1.0)) if reduction == "mean" else 1.0
    if reduction == "none":
        out = losses.reshape(x.shape[:1] + x.shape[2:] if x.ndim > 1 else ())
    else:
        out = RED.sum_all(losses, dt, (1.0 / total if total else np.nan)
                          if reduction == "mean" else 1.0)
    return out, {"target": t, "weight": weight, "total_weight": total, "reduction": reduction,
                 "ignore_index": ignore_index, "weights": weights}


def _nll_backward(grad_output, self, weights, target, total_weight, reduction):
    """One pass writing the sparse gradient (rows of ``self`` transposed back for 4-D)."""
    x = self._data
    out = A.empty(x, (target.shape[0], x.shape[1 if x.ndim > 1 else 0]), x.dtype)
    scale = (1.0 / total_weight if total_weight else np.nan) if reduction == "mean" else 1.0
    NN.on(out).nll_bwd(A.contiguous(grad_output._data).reshape(-1), target, weights, scale, out)
    if x.ndim == 4:
        n, c, h, w = x.shape
        return out.reshape((n, h, w, c)).transpose(0, 3, 1, 2)
    return out if x.ndim == 2 else out.reshape(x.shape)


_NLL_SAVED = ("self", "target", "weight", "total_weight", "reduction", "ignore_index",
              "weights")


def _zeros_like_self(grad, self):
    # the backward reads only self's shape: d/dself = 0
    return _wrap(A.zeros(self._data, self._data.shape, self._data.dtype))


# nll_loss_backward is linear in grad_output, and its adjoint is nll_loss itself:
# d/dg <a, nll_loss_backward(g)> = nll_loss(a)
def _nll_adjoint(grad, target, weight, reduction, ignore_index):
    fwd = nll_loss2d_forward if grad.dim() == 4 else nll_loss_forward
    return fwd(grad, target, weight, reduction, ignore_index)


@op(node="NllLossBackwardBackward0", inputs=("grad_output", "self"), variants=(),
    grads={"grad_output": _nll_adjoint, "self": _zeros_like_self})
def nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
                      total_weight, weights):
    """The input's gradient of nll_loss: -w[t] grad / total_weight at the target, 0 elsewhere
    (``weights``: the forward's per-sample w[t], 0 where ignored)."""
    return _nll_backward(grad_output, self, weights, target, total_weight, reduction), {
        "target": target, "weight": weight, "reduction": reduction,
        "ignore_index": ignore_index}


@op(node="NllLoss2DBackwardBackward0", inputs=("grad_output", "self"), variants=(),
    grads={"grad_output": _nll_adjoint, "self": _zeros_like_self})
def nll_loss2d_backward(grad_output, self, target, weight, reduction, ignore_index,
                        total_weight, weights):
    """nll_loss_backward for (N, C, H, W) inputs."""
    return _nll_backward(grad_output, self, weights, target, total_weight, reduction), {
        "target": target, "weight": weight, "reduction": reduction,
        "ignore_index": ignore_index}


# d/dx[n, c] nll = -w[t_n] g_n / total_weight where c = t_n (0 elsewhere and where ignored)
def _nll_grad(grad, self, target, weight, total_weight, reduction, ignore_index, weights):
    if not state.enabled:  # nothing to record: the op's kernel without its wrapper
        return _wrap(_nll_backward(grad, self, weights, target, total_weight, reduction))
    return nll_loss_backward(grad, self, target, weight, reduction, ignore_index,
                             total_weight, weights)


def _nll2d_grad(grad, self, target, weight, total_weight, reduction, ignore_index, weights):
    return nll_loss2d_backward(grad, self, target, weight, reduction, ignore_index,
                               total_weight, weights)


@op(node="NllLossBackward0", inputs=("self",), variants=_F, save=_NLL_SAVED,
    grads={"self": _nll_grad})
def nll_loss_forward(self, target, weight, reduction, ignore_index):
    """-w[t] x[t] per sample of a (C,) or (N, C) float input, reduced (the caller checks the
    shapes and dtypes; ``target`` a tensor or the saved int64 line)."""
    return _nll(self, target, weight, reduction, ignore_index)


@op(node="NllLoss2DBackward0", inputs=("self",), variants=_F, save=_NLL_SAVED,
    grads={"self": _nll2d_grad})
def nll_loss2d_forward(self, target, weight, reduction, ignore_index):
    """nll_loss_forward over the classes of an (N, C, H, W) input at each (n, h, w)."""
    return _nll(self, target, weight, reduction, ignore_index)


# ----------------------------------------------------------------------------------------
# binary cross entropy, on probabilities and on logits
# ----------------------------------------------------------------------------------------


def _reduced(el, reduction):
    if reduction == "none":
        return el
    return RED.sum_all(el, el.dtype, (1.0 / el.size if el.size else np.nan)
                       if reduction == "mean" else 1.0)


def _loss_scale(grad, weight, reduction, n):
    scale = ew.div(grad, n) if reduction == "mean" else grad
    return scale if weight is None else ew.mul(scale, weight)


# d/dx bce = (x - t) / max(x (1 - x), 1e-12) * w g / n; d/dt = (log(1 - x) - log x) w g / n
def _bce_grads(grad, self, target, weight, reduction, n, output_mask):
    x, t = self, target
    scale = _loss_scale(grad, weight, reduction, n)
    gx = gt = None
    if output_mask[0]:
        denom = ew.clamp_min(ew.mul(x, ew.rsub(x, 1.0)), 1e-12)
        gx = ew.mul(ew.div(ew.sub(x, t), denom), scale)
    if output_mask[1]:
        gt = ew.mul(ew.sub(un.log1p(ew.neg(x)), un.log(x)), scale)
    return gx, gt


@op(node="BinaryCrossEntropyBackward0", inputs=("self", "target"), variants=_F,
    save=("self", "target", "weight", "reduction", "n"),
    grads={("self", "target"): _bce_grads})
def binary_cross_entropy(self, target, weight, reduction):
    """-w (t log x + (1 - t) log(1 - x)), the logs clamped at -100, reduced (the caller checks
    the range, shapes and dtypes; ``weight`` broadcasts to the input)."""
    x = self._data
    el = EW.binary(EW.bce, x, target._data, x.dtype, x.shape)
    if weight is not None:
        el = EW.binary(EW.mul, el, A.astype(weight._data, x.dtype), x.dtype, x.shape)
    return _reduced(el, reduction), {"weight": weight, "reduction": reduction, "n": el.size}


# d/dx = lw sigmoid(x) - pw t, lw = (pw - 1) t + 1 (= sigmoid(x) - t without pw); the
# expanded (1 - t) + lw (sigmoid(x) - 1) cancels to noise at large negative x
# d/dt = (1 - pw) log_sigmoid(x) - x (= -x without pw), log_sigmoid(x) = -softplus(-x)
def _bce_logits_grads(grad, self, target, weight, pos_weight, reduction, n, output_mask):
    x, t, pw = self, target, pos_weight
    scale = _loss_scale(grad, weight, reduction, n)
    gx = gt = None
    if output_mask[0]:
        s = un.sigmoid(x)
        if pw is None:
            d = ew.sub(s, t)
        else:
            lw = ew.add(ew.mul(ew.sub(pw, 1.0), t), 1.0)
            d = ew.sub(ew.mul(lw, s), ew.mul(pw, t))
        gx = ew.mul(d, scale)
    if output_mask[1]:
        if pw is None:
            d = ew.neg(x)
        else:
            d = ew.sub(ew.mul(ew.rsub(pw, 1.0), ew.neg(un.softplus(ew.neg(x)))), x)
        gt = ew.mul(d, scale)
    return gx, gt


@op(node="BinaryCrossEntropyWithLogitsBackward0", inputs=("self", "target"), variants=_F,
    save=("self", "target", "weight", "pos_weight", "reduction", "n"),
    grads={("self", "target"): _bce_logits_grads})
def binary_cross_entropy_with_logits(self, target, weight, pos_weight, reduction):
    """BCE on logits, stable for any logit, in the target's float dtype (the caller checks
    the shapes and dtypes; ``weight`` and ``pos_weight`` broadcast to the input)."""
    dt = target._data.dtype
    x = A.astype(self._data, dt)
    t = target._data
    if pos_weight is None:
        el = EW.binary(EW.bce_logits, x, t, dt, x.shape, 1.0)
    else:
        el = EW.ternary(EW.bce_logits_pw, x, t, A.astype(pos_weight._data, dt), dt, x.shape)
    if weight is not None:
        el = EW.binary(EW.mul, el, A.astype(weight._data, dt), dt, x.shape)
    return _reduced(el, reduction), {"weight": weight, "pos_weight": pos_weight,
                                     "reduction": reduction, "n": el.size}
