"""Indexing kernels on the CPU. Gathers, scatter-adds, puts, index checks and mask positions
are loops, in index order, over the index functions written once for both devices
(``numgrad.kernels.gathers``; ``numgrad.kernels.cuda.indexing`` runs the same functions a
thread per element); ``index_write_dim`` (index_copy/index_fill/index_add) is a put or a
scatter-add after its check (a CUDA tensor's calls those of ``cuda.indexing``);
``scatter_reduce_dim`` reduces each value into its slot with ``combine`` (written once: the
GPU's runs it in a compare-and-swap loop)."""

import numpy as np

from numgrad.kernels import gathers as G
from numgrad.kernels._jit import jit
from numgrad.kernels.cpu._bind import bind

F = bind(G, G.GATHER_FUNCTIONS, __name__)  # this device's copies of the index functions

# the kernels an op calls with data of either device: the handle (IDX.<name>) hands CUDA
# data to ``numgrad.kernels.cuda.indexing``'s kernel of the same name
EITHER_DEVICE = ("gather_axis", "scatter_add_axis", "put_axis", "gather_dim", "scatter_add_dim",
                 "scatter_reduce_dim", "divide_by_count")
_wrapped = F["wrapped"]
_flat_index = F["flat_index"]
_unravel_one = F["unravel_one"]
_count_true = F["count_true"]
_write_true = F["write_true"]
_copy_run = F["copy_run"]
_add_run = F["add_run"]
_gather_one = F["gather_one"]
_scatter_add_one = F["scatter_add_one"]
_put_one = F["put_one"]
_combine = F["combine"]
_mean_slot = F["mean_slot"]


@jit
def wrap_indices(idx, size, out):
    """out = idx with negatives wrapped; returns the position of the first bad index or -1."""
    for k in range(idx.size):
        v = _wrapped(idx[k], size)
        if v < 0:
            return k
        out[k] = v
    return -1


@jit
def linearize(idx, sizes, out, wrap):
    """Row-major flat index of k index arrays (rows of ``idx``) into dims of ``sizes``.

    Negatives wrap when ``wrap``; returns (row, column) of the first out-of-range index, or
    (-1, -1).
    """
    k, m = idx.shape
    bad_row = bad_col = -1
    for j in range(m):
        flat, d = _flat_index(idx[:, j], 0, 1, sizes, k, wrap)
        # no return inside the loops of this module: it keeps Numba from hoisting the views'
        # reference counts (2-10x slower)
        if bad_row < 0:
            if d >= 0:
                bad_row, bad_col = d, j
            else:
                out[j] = flat
    return bad_row, bad_col


@jit
def mask_positions(mask):
    """Flat positions of the true entries of a flat boolean mask."""
    n = mask.size
    out = np.empty(_count_true(mask, 0, 1, 0, n), np.int64)
    _write_true(mask, 0, 1, 0, n, out, 0)
    return out


# (outer, n, inner) views: runs along inner for each index; with inner = 1, lines along n
# (the views made once per outer index: 1.3-1.6x faster than a view per element)


@jit
def gather_axis(x, idx, out):
    """out[o, k, i] = x[o, idx[k], i] (negative indices wrap; one out of range is skipped)."""
    n_o, n_k, n_i = out.shape
    nx = x.shape[1]
    if n_i == 1:
        for o in range(n_o):
            xl = x[o, :, 0]
            ol = out[o, :, 0]
            for k in range(n_k):
                _gather_one(xl, 0, 1, nx, _wrapped(idx[k], nx), ol, k)
        return
    for o in range(n_o):
        for k in range(n_k):
            j = _wrapped(idx[k], nx)
            if j >= 0:
                _copy_run(x[o, j], 0, 1, out[o, k], 0, 1, n_i)


@jit
def scatter_add_axis(src, idx, out):
    """out[o, idx[k], i] += src[o, k, i] (repeated indices accumulate)."""
    n_o, n_k, n_i = src.shape
    nx = out.shape[1]
    if n_i == 1:
        for o in range(n_o):
            sl = src[o, :, 0]
            ol = out[o, :, 0]
            for k in range(n_k):
                _scatter_add_one(sl, k, _wrapped(idx[k], nx), nx, ol, 0, 1)
        return
    for o in range(n_o):
        for k in range(n_k):
            j = _wrapped(idx[k], nx)
            if j >= 0:
                _add_run(src[o, k], 0, 1, out[o, j], 0, 1, n_i)


@jit
def put_axis(src, idx, out):
    """out[o, idx[k], i] = src[o, k, i] (later writes win)."""
    n_o, n_k, n_i = src.shape
    nx = out.shape[1]
    if n_i == 1:
        for o in range(n_o):
            sl = src[o, :, 0]
            ol = out[o, :, 0]
            for k in range(n_k):
                _put_one(sl, k, _wrapped(idx[k], nx), nx, ol, 0, 1)
        return
    for o in range(n_o):
        for k in range(n_k):
            j = _wrapped(idx[k], nx)
            if j >= 0:
                _copy_run(src[o, k], 0, 1, out[o, j], 0, 1, n_i)


@jit
def unravel(pos, shape, out):
    """Row-major multi-indices of flat positions: out[d, k] is the index along dim d."""
    nd = len(shape)
    for k in range(pos.size):
        _unravel_one(pos[k], shape, nd, out[:, k], 0, 1)


@jit
def gather_dim(x, idx, out):
    """out[o, j, i] = x[o, idx[o, j, i], i]; returns the first bad flat position or -1."""
    n_o, n_j, n_i = idx.shape
    size = x.shape[1]
    bad = -1
    if n_i == 1:
        for o in range(n_o):
            xl = x[o, :, 0]
            il = idx[o, :, 0]
            ol = out[o, :, 0]
            for j in range(n_j):
                if not _gather_one(xl, 0, 1, size, il[j], ol, j) and bad < 0:
                    bad = o * n_j + j
        return bad
    for o in range(n_o):
        xo = x[o]
        for j in range(n_j):
            ij = idx[o, j]
            oj = out[o, j]
            for i in range(n_i):
                if not _gather_one(xo[:, i], 0, 1, size, ij[i], oj, i) and bad < 0:
                    bad = (o * n_j + j) * n_i + i
    return bad


@jit
def scatter_add_dim(src, idx, out):
    """out[o, idx[o, j, i], i] += src[o, j, i]; returns the first bad flat position or -1
    (the other positions are added: callers raise and drop ``out``)."""
    n_o, n_j, n_i = idx.shape
    size = out.shape[1]
    bad = -1
    if n_i == 1:
        for o in range(n_o):
            sl = src[o, :, 0]
            il = idx[o, :, 0]
            ol = out[o, :, 0]
            for j in range(n_j):
                if not _scatter_add_one(sl, j, il[j], size, ol, 0, 1) and bad < 0:
                    bad = o * n_j + j
        return bad
    for o in range(n_o):
        oo = out[o]
        for j in range(n_j):
            ij = idx[o, j]
            sj = src[o, j]
            for i in range(n_i):
                if not _scatter_add_one(sj, i, ij[i], size, oo[:, i], 0, 1) and bad < 0:
                    bad = (o * n_j + j) * n_i + i
    return bad


@jit
def scatter_reduce_dim(src, idx, out, count, mode):
    """out[o, idx[o, j, i], i] combined with src[o, j, i]: ``mode`` 0 replaces, 1 adds, 2
    multiplies, 3 keeps the max, 4 the min (a NaN wins both). ``count`` (unused by mode 0)
    counts the values each slot holds: a slot at 0 takes src as it is. Returns the first bad
    flat position or -1 (earlier rows are already written: callers raise and drop ``out``)."""
    n_o, n_j, n_i = idx.shape
    size = out.shape[1]
    for o in range(n_o):
        for j in range(n_j):
            for i in range(n_i):
                v = idx[o, j, i]
                if v < 0 or v >= size:
                    return (o * n_j + j) * n_i + i
                s = src[o, j, i]
                if mode == 0:
                    out[o, v, i] = s
                    continue
                if count[o, v, i] == 0:
                    out[o, v, i] = s
                else:
                    out[o, v, i] = _combine(out[o, v, i], s, mode)
                count[o, v, i] += 1
    return -1


@jit
def divide_by_count(out, count, floor):
    """out /= count where count > 1 (``floor``: integer floor division), for a scatter mean;
    both (outer, size, inner)."""
    n_o, n_s, n_i = out.shape
    for o in range(n_o):
        if n_i == 1:
            ol = out[o, :, 0]
            cl = count[o, :, 0]
            for j in range(n_s):
                _mean_slot(ol, j, cl[j], floor)
            continue
        for j in range(n_s):
            oj = out[o, j]
            cj = count[o, j]
            for i in range(n_i):
                _mean_slot(oj, i, cj[i], floor)


@jit
def index_write_dim(src, idx, out, add):
    """out[o, idx[j], i] = src[o, j, i] (``add``: +=) for index_copy/index_fill/index_add on
    (outer, size, inner) ``out``: ``put_axis`` (``scatter_add_axis``) once every index is in
    range; returns the first j whose index is out of range (nothing written then) or -1."""
    size = out.shape[1]
    for j in range(idx.size):
        if idx[j] < 0 or idx[j] >= size:
            return j
    if add:
        scatter_add_axis(src, idx, out)
    else:
        put_axis(src, idx, out)
    return -1
