"""The convolutions of ``numgrad.nn.functional`` below its argument checks: each call's
geometry (``numgrad.ops.conv.ConvGeom``) built from the checked parameters and output size,
1-D convolutions run as 2-D ones of unit height, an empty input or weight given PyTorch's
empty (or bias-filled) output, and unfold/fold of unbatched input as a batch of one; the math is
the declared ops of ``numgrad.ops.conv`` and ``numgrad.ops.conv_transpose``."""

from numgrad.ops import conv as CV
from numgrad.ops import conv_transpose as CT
from numgrad.ops import shape as sh


def unit_height(shape):
    """A 1-D convolution's (N, C, L) shape as the 2-D op's (N, C, 1, L)."""
    return tuple(shape[:2]) + (1,) + tuple(shape[2:])


def _empty_shape(input, weight, space):
    """The output shape of a convolution whose input or weight is empty (PyTorch's output
    for an input of no channels has none either), else None."""
    x, w = input._data, weight._data
    if x.size and w.size:
        return None
    return (x.shape[0], w.shape[0] if x.shape[1] else 0) + tuple(space)


def convolution(input, weight, bias, stride, padding, dilation, groups, out):
    """A checked 1-D or 2-D convolution with output size ``out`` (``ConvolutionBackward0``)."""
    x, w = input._data.shape, weight._data.shape
    unit = len(w) == 3
    if unit:
        x, w = unit_height(x), unit_height(w)
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
    geo = CV.make_geom(x, w, w[2:], stride, padding, dilation, groups,
                       (1,) + out if unit else out)
    return CV.convolution(input, weight, bias, geo, unit, _empty_shape(input, weight, out))


def conv_transpose(input, weight, bias, stride, padding, dilation, groups, out):
    """A checked 1-D or 2-D transposed convolution of output size ``out`` (the 2-D op's
    ``ConvolutionBackward0``; an empty input or weight gives the bias alone)."""
    x, w = input._data.shape, weight._data.shape
    unit = len(w) == 3
    if unit:
        x, w, out = unit_height(x), unit_height(w), (1,) + out
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
    n, oc = x[0], w[1] * groups
    geo = CV.make_geom((n, oc) + out, w, w[2:], stride, padding, dilation, groups, x[2:])
    if input._data.size == 0 or weight._data.size == 0:
        return CV.convolution(input, weight, bias, geo, unit, (n, oc) + out[unit:])
    return CT._conv_transpose(input, weight, bias, geo, unit, (n, oc) + out)


def unfold(input, k, d, p, s, out):
    """Sliding blocks of checked (N, C, H, W) or (C, H, W) input as columns
    (``Im2ColBackward0``)."""
    unbatched = input._data.ndim == 3
    x = sh.unsqueeze(input, 0) if unbatched else input
    geo = CV.make_geom(x._data.shape, (1, x._data.shape[1]) + k, k, s, p, d, 1, out)
    res = CV.im2col(x, geo)
    return sh.squeeze(res, 0) if unbatched else res


def fold(input, output_size, k, d, p, s, blocks):
    """Checked (N, C*kh*kw, L) or (C*kh*kw, L) columns summed back into an image
    (``Col2ImBackward0``)."""
    unbatched = input._data.ndim == 2
    x = sh.unsqueeze(input, 0) if unbatched else input
    n, c = x._data.shape[0], x._data.shape[1] // (k[0] * k[1])
    geo = CV.make_geom((n, c) + tuple(output_size), (1, c) + k, k, s, p, d, 1, blocks)
    res = CV.col2im(x, geo)
    return sh.squeeze(res, 0) if unbatched else res
