"""Indexing kernels on the GPU: a thread per element (grid-stride) around the index
functions written once for both devices (``numgrad.kernels.gathers``; the CPU loops over the
same functions in ``numgrad.kernels.cpu.indexing``), with the launchers of the CPU kernels'
names and arguments.

What thousands of threads writing at once adds to the CPU's in-order loops: scatter-adds
accumulate with an atomic ``add_at``; a bad index is reported as the lowest bad position
(an atomic min) instead of stopping the loop; ``put_axis`` keeps "later writes win" with a
first pass that finds, for each target slot, the last ``k`` writing it (an atomic max), and
only that ``k`` writes; ``mask_positions`` counts the true entries per chunk, scans the
counts in one block, copies the total to the host, then each chunk writes its positions in
order.

Every array argument is a ``CudaArray`` addressed through its buffer, offset and element
strides, so strided views need no copies. Shape-like arguments (``sizes`` of ``linearize``,
``shape`` of ``unravel``) are metadata: host sequences or NumPy arrays (a ``CudaArray`` is
copied to the host). Results a CPU kernel returns as numbers (the first bad index) come back
as Python ints after a one-element device-to-host copy. Negative indices wrap in gathers,
scatter-adds and puts, as on the CPU; an index still out of range is skipped.
"""

import numpy as np
from numba import cuda, int64

from numgrad.kernels import gathers as G
from numgrad.kernels._jit import HALF_ERROR
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda import elementwise as CE
from numgrad.kernels.cuda.array import CudaArray, from_any

SCAN_T = 32 if _launch.SIM else 256  # threads of the one-block scan (its shared array size)
MAX_CHUNKS = 32 if _launch.SIM else 65536  # chunks of the mask counted by one thread each


@_launch.device
def add_at(a, i, v):
    """a[i] += v, atomically: the GPU's ``add_at`` for the kernels written once for both
    devices (several threads may add to one slot; the pooling kernels bind it too)."""
    cuda.atomic.add(a, i, v)


# the index functions as device functions (module attributes ``<name>_dev``), with the
# atomic ``add_at``: before the kernels below (the simulator copies their globals when they
# are made)
_launch.bind(G, G.GATHER_FUNCTIONS, {"add_at": add_at}, __name__)



@_launch.device
def combine_at(out, bits, k, s, mode):
    """out[k] = combine(out[k], s, mode) atomically: an atomic add for a sum, else a
    compare-and-swap loop on the slot's bit pattern (``bits``: ``out``'s buffer as integers
    of its width) that stops once the slot holds the combined value."""
    if mode == 1:
        cuda.atomic.add(out, k, s)
        return
    old = bits[k]
    while True:
        new = out.dtype.type(combine_dev(old.view(out.dtype), s, mode)).view(bits.dtype)  # noqa: F821
        if new == old:
            return
        seen = cuda.atomic.cas(bits, k, old, new)
        if seen == old:
            return
        old = seen


# ----------------------------------------------------------------------------------------
# kernels (the ``*_dev`` names are bound by ``_launch.bind``)
# ----------------------------------------------------------------------------------------


@_launch.jit
def _wrap_k(idx, io, is_, size, out, oo, os, n, bad):
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        v = wrapped_dev(idx[io + k * is_], size)  # noqa: F821
        if v < 0:
            cuda.atomic.min(bad, 0, k)
        else:
            out[oo + k * os] = v


@_launch.jit
def _linearize_k(idx, io, ist, sizes, nk, out, oo, os, m, wrap, bad):
    for j in range(cuda.grid(1), m, cuda.gridsize(1)):
        flat, d = flat_index_dev(idx, io + j * ist[1], ist[0], sizes, nk, wrap)  # noqa: F821
        if d >= 0:
            cuda.atomic.min(bad, 0, j * nk + d)  # (column, row) order: the CPU's first
        else:
            out[oo + j * os] = flat


@_launch.jit
def _count_chunks_k(mask, mo, ms, n, chunk, nchunks, counts):
    for c in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
        counts[c] = count_true_dev(mask, mo, ms, c * chunk, min(n, (c + 1) * chunk))  # noqa: F821


@_launch.jit
def _scan_chunks_k(counts, nchunks):
    # one block: counts[:nchunks] becomes its exclusive prefix sum, counts[nchunks] the total
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    per = (nchunks + nt - 1) // nt
    lo = min(nchunks, t * per)
    hi = min(nchunks, lo + per)
    part = cuda.shared.array(SCAN_T, int64)
    part[t] = range_sum_dev(counts, lo, hi)  # noqa: F821
    cuda.syncthreads()
    if t == 0:
        counts[nchunks] = prefix_sums_dev(part, 0, nt, 0)  # noqa: F821
    cuda.syncthreads()
    prefix_sums_dev(counts, lo, hi, part[t])  # noqa: F821


@_launch.jit
def _write_positions_k(mask, mo, ms, n, chunk, nchunks, counts, out):
    for c in range(cuda.grid(1), nchunks, cuda.gridsize(1)):
        write_true_dev(mask, mo, ms, c * chunk, min(n, (c + 1) * chunk), out,  # noqa: F821
                       counts[c])


@_launch.jit
def _gather_axis_k(x, xo, xs, nx, idx, io, is_, out, oo, os, shape, n):
    n_k = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, k, i = _launch.unravel3(t, n_k, n_i)
        gather_one_dev(x, xo + o * xs[0] + i * xs[2], xs[1], nx,  # noqa: F821
                       wrapped_dev(idx[io + k * is_], nx),  # noqa: F821
                       out, oo + o * os[0] + k * os[1] + i * os[2])


@_launch.jit
def _scatter_add_axis_k(src, so, ss, idx, io, is_, out, oo, os, nx, shape, n):
    n_k = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, k, i = _launch.unravel3(t, n_k, n_i)
        scatter_add_one_dev(src, so + o * ss[0] + k * ss[1] + i * ss[2],  # noqa: F821
                            wrapped_dev(idx[io + k * is_], nx), nx,  # noqa: F821
                            out, oo + o * os[0] + i * os[2], os[1])


@_launch.jit
def _last_writer_k(idx, io, is_, nk, nx, last):
    for k in range(cuda.grid(1), nk, cuda.gridsize(1)):
        j = wrapped_dev(idx[io + k * is_], nx)  # noqa: F821
        if j >= 0:
            cuda.atomic.max(last, j, k)


@_launch.jit
def _put_axis_k(src, so, ss, idx, io, is_, last, out, oo, os, nx, shape, n):
    n_k = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, k, i = _launch.unravel3(t, n_k, n_i)
        j = wrapped_dev(idx[io + k * is_], nx)  # noqa: F821
        if j >= 0 and last[j] == k:  # only the last k naming slot j writes it
            put_one_dev(src, so + o * ss[0] + k * ss[1] + i * ss[2], j, nx,  # noqa: F821
                        out, oo + o * os[0] + i * os[2], os[1])


@_launch.jit
def _fill_k(buf, bo, bs, shape, n, v):
    n_r = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, r, i = _launch.unravel3(t, n_r, n_i)
        fill_run_dev(buf, bo + o * bs[0] + r * bs[1] + i * bs[2], 1, 1, v)  # noqa: F821


@_launch.jit
def _unravel_k(pos, po, ps, shape, out, oo, os, n):
    nd = len(shape)
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        unravel_one_dev(pos[po + k * ps], shape, nd, out, oo + k * os[1], os[0])  # noqa: F821


@_launch.jit
def _gather_dim_k(x, xo, xs, size, idx, io, is_, out, oo, os, shape, n, bad):
    n_j = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, j, i = _launch.unravel3(t, n_j, n_i)
        if not gather_one_dev(x, xo + o * xs[0] + i * xs[2], xs[1], size,  # noqa: F821
                              idx[io + o * is_[0] + j * is_[1] + i * is_[2]],
                              out, oo + o * os[0] + j * os[1] + i * os[2]):
            cuda.atomic.min(bad, 0, t)


@_launch.jit
def _scatter_add_dim_k(src, so, ss, idx, io, is_, out, oo, os, size, shape, n, bad):
    n_j = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, j, i = _launch.unravel3(t, n_j, n_i)
        if not scatter_add_one_dev(src, so + o * ss[0] + j * ss[1] + i * ss[2],  # noqa: F821
                                   idx[io + o * is_[0] + j * is_[1] + i * is_[2]], size,
                                   out, oo + o * os[0] + i * os[2], os[1]):
            cuda.atomic.min(bad, 0, t)


@_launch.jit
def _reduce_prepare_k(idx, io, is_, out, oo, os, cnt, size, shape, n, mode, ident, bad):
    # the first bad position; mode 0: the last j writing each slot (cnt); else each slot
    # holding no value yet (count 0) starts at the reduction's identity
    n_j = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, j, i = _launch.unravel3(t, n_j, n_i)
        v = idx[io + o * is_[0] + j * is_[1] + i * is_[2]]
        if v < 0 or v >= size:
            cuda.atomic.min(bad, 0, t)
            continue
        c = (o * size + v) * n_i + i
        if mode == 0:
            cuda.atomic.max(cnt, c, j)
        elif cnt[c] == 0:
            out[oo + o * os[0] + v * os[1] + i * os[2]] = ident


@_launch.jit
def _put_last_k(src, so, ss, idx, io, is_, out, oo, os, last, size, shape, n):
    # mode 0: only the last j naming a slot writes it
    n_j = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, j, i = _launch.unravel3(t, n_j, n_i)
        v = idx[io + o * is_[0] + j * is_[1] + i * is_[2]]
        if v >= 0 and v < size and last[(o * size + v) * n_i + i] == j:
            put_one_dev(src, so + o * ss[0] + j * ss[1] + i * ss[2], v, size,  # noqa: F821
                        out, oo + o * os[0] + i * os[2], os[1])


@_launch.jit
def _reduce_k(src, so, ss, idx, io, is_, out, oo, os, bits, cnt, size, shape, n, mode):
    # modes 1-4: each value combined into its slot, and counted there
    n_j = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, j, i = _launch.unravel3(t, n_j, n_i)
        v = idx[io + o * is_[0] + j * is_[1] + i * is_[2]]
        if v >= 0 and v < size:
            combine_at(out, bits, oo + o * os[0] + v * os[1] + i * os[2],
                       src[so + o * ss[0] + j * ss[1] + i * ss[2]], mode)
            cuda.atomic.add(cnt, (o * size + v) * n_i + i, 1)


@_launch.jit
def _divide_by_count_k(out, oo, os, cnt, shape, n, floor):
    n_s = shape[1]
    n_i = shape[2]
    for t in range(cuda.grid(1), n, cuda.gridsize(1)):
        o, j, i = _launch.unravel3(t, n_s, n_i)
        mean_slot_dev(out, oo + o * os[0] + j * os[1] + i * os[2], cnt[t], floor)  # noqa: F821


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


def _read(buf, i=0):
    # through ``to_host``, where a compiled trace records host reads (as checks to replay)
    return int(CudaArray(buf, i, (1,), (1,)).to_host()[0])


def fill_3d(out, v):
    """out[...] = v for a 3-D CudaArray (any strides)."""
    ob, oo, os = _strided(out, 3)
    n = out.size
    _launch.launch(_fill_k, n, ob, oo, os, tuple(out.shape), n, out.dtype.type(v))


def device_int(v):
    """A one-element int64 CudaArray holding ``v`` (an atomic-min target, a flag), filled by a
    kernel: a compiled plan records the fill (a copy from the host would make it run
    eagerly)."""
    res = CudaArray.empty((1,), np.int64)
    fill_3d(res.reshape(1, 1, 1), v)
    return res


def first_found(res, n):
    """The lowest position an atomic min left in ``res`` (``device_int(n)``), or -1."""
    r = _read(res.buf)
    return r if r < n else -1


def wrap_indices(idx, size, out):
    """out = idx with negatives wrapped; returns the position of the first bad index or -1."""
    ib, io, is_ = _strided(idx, 1)
    ob, oo, os = _strided(out, 1)
    n = idx.size
    if not n:
        return -1
    bad = device_int(n)
    _launch.launch(_wrap_k, n, ib, io, is_, int(size), ob, oo, os, n, bad.buf)
    return first_found(bad, n)


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
    bad = device_int(sentinel)
    _launch.launch(_linearize_k, m, ib, io, ist, sz, k, ob, oo, os, m, bool(wrap), bad.buf)
    b = _read(bad.buf)
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
    _launch.launch(_fill_k, nx, last, 0, (0, 0, 1), (1, 1, nx), nx, -1)
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
    bad = device_int(n)
    _launch.launch(_gather_dim_k, n, xb, xo, xs, x.shape[1], ib, io, is_, ob, oo, os,
                   tuple(idx.shape), n, bad.buf)
    return first_found(bad, n)


def scatter_add_dim(src, idx, out):
    """out[o, idx[o, j, i], i] += src[o, j, i]; returns the first bad flat position or -1."""
    sb, so, ss = _strided(src, 3)
    ib, io, is_ = _strided(idx, 3)
    ob, oo, os = _strided(out, 3)
    n = idx.size
    if not n:
        return -1
    bad = device_int(n)
    _launch.launch(_scatter_add_dim_k, n, sb, so, ss, ib, io, is_, ob, oo, os, out.shape[1],
                   tuple(idx.shape), n, bad.buf)
    return first_found(bad, n)


# scatter_reduce computes 1- and 2-byte integers (and bools) in int32, which has atomics: sums
# and products wrap to the same low bits, and max/min are exact
_WIDE = {np.dtype(t): np.dtype(np.int32) for t in (np.bool_, np.int8, np.uint8, np.int16)}
_BITS = {4: np.dtype(np.int32), 8: np.dtype(np.int64)}


def _identity(dtype, mode):
    """The value a slot holding no value starts from: combine(identity, s, mode) is s."""
    if mode == 1:
        return dtype.type(-0.0 if dtype.kind == "f" else 0)  # -0.0 + s is s, -0.0 included
    if mode == 2:
        return dtype.type(1)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    big = np.inf if dtype.kind == "f" else info.max
    return dtype.type(-big if mode == 3 and dtype.kind == "f" else
                      info.min if mode == 3 else big)


def scatter_reduce_dim(src, idx, out, count, mode):
    """out[o, idx[o, j, i], i] combined with src[o, j, i] as the CPU's ``scatter_reduce_dim``
    (``mode`` 0 replaces, the last j winning; 1 adds, 2 multiplies, 3 max, 4 min; ``count``,
    contiguous and ``out``-shaped unless mode is 0, counts the values of each slot, 0 where
    the slot's own value is left out); returns the first bad flat position or -1."""
    if out.dtype.itemsize == 2 and out.dtype.kind != "i":  # float16, bfloat16
        raise RuntimeError(HALF_ERROR)  # as the CPU's kernel
    n = idx.size
    if not n:
        return -1
    wide = _WIDE.get(out.dtype) if mode else None
    if wide is not None:
        w = out.astype(wide)
        bad = scatter_reduce_dim(src.astype(wide), idx, w, count, mode)
        CE.copy_into(w, out)
        return bad
    sb, so, ss = _strided(src, 3)
    ib, io, is_ = _strided(idx, 3)
    ob, oo, os = _strided(out, 3)
    if mode == 0:
        cnt = _launch.alloc(out.size, np.int64)
        _launch.launch(_fill_k, out.size, cnt, 0, (0, 0, 1), (1, 1, out.size), out.size, -1)
    else:
        cnt = from_any(count).buf
    size = out.shape[1]
    bad = device_int(n)
    shape = tuple(idx.shape)
    _launch.launch(_reduce_prepare_k, n, ib, io, is_, ob, oo, os, cnt, size, shape, n, mode,
                   _identity(out.dtype, mode or 1), bad.buf)
    if mode == 0:
        _launch.launch(_put_last_k, n, sb, so, ss, ib, io, is_, ob, oo, os, cnt, size, shape, n)
    else:
        bits = ob if out.dtype.kind in "iu" else ob.view(_BITS[out.dtype.itemsize])
        _launch.launch(_reduce_k, n, sb, so, ss, ib, io, is_, ob, oo, os, bits, cnt, size,
                       shape, n, mode)
    return first_found(bad, n)


def divide_by_count(out, count, floor):
    """out /= count where count > 1 (``floor``: integer floor division), for a scatter mean;
    ``count`` contiguous and ``out``-shaped."""
    ob, oo, os = _strided(out, 3)
    n = out.size
    _launch.launch(_divide_by_count_k, n, ob, oo, os, from_any(count).buf, tuple(out.shape), n,
                   bool(floor))
