"""Index kernels written once for both devices: reading and writing at indices (gathers,
scatter-adds, puts, index checks, mask positions). Each function does the work of one index
(or one run of elements an index selects), addressed as a flat buffer, an element offset and
a stride. ``numgrad.kernels.cpu.indexing`` loops over the indices in order in one thread
(passing 1-D views with offset 0 and stride 1, as the row kernels do), so repeated indices
accumulate and later writes win; ``numgrad.kernels.cuda.indexing`` runs a thread per element
(grid-stride), where ``add_at`` is atomic and a put writes only from its index's last
writer. Functions that check an index return whether it was in range: the CPU loop stops at
the first bad one, the GPU's records the lowest bad position with an atomic min.

``add_at(a, i, v)`` (a[i] += v; atomic on the GPU) is bound per device. No Numba import
here.
"""


def add_at(a, i, v):
    """a[i] += v (the GPU's is atomic: several indices may name one slot)."""
    raise NotImplementedError


def wrapped(v, size):
    """Index ``v`` into a dim of ``size``, counted from the end when negative; -1 when it is
    outside [-size, size)."""
    if v < 0:
        v += size
    if v < 0 or v >= size:
        return -1
    return v


def flat_index(idx, io, ist, sizes, k, wrap):
    """(flat, bad): the row-major flat index of the k indices idx[io + d * ist] (d < k) into
    dims of ``sizes`` (negatives counted from the end when ``wrap``) and -1, or (partial, d)
    for the first index d out of range."""
    flat = 0
    for d in range(k):
        v = idx[io + d * ist]
        s = sizes[d]
        if v < 0 and wrap:
            v += s
        if v < 0 or v >= s:
            return flat, d
        flat = flat * s + v
    return flat, -1


def unravel_one(p, shape, nd, out, oo, os):
    """out[oo + d * os] = the index along dim d of flat position ``p`` in a row-major
    ``shape`` of ``nd`` dims."""
    for d in range(nd - 1, -1, -1):
        out[oo + d * os] = p % shape[d]
        p //= shape[d]


def count_true(mask, mo, ms, lo, hi):
    """How many of mask[mo + k * ms] (lo <= k < hi) are true."""
    s = 0
    for k in range(lo, hi):
        if mask[mo + k * ms]:
            s += 1
    return s


def write_true(mask, mo, ms, lo, hi, out, p):
    """out[p], out[p + 1], ... = the positions k (lo <= k < hi) of the true mask entries, in
    order; returns the next free slot."""
    for k in range(lo, hi):
        if mask[mo + k * ms]:
            out[p] = k
            p += 1
    return p


def range_sum(a, lo, hi):
    """a[lo] + ... + a[hi - 1]."""
    s = 0
    for i in range(lo, hi):
        s += a[i]
    return s


def prefix_sums(a, lo, hi, run):
    """a[lo:hi] becomes its exclusive prefix sums plus ``run``; returns run + their total."""
    for i in range(lo, hi):
        v = a[i]
        a[i] = run
        run += v
    return run


def copy_run(x, xo, xs, out, oo, os, n):
    """out[oo + i * os] = x[xo + i * xs] for i < n."""
    for i in range(n):
        out[oo + i * os] = x[xo + i * xs]


def fill_run(out, oo, os, n, v):
    """out[oo + i * os] = v for i < n."""
    for i in range(n):
        out[oo + i * os] = v


# d/dx gather: the gradient's run is added where the run was read from
def add_run(src, so, ss, out, oo, os, n):
    """out[oo + i * os] += src[so + i * ss] for i < n."""
    for i in range(n):
        add_at(out, oo + i * os, src[so + i * ss])


def gather_one(x, xo, xs, size, v, out, op):
    """out[op] = x[xo + v * xs] (a line of ``size`` elements); False, and nothing written,
    when ``v`` is outside [0, size)."""
    if v < 0 or v >= size:
        return False
    out[op] = x[xo + v * xs]
    return True


# d/dx gather_one: out[v] += src
def scatter_add_one(src, sp, v, size, out, oo, os):
    """out[oo + v * os] += src[sp] (a line of ``size`` elements); False, and nothing added,
    when ``v`` is outside [0, size)."""
    if v < 0 or v >= size:
        return False
    add_at(out, oo + v * os, src[sp])
    return True


def combine(a, s, mode):
    """Slot value ``a`` with ``s`` reduced in, for scatter_reduce: ``mode`` 1 adds, 2
    multiplies, 3 keeps the max, 4 the min (a NaN in either wins both)."""
    if mode == 1:
        return a + s
    if mode == 2:
        return a * s
    if mode == 3:
        return s if s > a or s != s else a
    return s if a == a and s < a or s != s else a


def mean_slot(out, k, c, floor):
    """out[k] /= c where c > 1 (``floor``: integer floor division): a slot of a scatter mean
    that summed ``c`` values."""
    if c > 1:
        if floor:
            out[k] = out[k] // c
        else:
            out[k] = out[k] / c


def has_nan_run(x, xo, xs, n):
    """Whether any of x[xo + i * xs] (i < n) is nan (no early exit: the CPU loop vectorizes,
    6x faster than stopping at the first)."""
    found = False
    for i in range(n):
        v = x[xo + i * xs]
        found |= v != v
    return found


def first_outside_run(x, xo, xs, i0, i1, lo, hi):
    """The first i in [i0, i1) whose x[xo + i * xs] lies outside [lo, hi] (nan counts as
    outside), or -1."""
    for i in range(i0, i1):
        v = x[xo + i * xs]
        if not (v >= lo and v <= hi):
            return i
    return -1


def put_one(src, sp, v, size, out, oo, os):
    """out[oo + v * os] = src[sp] (a line of ``size`` elements); False, and nothing written,
    when ``v`` is outside [0, size)."""
    if v < 0 or v >= size:
        return False
    out[oo + v * os] = src[sp]
    return True


# the functions each device binds (with its ``add_at``)
GATHER_FUNCTIONS = ("wrapped", "flat_index", "unravel_one", "count_true", "write_true",
                    "range_sum", "prefix_sums", "copy_run", "fill_run", "add_run", "gather_one",
                    "scatter_add_one", "put_one", "combine", "mean_slot", "has_nan_run",
                    "first_outside_run")
