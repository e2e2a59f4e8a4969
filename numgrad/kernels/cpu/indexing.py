"""Indexing kernels: gather/scatter along one axis, index checks, mask positions, copies."""

import numpy as np

from numgrad.kernels._jit import jit


@jit
def wrap_indices(idx, size, out):
    """out = idx with negatives wrapped; returns the position of the first bad index or -1."""
    for k in range(idx.size):
        v = idx[k]
        if v < 0:
            v += size
        if v < 0 or v >= size:
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
    for j in range(m):
        flat = 0
        for d in range(k):
            v = idx[d, j]
            if v < 0 and wrap:
                v += sizes[d]
            if v < 0 or v >= sizes[d]:
                return d, j
            flat = flat * sizes[d] + v
        out[j] = flat
    return -1, -1


@jit
def mask_positions(mask):
    """Flat positions of the true entries of a flat boolean mask."""
    n = 0
    for k in range(mask.size):
        if mask[k]:
            n += 1
    out = np.empty(n, np.int64)
    n = 0
    for k in range(mask.size):
        if mask[k]:
            out[n] = k
            n += 1
    return out


@jit
def gather_axis(x, idx, out):
    """out[o, k, i] = x[o, idx[k], i]."""
    n_o, n_k, n_i = out.shape
    for o in range(n_o):
        for k in range(n_k):
            j = idx[k]
            for i in range(n_i):
                out[o, k, i] = x[o, j, i]


@jit
def scatter_add_axis(src, idx, out):
    """out[o, idx[k], i] += src[o, k, i] (repeated indices accumulate)."""
    n_o, n_k, n_i = src.shape
    for o in range(n_o):
        for k in range(n_k):
            j = idx[k]
            for i in range(n_i):
                out[o, j, i] += src[o, k, i]


@jit
def put_axis(src, idx, out):
    """out[o, idx[k], i] = src[o, k, i] (later writes win)."""
    n_o, n_k, n_i = src.shape
    for o in range(n_o):
        for k in range(n_k):
            j = idx[k]
            for i in range(n_i):
                out[o, j, i] = src[o, k, i]


@jit
def unravel(pos, shape, out):
    """Row-major multi-indices of flat positions: out[d, k] is the index along dim d."""
    nd = len(shape)
    for k in range(pos.size):
        p = pos[k]
        for d in range(nd - 1, -1, -1):
            out[d, k] = p % shape[d]
            p //= shape[d]


@jit
def gather_dim(x, idx, out):
    """out[o, j, i] = x[o, idx[o, j, i], i]; returns the first bad flat position or -1."""
    n_o, n_j, n_i = idx.shape
    size = x.shape[1]
    for o in range(n_o):
        for j in range(n_j):
            for i in range(n_i):
                v = idx[o, j, i]
                if v < 0 or v >= size:
                    return (o * n_j + j) * n_i + i
                out[o, j, i] = x[o, v, i]
    return -1


@jit
def scatter_add_dim(src, idx, out):
    """out[o, idx[o, j, i], i] += src[o, j, i]; returns the first bad flat position or -1
    (the rows before it are already added: callers raise and drop ``out``)."""
    n_o, n_j, n_i = idx.shape
    size = out.shape[1]
    for o in range(n_o):
        for j in range(n_j):
            for i in range(n_i):
                v = idx[o, j, i]
                if v < 0 or v >= size:
                    return (o * n_j + j) * n_i + i
                out[o, v, i] += src[o, j, i]
    return -1


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
                a = out[o, v, i]
                if count[o, v, i] == 0:
                    out[o, v, i] = s
                elif mode == 1:
                    out[o, v, i] = a + s
                elif mode == 2:
                    out[o, v, i] = a * s
                elif mode == 3:
                    if s > a or s != s:
                        out[o, v, i] = s
                elif a == a and s < a or s != s:
                    out[o, v, i] = s
                count[o, v, i] += 1
    return -1


@jit
def divide_by_count(out, count, floor):
    """out /= count where count > 1 (``floor``: integer floor division), for a scatter mean;
    both (outer, size, inner)."""
    n_o, n_s, n_i = out.shape
    for o in range(n_o):
        for j in range(n_s):
            for i in range(n_i):
                c = count[o, j, i]
                if c > 1:
                    if floor:
                        out[o, j, i] = out[o, j, i] // c
                    else:
                        out[o, j, i] = out[o, j, i] / c


@jit
def index_write_dim(src, idx, out, add):
    """out[o, idx[j], i] = src[o, j, i] (``add``: +=) for index_copy/index_fill/index_add on
    (outer, size, inner) ``out``; returns the first j whose index is out of range (nothing
    written then) or -1."""
    n_o, n_j, n_i = src.shape
    size = out.shape[1]
    for j in range(n_j):
        if idx[j] < 0 or idx[j] >= size:
            return j
    for o in range(n_o):
        for j in range(n_j):
            v = idx[j]
            if add:
                for i in range(n_i):
                    out[o, v, i] = out[o, v, i] + src[o, j, i]
            else:
                for i in range(n_i):
                    out[o, v, i] = src[o, j, i]
    return -1
