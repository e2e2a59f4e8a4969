"""Reductions on the GPU: the launch machinery of the row kernels and what is not a row.

The reductions along a dim (sum/mean, amax/amin, max/min with indices, norms), the softmax
family and logsumexp are row kernels written once for both devices (``numgrad.kernels.rows``;
their CUDA launchers are in ``numgrad.kernels.cuda.rows``, and this module's names
``sum_3d`` ... ``norm_3d`` are theirs). This module holds what those launches stand on:

Every launch works on a strided 3-D view ``(outer, reduced, inner)`` of its input (given as
flat buffer, offset and three element strides, so the views made by ``as3d`` need no copy)
and writes an ``(outer, inner)`` result. Each output element ``(o, i)`` (a "row" along the
reduced axis) is served by a segment of ``tr`` threads of a block (``tr`` a power of two,
1..blockDim, ``_lanes``): the lanes stride over the reduced axis, then combine their partial
results by trees in shared memory (``_tree_sum``, ``_tree_ext``, ``_tree_best``: the row
team's combines). With ``tr == blockDim`` this is one block per output; with smaller ``tr``
one block serves several outputs, which keeps the GPU busy when the reduced axis is short or
strided. A segment's lanes are adjacent threads when the reduced axis has unit stride, and
interleaved with the other segments' (``ls`` threads apart) when the inner axis has it, so
a warp's loads are coalesced either way. Blocks loop over groups of outputs (block-stride),
so any grid size is correct (the simulator runs one block of 32 threads).

``sum_all`` over a large array sums its chunks first, a block each (``sum_row`` over a
chunk: the partial sums), then the partials in one row (deterministic, unlike atomics). The
gathers along r, their gradient and the nan check are index functions written once for both
devices (``numgrad.kernels.gathers``), a thread per element here.
"""

from numba import cuda

from numgrad.kernels.cpu.reduction import as3d, runs  # pure shape helpers: work on CudaArray
from numgrad.kernels.cuda import _launch
from numgrad.kernels.cuda.array import CudaArray, from_any
from numgrad.kernels.cuda.indexing import (  # bound there from ``numgrad.kernels.gathers``
    device_int,
    fill_3d,
    gather_one_dev,
    has_nan_run_dev,
    put_one_dev,
)

__all__ = ["runs", "as3d", "put_along_3d", "has_nan", "take_along_3d", "reduce_dims", "sum_all",
           "sum_dims"]

NT = 256  # shared-memory slots per block: at least the threads of any launch here
assert _launch.THREADS <= NT
# outputs x lanes that keep the GPU busy: below this, rows get more lanes (see ``_lanes``)
SATURATE = 64 if _launch.SIM else 1 << 17
# sum_all: one block reduces up to this many elements; above, per-block partials first
ONE_BLOCK = 64 if _launch.SIM else 1 << 15
PART_BLOCKS = 3 if _launch.SIM else 1024

# mode of the index reductions (``_wins``)
MIN, MAX = 0, 1

# ----------------------------------------------------------------------------------------
# device functions: segment-wide (tr lanes) reductions in shared memory
# ----------------------------------------------------------------------------------------


@_launch.device
def _tree_sum(sh, t, lane, tr, ls, acc):
    """Sum of ``acc`` over the ``tr`` lanes of thread ``t``'s segment (lanes ``ls`` threads
    apart), returned to every lane. Every thread of the block must call it (it syncs)."""
    sh[t] = acc
    cuda.syncthreads()
    s = tr // 2
    while s > 0:
        if lane < s:
            sh[t] += sh[t + s * ls]
        cuda.syncthreads()
        s //= 2
    res = sh[t - lane * ls]
    cuda.syncthreads()
    return res


@_launch.device
def _tree_ext(sh, t, lane, tr, ls, v, big):
    """Max (``big``) or min of ``v`` over the segment's lanes; nan wins."""
    sh[t] = v
    cuda.syncthreads()
    s = tr // 2
    while s > 0:
        if lane < s:
            a = sh[t]
            b = sh[t + s * ls]
            if a == a and (b != b or (b > a if big else b < a)):
                sh[t] = b
        cuda.syncthreads()
        s //= 2
    res = sh[t - lane * ls]
    cuda.syncthreads()
    return res


@_launch.device
def _wins(x, p, xs1, a, b, mode):
    """Whether index ``b`` beats index ``a`` along the row at ``p`` (stride ``xs1``).

    MAX / MIN: nan beats numbers; ties: the lower index."""
    va = x[p + a * xs1]
    vb = x[p + b * xs1]
    na = va != va
    nb = vb != vb
    if na or nb:
        if na and nb:
            return b < a
        return nb
    if va == vb:
        return b < a
    if mode == MIN:
        return vb < va
    return vb > va


@_launch.device
def _tree_best(sh, t, lane, tr, ls, best, x, p, xs1, mode):
    """The best of the lanes' candidate indices (-1: none), returned to every lane."""
    sh[t] = best
    cuda.syncthreads()
    s = tr // 2
    while s > 0:
        if lane < s:
            b = sh[t + s * ls]
            if b >= 0:
                a = sh[t]
                if a < 0 or _wins(x, p, xs1, a, b, mode):
                    sh[t] = b
        cuda.syncthreads()
        s //= 2
    res = sh[t - lane * ls]
    cuda.syncthreads()
    return res


@_launch.device
def _seg_output(base, t, ls, tr):
    """The output a thread serves in a block's group starting at ``base``: ``per`` outputs of
    ``tr`` lanes each, lanes ``ls`` threads apart."""
    return base + t % ls + (t // (ls * tr)) * ls


# ----------------------------------------------------------------------------------------
# sum_all's first pass: ``sum_row`` (the row function of every sum) over the chunks of a
# large array, a block per chunk, its threads the row's team (``f``: the ``sum_row`` device
# function of ``numgrad.kernels.cuda.rows``, bound by its ``_kernel``)
# ----------------------------------------------------------------------------------------


def _part_k(x, xo, xs, n, chunk, nparts, part, acc):
    """part[b] = the sum of x[b * chunk:(b + 1) * chunk] (in ``acc``'s type)."""
    sh = cuda.shared.array(NT, ACC)  # noqa: F821  (``acc``'s type, bound)
    t = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for b in range(cuda.blockIdx.x, nparts, cuda.gridDim.x):
        lo = b * chunk
        f(x, xo + lo * xs, xs, min(chunk, n - lo), part, b, acc + 1, acc,  # noqa: F821
          (t, nt, t == 0, t, 1, sh))


# ----------------------------------------------------------------------------------------
# gathers along r, their gradient, nan check: a thread per element around the index
# functions written once for both devices (``numgrad.kernels.gathers``, bound in
# ``numgrad.kernels.cuda.indexing``; the CPU loops are ``numgrad.kernels.cpu.reduction``'s)
# ----------------------------------------------------------------------------------------


@_launch.jit
def take_along_kernel(x, xo, xs0, xs1, xs2, idx, io, is0, is1, out, oo, os0, os1, n_r, n_i,
                      n):
    """out[o, i] = x[o, idx[o, i], i]."""
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        o = k // n_i
        i = k - o * n_i
        gather_one_dev(x, xo + o * xs0 + i * xs2, xs1, n_r, idx[io + o * is0 + i * is1], out,
                       oo + o * os0 + i * os1)


# d/dx of a gather along r: out = 0, then out[o, idx[o, i], i] = src[o, i]
@_launch.jit
def put_along_kernel(src, so, ss0, ss1, idx, io, is0, is1, out, oo, os0, os1, os2, n_r, n_i,
                     n):
    for k in range(cuda.grid(1), n, cuda.gridsize(1)):
        o = k // n_i
        i = k - o * n_i
        put_one_dev(src, so + o * ss0 + i * ss1, idx[io + o * is0 + i * is1], n_r, out,
                    oo + o * os0 + i * os2, os1)


@_launch.jit
def has_nan_kernel(x, xo, xs, n, flag):
    """flag[0] = 1 if any x[j] is nan (only ever written with 1: no race)."""
    for j in range(cuda.grid(1), n, cuda.gridsize(1)):
        if has_nan_run_dev(x, xo + j * xs, xs, 1):
            flag[0] = 1


# ----------------------------------------------------------------------------------------
# launch helpers
# ----------------------------------------------------------------------------------------


def _geom(a):
    """Kernel arguments of a strided view: flat buffer, offset, one stride per dim."""
    return (a.buf, a.offset) + tuple(a.strides_el)


def _lanes(n_r, n_out, xs1):
    """Threads per row: enough to cover the reduced axis (a power of two up to a block), but
    fewer when the reduced axis is strided and there are outputs enough to fill the GPU
    (then neighbouring threads take neighbouring outputs: coalesced when inner is)."""
    tr = 1
    while tr < n_r and tr < _launch.THREADS:
        tr *= 2
    if xs1 != 1:
        while tr > 1 and n_out * (tr // 2) >= SATURATE:
            tr //= 2
    return tr


def _rows(k, x3, arrays, tail=()):
    """Launch row kernel ``k(*arrays, n_o, n_r, n_i, tr, ls, *tail)`` over the (outer, inner)
    rows of the 3-D view ``x3``."""
    n_o, n_r, n_i = x3.shape
    n_out = n_o * n_i
    tr = _lanes(n_r, n_out, x3.strides_el[1])
    per = _launch.THREADS // tr
    # lanes of a row ``per`` threads apart when inner is the unit-stride axis: neighbouring
    # threads then read neighbouring outputs' elements (coalesced); else lanes are adjacent
    ls = per if x3.strides_el[1] != 1 and x3.strides_el[2] == 1 else 1
    blocks = min((n_out + per - 1) // per, _launch.MAX_BLOCKS)
    _launch.launch_blocks(k, blocks, _launch.THREADS, *arrays, n_o, n_r, n_i, tr, ls, *tail)


def _is_float(a):
    return a.dtype.kind == "f"


# ----------------------------------------------------------------------------------------
# the CPU kernels' twins (same arguments, CudaArrays for arrays, same return values)
# ----------------------------------------------------------------------------------------


def put_along_3d(src, idx, out):
    """out = 0; out[o, idx[o, i], i] = src[o, i] (the backward of max/min along a dim)."""
    src, idx, out = from_any(src), from_any(idx), from_any(out)
    if out.size:
        fill_3d(out, 0)
        n = src.size
        _launch.launch(put_along_kernel, n, *_geom(src), *_geom(idx), *_geom(out),
                       out.shape[1], out.shape[2], n)


def has_nan(x):
    """Whether flat array ``x`` holds a nan (anomaly mode)."""
    x = from_any(x)
    if not _is_float(x) or not x.size:
        return False
    flat = x.reshape(-1)
    flag = device_int(0)
    _launch.launch(has_nan_kernel, flat.size, *_geom(flat), flat.size, flag.buf)
    return bool(flag.item())


def take_along_3d(x, idx, out):
    """out[o, i] = x[o, idx[o, i], i] (gather along r with per-position indices)."""
    x, idx, out = from_any(x), from_any(idx), from_any(out)
    n = out.size
    if n:
        _launch.launch(take_along_kernel, n, *_geom(x), *_geom(idx), *_geom(out),
                       x.shape[1], out.shape[1], n)


# ----------------------------------------------------------------------------------------
# launchers (same signatures as the CPU ones)
# ----------------------------------------------------------------------------------------


# the reductions along a dim are row kernels written once (``numgrad.kernels.rows``): their
# CUDA launchers are ``numgrad.kernels.cuda.rows``' (imported on use: that module imports
# this one), reached here by name
_ROW_REDUCTIONS = ("sum_3d", "extreme_3d", "extreme_index_3d", "norm_3d")


def _rows_module():
    from numgrad.kernels.cuda import rows
    return rows


def __getattr__(name):
    if name in _ROW_REDUCTIONS:
        return getattr(_rows_module(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _twin_of(kernel):
    """The CUDA launcher of a CPU row reduction (a Numba dispatcher or a launcher of
    ``numgrad.kernels.cpu.rows``) or of one of ours: ``numgrad.kernels.cuda.rows``' function
    of its name (the kernel modules of both devices share their names)."""
    return getattr(_rows_module(), getattr(kernel, "py_func", kernel).__name__)


def _keep_shape(shape, start, stop):
    return shape[:start] + (1,) * (stop - start) + shape[stop:]


def reduce_dims(kernel, x, dims, dtype, *args):
    """Apply an (outer, r, inner) -> (outer, inner) kernel over ``dims`` (sorted, non-empty).

    Returns the result with the reduced dims kept as size 1.
    """
    k3 = _twin_of(kernel)
    x = from_any(x)
    passes = runs(dims)
    last = len(passes) - 1
    for n, (start, stop) in enumerate(reversed(passes)):
        x3 = as3d(x, start, stop)
        out = CudaArray.empty((x3.shape[0], x3.shape[2]), dtype)
        # the scale of sum/mean applies once, on the last pass (an earlier one may produce
        # nothing); other kernels take the same arguments every pass
        k3(x3, out, *(args if n == last or k3 is not _rows_module().sum_3d
                      else (args[0].__class__(1),)))
        x = out.reshape(_keep_shape(x.shape, start, stop))
    return x


def sum_all(x, dtype, scale):
    """scale * sum of every element, as a 0-d array (two passes for large arrays)."""
    x = from_any(x)
    out = CudaArray.empty((1, 1), dtype)
    flat = x.reshape(-1)
    n = flat.size
    if n > ONE_BLOCK:
        threads = _launch.THREADS
        nparts = min((n + 4 * threads - 1) // (4 * threads), PART_BLOCKS)
        chunk = -(-n // nparts)
        nparts = -(-n // chunk)
        rows = _rows_module()
        acc = rows.acc_zero(x)
        part = CudaArray.empty((nparts,), acc.dtype)
        _launch.launch_blocks(rows._kernel(_part_k, "sum_row", acc.dtype.name), nparts,
                              threads, *_geom(flat), n, chunk, nparts, part.buf, acc)
        flat = part
    _rows_module().sum_3d(flat.reshape(1, flat.size, 1), out, scale)
    return out.reshape(())


def sum_dims(x, dims, dtype, scale):
    """sum over ``dims`` (non-empty) times ``scale`` (mean: 1/n); reduced dims kept as 1."""
    return reduce_dims(_rows_module().sum_3d, x, dims, dtype, scale)
