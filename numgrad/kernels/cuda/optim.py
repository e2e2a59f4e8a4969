"""Fused optimizer updates on the GPU: the twin of ``numgrad.kernels.cpu.optim`` (same names,
same arguments, over ``CudaArray`` data), one thread per element of a flat parameter and its
state, with the CPU kernels' operations and roundings (scalars converted to the parameter
dtype first, fused multiply-adds where those have them).

The step count stays a host array beside CUDA parameters (PyTorch keeps ``state["step"]`` on
the CPU unless ``capturable``): ``count_step`` increments it and derives the step's scalars
on the host, with the CPU kernels' float64 arithmetic."""

import math

from numba import cuda

from numgrad._compile import tape as _tape
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import from_any


def count_step(step):
    """Increment ``step`` (the parameter's step count: a one-element host array) in its dtype
    and return the new count as a float. Python reads a tensor's value here: a compiled trace
    of device work cannot replay that, so it is reported to an active tape."""
    if _tape.TAPE is not None:
        _tape.host_read("an optimizer step of CUDA parameters (its step count)")
    step[0] += 1
    return float(step[0])


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
            gi = cuda.fma(pi, wd, gi)
        s = cuda.fma(gi, gi, sm[so + i * ss])
        sm[so + i * ss] = s
        p[po + i * ps] = pi + (c * gi) / (math.sqrt(s) + eps)


def adagrad_step(p, g, state_sum, step, lr, lr_decay, weight_decay, eps, maximize):
    clr = lr / (1.0 + (count_step(step) - 1.0) * lr_decay)
    p = from_any(p)
    dt = p.dtype
    s = _launch.scalar
    _launch.launch(_adagrad_k, p.size, *_v(p), *_v(g), *_v(state_sum), s(dt, -clr),
                   s(dt, weight_decay), s(dt, eps), weight_decay != 0, bool(maximize), p.size)
