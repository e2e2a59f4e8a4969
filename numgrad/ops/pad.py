"""Constant padding as a declared op: ``constant_pad_nd`` (``ConstantPadNdBackward0``), the last
len(pad)/2 dims padded with ``value`` or, for negative widths, cropped. Its derivative is the
op again with the widths negated (the padding cut off, the cropped parts zero), so every
order of derivative is this op. ``numgrad.nn.functional.pad`` checks the arguments."""

from numgrad import _arrays as A
from numgrad.ops._util import EW
from numgrad.ops.registry import op


# d/dx pad(x, w) = pad(g, -w)
def _constant_pad_grad(grad, pad):
    return constant_pad_nd(grad, tuple(-v for v in pad), 0)


@op(node="ConstantPadNdBackward0", variants=("functional",), grads={"self": _constant_pad_grad})
def constant_pad_nd(input, pad, value=0):
    """``input`` padded (or cropped) by the checked widths ``pad`` (last dim first)."""
    x = input._data
    shape = list(x.shape)
    src = [slice(None)] * len(shape)
    dst = [slice(None)] * len(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        a = max(-lo, 0)
        n = max(shape[d] - max(-hi, 0) - a, 0)
        src[d], dst[d] = slice(a, a + n), slice(max(lo, 0), max(lo, 0) + n)
        shape[d] += lo + hi
    out = A.full(x, tuple(shape), value, x.dtype)
    part = x[tuple(src)]
    if part.size:
        EW.unary(EW.copy, part, out.dtype, out=out[tuple(dst)])
    return out, {"pad": tuple(pad)}


# the node saves only the widths: it may run again without retain_graph (PyTorch's)
constant_pad_nd.opdef.node._meta_only = True
