"""Line kernels written once for both devices: each function works on one line of a
C-contiguous (outer, n, inner) array, addressed as a flat buffer, an element offset and the
stride ``s`` (= inner) between its n elements. ``numgrad.kernels.cpu.lines`` compiles them
into ``@njit`` loops over the lines (``prange``), ``numgrad.kernels.cuda.lines`` into
grid-stride CUDA kernels with one thread per line. No Numba import here."""


def cumsum_line(x, xo, out, oo, n, s, acc):
    """out[r] = x[0] + ... + x[r], accumulated in ``acc``'s type (float64 or int64)."""
    total = acc
    for r in range(n):
        total += x[xo + r * s]
        out[oo + r * s] = total


def cumprod_line(x, xo, out, oo, n, s, acc):
    """out[r] = x[0] * ... * x[r], accumulated in ``acc``'s type (float64 or int64)."""
    total = acc
    for r in range(n):
        total *= x[xo + r * s]
        out[oo + r * s] = total


def sort_line(x, xo, vals, idx, oo, a, b, to, n, s, desc):
    """Stable merge sort of one line: values and their indices along the line. NaN counts as
    larger than any number (last ascending, first descending), as PyTorch sorts. ``a`` and
    ``b`` are int64 scratch lines (offset ``to``, stride 1)."""
    for r in range(n):
        a[to + r] = r
    src = a
    dst = b
    w = 1
    while w < n:
        lo = 0
        while lo < n:
            mid = min(lo + w, n)
            hi = min(lo + 2 * w, n)
            i = lo
            j = mid
            for k in range(lo, hi):
                take_left = i < mid
                if take_left and j < hi:
                    u = x[xo + src[to + j] * s]  # right
                    v = x[xo + src[to + i] * s]  # left
                    if desc:
                        right_first = u > v or (u != u and v == v)
                    else:
                        right_first = u < v or (v != v and u == u)
                    take_left = not right_first
                if take_left:
                    dst[to + k] = src[to + i]
                    i += 1
                else:
                    dst[to + k] = src[to + j]
                    j += 1
            lo += 2 * w
        src, dst = dst, src
        w *= 2
    for r in range(n):
        k = src[to + r]
        idx[oo + r * s] = k
        vals[oo + r * s] = x[xo + k * s]
