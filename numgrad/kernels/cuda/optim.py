"""Fused optimizer updates on the GPU: the twin of ``numgrad.kernels.cpu.optim`` (same names,
same arguments, over ``CudaArray`` data), one thread per element of a flat parameter and its
state, with the CPU kernels' formulas (scalars converted to the parameter dtype first)."""

import math

from numba import cuda

from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import from_any


def _v(a):
    """(buffer, offset, element stride) of a 1-D CudaArray."""
    a = from_any(a)
    return a.buf, a.offset, a.strides_el[0] if a.strides_el else 1


@_launch.jit
def _adagrad_k(p, po, ps, g, go, gs, sm, so, ss, c, wd, eps, has_wd, maximize, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        gi = g[go + i * gs]
        if maximize:
            gi = -gi
        pi = p[po + i * ps]
        if has_wd:
            gi = gi + wd * pi
        s = sm[so + i * ss] + gi * gi
        sm[so + i * ss] = s
        p[po + i * ps] = pi + (c * gi) / (math.sqrt(s) + eps)


def adagrad_step(p, g, state_sum, neg_clr, weight_decay, eps, maximize):
    p = from_any(p)
    dt = p.dtype
    s = _launch.scalar
    _launch.launch(_adagrad_k, p.size, *_v(p), *_v(g), *_v(state_sum), s(dt, neg_clr),
                   s(dt, weight_decay), s(dt, eps), weight_decay != 0, bool(maximize), p.size)
