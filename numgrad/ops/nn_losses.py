"""nn losses declared as ops: ``mse_loss`` (``MseLossBackward0``). The forward runs the
``sqdiff`` kernel and a float64-accumulated sum; the derivative is written with numgrad ops,
so it is differentiable again. Reached through ``numgrad.nn.functional.mse_loss``
(variant ``"functional"``), which parses and checks the arguments."""

import numpy as np

from numgrad import _arrays as A
from numgrad.ops import elementwise as ew
from numgrad.ops import shape as sh
from numgrad.ops._util import EW, RED, meta_for
from numgrad.ops.registry import op


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
