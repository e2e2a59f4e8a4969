"""Indexing kernels on the GPU: the twins of ``numgrad.kernels.cpu.indexing``.

Why a second source: the CPU kernels walk indices in order in one thread, so repeated
indices accumulate and "later writes win" for free; here thousands of threads write at once,
which needs atomics (scatter-add), a two-phase atomic max (``put_axis``) and a block scan
(``mask_positions``), none of which a shared line function can express.

Every array argument is a ``CudaArray`` addressed through its buffer, offset and element
strides, so strided views need no copies. Shape-like arguments (``sizes`` of ``linearize``,
``shape`` of ``unravel``) are metadata: host sequences or NumPy arrays (a ``CudaArray`` is
copied to the host). Results a CPU kernel returns as numbers (the first bad index) come back
as Python ints after a one-element device-to-host copy.

* Gathers read ``x`` at the wrapped index (negatives wrap, as Numba's indexing does on the
  CPU); an index still out of range after wrapping is skipped instead of read out of bounds.
* Scatter-adds use ``cuda.atomic.add``, so repeated indices accumulate.
* ``put_axis`` keeps the CPU's "later writes win": an atomic max first finds, for each
  target slot, the last ``k`` that writes it, and only that ``k`` writes.
* ``mask_positions`` counts the true entries per chunk, scans the counts in one block,
  copies the total to the host, then each chunk writes its positions in order.
"""

import numpy as np
from numba import cuda, int64

from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import CudaArray, from_any

SCAN_T = 32 if _launch.SIM else 256  # threads of the one-block scan (its shared array size)
MAX_CHUNKS = 32 if _launch.SIM else 65536  # chunks of the mask counted by one thread each

# ----------------------------------------------------------------------------------------
# kernels
# ----------------------------------------------------------------------------------------


@_launch.jit
def _wrap_k(idx, io, is_, size, out, oo, os, n, bad):
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        v = idx[io + k * is_]
        if v < 0:
            v += size
        if v < 0 or v >= size:
            cuda.atomic.min(bad, 0, k)
        else:
            out[oo + k * os] = v


@_launch.jit
def _linearize_k(idx, io, ist, sizes, nk, out, oo, os, m, wrap, bad):
    for j in range(cuda.grid(1), m, cuda.gridsize(1)):
        flat = 0
        ok = True
        for d in range(nk):
            v = idx[io + d * ist[0] + j * ist[1]]
            s = sizes[d]
            if v < 0 and wrap:
                v += s
            if v < 0 or v >= s:
                cuda.atomic.min(bad, 0, j * nk + d)  # (column, row) order: the CPU's first
                ok = False
                break
            flat = flat * s + v
        if ok:
            out[oo + j * os] = flat


@_launch.jit
def _count_chunks_k(mask, mo, ms, n, chunk, nchunks, counts):
    for c in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
        hi = min(n, (c + 1) * chunk)
        s = 0
        for k in range(c * chunk, hi):
            if mask[mo + k * ms]:
                s += 1
        counts[c] = s


@_launch.jit
def _scan_chunks_k(counts, nchunks):
    # one block: counts[:nchunks] becomes its exclusive prefix sum, counts[nchunks] the total
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    per = (nchunks + nt - 1) // nt
    lo = t * per
    hi = min(nchunks, lo + per)
    s = 0
    for i in range(lo, hi):
        s += counts[i]
    part = cuda.shared.array(SCAN_T, int64)
    part[t] = s
    cuda.syncthreads()
    if t == 0:
        run = 0
        for i in range(nt):
            v = part[i]
            part[i] = run
            run += v
        counts[nchunks] = run
    cuda.syncthreads()
    run = part[t]
    for i in range(lo, hi):
        v = counts[i]
        counts[i] = run
        run += v


@_launch.jit
def _write_positions_k(mask, mo, ms, n, chunk, nchunks, counts, out):
    for c in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
        hi = min(n, (c + 1) * chunk)
        p = counts[c]
        for k in range(c * chunk, hi):
            if mask[mo + k * ms]:
                out[p] = k
                p += 1


@_launch.jit
def _gather_axis_k(x, xo, xs, nx, idx, io, is_, out, oo, os, shape, n):
    n_k = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, k, i = _launch.unravel3(t, n_k, n_i)
        j = idx[io + k * is_]
        if j < 0:
            j += nx
        if j >= 0 and j < nx:
            out[oo + o * os[0] + k * os[1] + i * os[2]] = x[xo + o * xs[0] + j * xs[1] + i * xs[2]]


# d/dx gather_axis: out[o, idx[k], i] += g[o, k, i]
@_launch.jit
def _scatter_add_axis_k(src, so, ss, idx, io, is_, out, oo, os, nx, shape, n):
    n_k = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, k, i = _launch.unravel3(t, n_k, n_i)
        j = idx[io + k * is_]
        if j < 0:
            j += nx
        if j >= 0 and j < nx:
            cuda.atomic.add(out, oo + o * os[0] + j * os[1] + i * os[2],
                            src[so + o * ss[0] + k * ss[1] + i * ss[2]])


@_launch.jit
def _last_writer_k(idx, io, is_, nk, nx, last):
    for k in range(cuda.grid(1), nk, cuda.gridsize(1)):
        j = idx[io + k * is_]
        if j < 0:
            j += nx
        if j >= 0 and j < nx:
            cuda.atomic.max(last, j, k)


@_launch.jit
def _put_axis_k(src, so, ss, idx, io, is_, last, out, oo, os, nx, shape, n):
    n_k = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, k, i = _launch.unravel3(t, n_k, n_i)
        j = idx[io + k * is_]
        if j < 0:
            j += nx
        if j >= 0 and j < nx and last[j] == k:
            out[oo + o * os[0] + j * os[1] + i * os[2]] = src[so + o * ss[0] + k * ss[1]
                                                             + i * ss[2]]


@_launch.jit
def _fill_k(buf, n, v):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        buf[i] = v


@_launch.jit
def _unravel_k(pos, po, ps, shape, out, oo, os, n):
    nd = len(shape)
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        p = pos[po + k * ps]
        for d in range(nd - 1, -1, -1):
            out[oo + d * os[0] + k * os[1]] = p % shape[d]
            p //= shape[d]


@_launch.jit
def _gather_dim_k(x, xo, xs, size, idx, io, is_, out, oo, os, shape, n, bad):
    n_j = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, j, i = _launch.unravel3(t, n_j, n_i)
        v = idx[io + o * is_[0] + j * is_[1] + i * is_[2]]
        if v < 0 or v >= size:
            cuda.atomic.min(bad, 0, t)
        else:
            out[oo + o * os[0] + j * os[1] + i * os[2]] = x[xo + o * xs[0] + v * xs[1] + i * xs[2]]


# d/dx gather_dim: out[o, idx[o, j, i], i] += g[o, j, i]
@_launch.jit
def _scatter_add_dim_k(src, so, ss, idx, io, is_, out, oo, os, size, shape, n, bad):
    n_j = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, j, i = _launch.unravel3(t, n_j, n_i)
        v = idx[io + o * is_[0] + j * is_[1] + i * is_[2]]
        if v < 0 or v >= size:
            cuda.atomic.min(bad, 0, t)
        else:
            cuda.atomic.add(out, oo + o * os[0] + v * os[1] + i * os[2],
                            src[so + o * ss[0] + j * ss[1] + i * ss[2]])


# ----------------------------------------------------------------------------------------
# host side
# ----------------------------------------------------------------------------------------


def _strided(a, ndim):
    """(buffer, offset, element strides) of ``a``, which must have ``ndim`` dims."""
    a = from_any(a)
    if a.ndim != ndim:
        raise ValueError(f"expected a {ndim}-D array, got shape {a.shape}")
    st = tuple(int(s) for s in a.strides_el)
    return a.buf, a.offset, (st[0] if ndim == 1 else st)


def _ints(v):
    """Shape-like metadata (tuple, list, NumPy or CUDA array) as a tuple of Python ints."""
    if isinstance(v, CudaArray):
        v = v.to_host()
    return tuple(int(s) for s in np.asarray(v).reshape(-1))


def _flag(sentinel):
    """A one-element int64 device buffer holding ``sentinel`` (atomic-min target)."""
    return CudaArray.from_host(np.full(1, sentinel, np.int64)).buf


def _read(buf, i=0):
    # through ``to_host``, where a compiled trace records host reads (as checks to replay)
    return int(CudaArray(buf, i, (1,), (1,)).to_host()[0])


def wrap_indices(idx, size, out):
    """out = idx with negatives wrapped; returns the position of the first bad index or -1."""
    ib, io, is_ = _strided(idx, 1)
    ob, oo, os = _strided(out, 1)
    n = idx.size
    if not n:
        return -1
    bad = _flag(n)
    _launch.launch(_wrap_k, n, ib, io, is_, int(size), ob, oo, os, n, bad)
    b = _read(bad)
    return b if b < n else -1


def linearize(idx, sizes, out, wrap):
    """Row-major flat index of k index arrays (rows of ``idx``) into dims of ``sizes``.

    Negatives wrap when ``wrap``; returns (row, column) of the first out-of-range index, or
    (-1, -1).
    """
    ib, io, ist = _strided(idx, 2)
    ob, oo, os = _strided(out, 1)
    k, m = idx.shape
    sz = _ints(sizes)[:k] or (1,)
    if not m:
        return -1, -1
    sentinel = k * m
    bad = _flag(sentinel)
    _launch.launch(_linearize_k, m, ib, io, ist, sz, k, ob, oo, os, m, bool(wrap), bad)
    b = _read(bad)
    if b >= sentinel:
        return -1, -1
    return b % k, b // k


def mask_positions(mask):
    """Flat positions (a new int64 array) of the true entries of a flat boolean mask."""
    mb, mo, ms = _strided(mask, 1)
    n = mask.size
    if not n:
        return CudaArray.empty((0,), np.int64)
    chunk = -(-n // min(n, MAX_CHUNKS))
    nchunks = -(-n // chunk)
    counts = _launch.alloc(nchunks + 1, np.int64)
    _launch.launch(_count_chunks_k, nchunks, mb, mo, ms, n, chunk, nchunks, counts)
    _launch.launch_blocks(_scan_chunks_k, 1, SCAN_T, counts, nchunks)
    total = _read(counts, nchunks)
    out = CudaArray.empty((total,), np.int64)
    if total:
        _launch.launch(_write_positions_k, nchunks, mb, mo, ms, n, chunk, nchunks, counts,
                       out.buf)
    return out


def gather_axis(x, idx, out):
    """out[o, k, i] = x[o, idx[k], i]."""
    xb, xo, xs = _strided(x, 3)
    ib, io, is_ = _strided(idx, 1)
    ob, oo, os = _strided(out, 3)
    n = out.size
    _launch.launch(_gather_axis_k, n, xb, xo, xs, x.shape[1], ib, io, is_, ob, oo, os,
                   tuple(out.shape), n)


def scatter_add_axis(src, idx, out):
    """out[o, idx[k], i] += src[o, k, i] (repeated indices accumulate)."""
    sb, so, ss = _strided(src, 3)
    ib, io, is_ = _strided(idx, 1)
    ob, oo, os = _strided(out, 3)
    n = src.size
    _launch.launch(_scatter_add_axis_k, n, sb, so, ss, ib, io, is_, ob, oo, os, out.shape[1],
                   tuple(src.shape), n)


def put_axis(src, idx, out):
    """out[o, idx[k], i] = src[o, k, i] (later writes win)."""
    sb, so, ss = _strided(src, 3)
    ib, io, is_ = _strided(idx, 1)
    ob, oo, os = _strided(out, 3)
    n = src.size
    if not n:
        return
    nx = out.shape[1]
    nk = idx.shape[0]
    last = _launch.alloc(nx, np.int64)
    _launch.launch(_fill_k, nx, last, nx, -1)
    _launch.launch(_last_writer_k, nk, ib, io, is_, nk, nx, last)
    _launch.launch(_put_axis_k, n, sb, so, ss, ib, io, is_, last, ob, oo, os, nx,
                   tuple(src.shape), n)


def unravel(pos, shape, out):
    """Row-major multi-indices of flat positions: out[d, k] is the index along dim d."""
    pb, po, ps = _strided(pos, 1)
    ob, oo, os = _strided(out, 2)
    dims = _ints(shape)
    n = pos.size
    if dims:
        _launch.launch(_unravel_k, n, pb, po, ps, dims, ob, oo, os, n)


def gather_dim(x, idx, out):
    """out[o, j, i] = x[o, idx[o, j, i], i]; returns the first bad flat position or -1."""
    xb, xo, xs = _strided(x, 3)
    ib, io, is_ = _strided(idx, 3)
    ob, oo, os = _strided(out, 3)
    n = idx.size
    if not n:
        return -1
    bad = _flag(n)
    _launch.launch(_gather_dim_k, n, xb, xo, xs, x.shape[1], ib, io, is_, ob, oo, os,
                   tuple(idx.shape), n, bad)
    b = _read(bad)
    return b if b < n else -1


def scatter_add_dim(src, idx, out):
    """out[o, idx[o, j, i], i] += src[o, j, i]; returns the first bad flat position or -1."""
    sb, so, ss = _strided(src, 3)
    ib, io, is_ = _strided(idx, 3)
    ob, oo, os = _strided(out, 3)
    n = idx.size
    if not n:
        return -1
    bad = _flag(n)
    _launch.launch(_scatter_add_dim_k, n, sb, so, ss, ib, io, is_, ob, oo, os, out.shape[1],
                   tuple(idx.shape), n, bad)
    b = _read(bad)
    return b if b < n else -1
