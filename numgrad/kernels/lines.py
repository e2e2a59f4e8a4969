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


def unfold_backward_line(g, go, out, oo, n, s, windows, gs, size, step):
    """The gradient of one line of ``x.unfold(d, size, step)``: out[i] = the sum of g[w, k]
    over the windows w with w * step + k = i. ``g``'s windows of one line start ``gs`` apart
    and hold their ``size`` values contiguously."""
    for i in range(n):
        out[oo + i * s] = 0
    for w in range(windows):
        for k in range(size):
            i = w * step + k
            out[oo + i * s] += g[go + w * gs + k]


def cumprod_backward_line(x, xo, y, yo, g, go, out, oo, n, s):
    """d/dx of sum(g * cumprod(x)) along one line, PyTorch's O(n) rule around the first zero
    z of x (y = cumprod(x)): out[k] = (sum_{k <= j < z} g[j] y[j]) / x[k] before z;
    out[z] = y[z - 1] * sum_{z <= j < z2} g[j] prod_{z < i <= j} x[i] up to the next zero z2
    (NaN when that product is not finite and a z2 exists, as PyTorch's masked sum gives);
    0 after z. Sums are in float64; ``out`` (x's dtype) rounds each stored value."""
    z = n
    for r in range(n):
        if x[xo + r * s] == 0:
            z = r
            break
    acc = 0.0
    for r in range(z - 1, -1, -1):
        acc += g[go + r * s] * y[yo + r * s]
        out[oo + r * s] = acc
        out[oo + r * s] = out[oo + r * s] / x[xo + r * s]
    if z < n:
        p = 1.0
        acc = 0.0 + g[go + z * s]
        tail = False
        for r in range(z + 1, n):
            v = x[xo + r * s]
            if v == 0:
                tail = True
                break
            out[oo + r * s] = p * v  # rounded to x's dtype, as PyTorch's cumprod stores it
            p = out[oo + r * s]
            acc += g[go + r * s] * p
        if tail and not (p - p == 0):
            acc += p - p
        if z > 0:
            acc *= y[yo + (z - 1) * s]
        out[oo + z * s] = acc
        for r in range(z + 1, n):
            out[oo + r * s] = 0
