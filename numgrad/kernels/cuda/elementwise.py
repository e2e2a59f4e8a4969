"""Elementwise kernels on the GPU.

The formulas are the CPU backend's scalar functions (``numgrad.kernels.cpu.elementwise``),
compiled as CUDA device functions and bound into two grid-stride templates per arity:

* ``flat``: operands C-contiguous with the output's shape: ``out[i] = f(x[i], p, q)``;
* ``nd``:   any rank and strides, each operand addressed through its own element strides
  (0 along broadcast dims), so broadcasting and strided views need no copies.

The launchers ``unary``/``binary``/``ternary`` take the same arguments as the CPU ones.
"""

from numba import cuda

from numgrad.kernels._guard import check_operands
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import CudaArray, from_any

# ----------------------------------------------------------------------------------------
# templates: ``f`` is bound by ``_launch.kernel``
# ----------------------------------------------------------------------------------------


def u_flat(x, xo, out, oo, n, p, q):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[oo + i] = f(x[xo + i], p, q)  # noqa: F821


def u_nd(x, xo, xs, out, oo, os, shape, n, p, q):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = i
        xi = xo
        oi = oo
        for k in range(len(shape) - 1, -1, -1):
            c = r % shape[k]
            r //= shape[k]
            xi += c * xs[k]
            oi += c * os[k]
        out[oi] = f(x[xi], p, q)  # noqa: F821


def b_flat(a, ao, b, bo, out, oo, n, p, q):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[oo + i] = f(a[ao + i], b[bo + i], p, q)  # noqa: F821


def b_nd(a, ao, as_, b, bo, bs, out, oo, os, shape, n, p, q):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = i
        ai = ao
        bi = bo
        oi = oo
        for k in range(len(shape) - 1, -1, -1):
            c = r % shape[k]
            r //= shape[k]
            ai += c * as_[k]
            bi += c * bs[k]
            oi += c * os[k]
        out[oi] = f(a[ai], b[bi], p, q)  # noqa: F821


def t_flat(a, ao, b, bo, c, co, out, oo, n, p, q):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[oo + i] = f(a[ao + i], b[bo + i], c[co + i], p, q)  # noqa: F821


def t_nd(a, ao, as_, b, bo, bs, c, co, cs, out, oo, os, shape, n, p, q):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = i
        ai = ao
        bi = bo
        ci = co
        oi = oo
        for k in range(len(shape) - 1, -1, -1):
            j = r % shape[k]
            r //= shape[k]
            ai += j * as_[k]
            bi += j * bs[k]
            ci += j * cs[k]
            oi += j * os[k]
        out[oi] = f(a[ai], b[bi], c[ci], p, q)  # noqa: F821


_TEMPLATES = {1: (u_flat, u_nd), 2: (b_flat, b_nd), 3: (t_flat, t_nd)}


def _register_gpu_fmod():
    """The GPU version of the CPU formulas' ``ffmod`` helper (libdevice's fmod)."""
    from numba import types
    try:
        from numba.cuda.extending import overload
    except ImportError:  # Numba's built-in CUDA target
        from numba.extending import overload
    from numba.cuda import libdevice

    from numgrad.kernels.cpu.elementwise import ffmod

    @overload(ffmod, target="cuda")
    def _impl(a, b):
        if a == types.float32:
            return lambda a, b: libdevice.fmodf(a, b)
        if isinstance(a, types.Float):
            return lambda a, b: libdevice.fmod(a, b)


if not _launch.SIM:
    _register_gpu_fmod()


class CudaKernel:
    """The CUDA flat and strided kernels of one CPU elementwise formula."""

    __slots__ = ("flat", "nd")

    def __init__(self, cpu_kernel):
        flat, nd = _TEMPLATES[cpu_kernel.arity]
        f = _launch.device_fn(cpu_kernel.formula, cpu_kernel.name)
        self.flat = _launch.kernel(flat, cpu_kernel.name, f=f)
        self.nd = _launch.kernel(nd, cpu_kernel.name, f=f)


def compiled(k):
    ck = k.cuda
    if ck is None:
        ck = k.cuda = CudaKernel(k)
    return ck


# ----------------------------------------------------------------------------------------
# launchers (same signatures as the CPU ones)
# ----------------------------------------------------------------------------------------


def _operand(a, shape):
    """(buffer, offset, element strides) of ``a`` broadcast to ``shape`` (rank >= 1)."""
    a = from_any(a)
    nd = len(shape)
    lead = nd - len(a.shape)
    st = [0] * lead
    for d, s in enumerate(a.shape):
        st.append(0 if s == 1 and shape[lead + d] != 1 else a.strides_el[d])
    if not st:
        st = [0]
    return a.buf, a.offset, tuple(st)


def _run(k, ins, out, p, q):
    ck = compiled(k)
    n = out.size
    if not n:
        return out
    p = _launch.scalar(ins[-1].dtype, p)
    q = _launch.scalar(ins[-1].dtype, q)
    shape = out.shape
    if out._c and all(a.__class__ is CudaArray and a._c and a.shape == shape for a in ins):
        args = []
        for a in ins:
            args += (a.buf, a.offset)
        _launch.launch(ck.flat, n, *args, out.buf, out.offset, n, p, q)
        return out
    check_operands(ins, shape)
    full = shape or (1,)
    args = []
    for a in ins:
        args += _operand(a, full)
    ob, oo, os = _operand(out, full)
    _launch.launch(ck.nd, n, *args, ob, oo, os, tuple(full), n, p, q)
    return out


def unary(k, x, dtype, p=0.0, q=0.0, out=None):
    x = from_any(x)
    if out is None:
        out = CudaArray.empty(x.shape, dtype)
    return _run(k, (x,), out, p, q)


def binary(k, a, b, dtype, shape, p=0.0, q=0.0, out=None):
    a, b = from_any(a), from_any(b)
    if out is None:
        out = CudaArray.empty(shape, dtype)
    return _run(k, (a, b), out, p, q)


def ternary(k, a, b, c, dtype, shape, p=0.0, q=0.0, out=None):
    a, b, c = from_any(a), from_any(b), from_any(c)
    if out is None:
        out = CudaArray.empty(shape, dtype)
    return _run(k, (a, b, c), out, p, q)


def copy_into(src, dst):
    """``dst[...] = src`` (broadcasting ``src``, casting to ``dst``'s dtype)."""
    from numgrad.kernels.cpu import elementwise as EW
    return _run(EW.copy, (from_any(src),), dst, 0.0, 0.0)
