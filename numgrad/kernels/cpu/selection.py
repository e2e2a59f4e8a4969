"""Selection kernels along one dim of C-contiguous (outer, n, inner) arrays: top-k, k-th
value, median, mode, cumulative max/min, and the histogram counts.

PyTorch's CPU kernels pick among tied values with the C++ standard library's
``nth_element``, ``partial_sort`` and ``sort`` (GNU libstdc++: introselect, heap select and
introsort with median-of-three pivots) and with a quickselect of their own (``kthvalue``), so
which index of a tie is returned depends on the exact sequence of swaps. The routines below
perform the same sequence of comparisons and swaps on a line of positions ``q`` (the values
are read through it), so top-k, mode and k-th value return PyTorch's indices for ties. The
recursion of introsort is an explicit stack here: its ranges are disjoint, so the order in
which they are sorted does not change the result.

Comparison ``mode``: 0 = larger first, NaN first (topk largest); 1 = smaller first, NaN last
(topk smallest); 2 = plain ``<`` (mode); 3 = ``<`` with ties by position (median).
"""

import numpy as np
from numba import prange

from numgrad.kernels._jit import jit

_THRESHOLD = 16  # libstdc++'s insertion-sort threshold


@jit
def _before(v, i, j, mode):
    a = v[i]
    b = v[j]
    if mode == 0:
        return (a != a and b == b) or a > b
    if mode == 1:
        return (a == a and b != b) or a < b
    if mode == 2:
        return a < b
    return a < b or (a == b and i < j)


@jit
def _lg2(n):
    r = 0
    while n > 1:
        n >>= 1
        r += 1
    return r


@jit
def _push_heap(v, q, first, hole, top, value, mode):
    while hole > top:
        parent = (hole - 1) // 2
        if not _before(v, q[first + parent], value, mode):
            break
        q[first + hole] = q[first + parent]
        hole = parent
    q[first + hole] = value


@jit
def _adjust_heap(v, q, first, hole, length, value, mode):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if _before(v, q[first + child], q[first + child - 1], mode):
            child -= 1
        q[first + hole] = q[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        q[first + hole] = q[first + child - 1]
        hole = child - 1
    _push_heap(v, q, first, hole, top, value, mode)


@jit
def _make_heap(v, q, first, last, mode):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(v, q, first, parent, length, q[first + parent], mode)
        if parent == 0:
            return
        parent -= 1


@jit
def _pop_heap(v, q, first, last, result, mode):
    value = q[result]
    q[result] = q[first]
    _adjust_heap(v, q, first, 0, last - first, value, mode)


@jit
def _heap_select(v, q, first, middle, last, mode):
    _make_heap(v, q, first, middle, mode)
    for i in range(middle, last):
        if _before(v, q[i], q[first], mode):
            _pop_heap(v, q, first, middle, i, mode)


@jit
def _sort_heap(v, q, first, last, mode):
    while last - first > 1:
        last -= 1
        _pop_heap(v, q, first, last, last, mode)


@jit
def _swap(q, i, j):
    t = q[i]
    q[i] = q[j]
    q[j] = t


@jit
def _median_to_first(v, q, result, a, b, c, mode):
    qa, qb, qc = q[a], q[b], q[c]
    if _before(v, qa, qb, mode):
        if _before(v, qb, qc, mode):
            _swap(q, result, b)
        elif _before(v, qa, qc, mode):
            _swap(q, result, c)
        else:
            _swap(q, result, a)
    elif _before(v, qa, qc, mode):
        _swap(q, result, a)
    elif _before(v, qb, qc, mode):
        _swap(q, result, c)
    else:
        _swap(q, result, b)


@jit
def _partition_pivot(v, q, first, last, mode):
    """Median-of-three pivot moved to ``first``, then Hoare's unguarded partition of the rest
    (guarded here against an inconsistent comparison, which cannot change a valid result)."""
    lo, hi = first, last
    _median_to_first(v, q, first, first + 1, first + (last - first) // 2, last - 1, mode)
    pivot = q[first]
    first += 1
    while True:
        while first < hi - 1 and _before(v, q[first], pivot, mode):
            first += 1
        last -= 1
        while last > lo and _before(v, pivot, q[last], mode):
            last -= 1
        if not first < last:
            return first
        _swap(q, first, last)
        first += 1


@jit
def _linear_insert(v, q, last, lo, mode):
    value = q[last]
    prev = last - 1
    while prev >= lo and _before(v, value, q[prev], mode):
        q[last] = q[prev]
        last = prev
        prev -= 1
    q[last] = value


@jit
def _insertion_sort(v, q, first, last, mode):
    for i in range(first + 1, last):
        value = q[i]
        if _before(v, value, q[first], mode):
            for j in range(i, first, -1):
                q[j] = q[j - 1]
            q[first] = value
        else:
            _linear_insert(v, q, i, first, mode)


@jit
def _sort(v, q, first, last, mode):
    """``std::sort(q + first, q + last)``: introsort, then the final insertion sort."""
    if last - first < 2:
        return
    stack = np.empty((2 * _lg2(last - first) + 2, 3), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2] = first, last, 2 * _lg2(last - first)
    top = 1
    while top:
        top -= 1
        lo, hi, depth = stack[top, 0], stack[top, 1], stack[top, 2]
        while hi - lo > _THRESHOLD:
            if depth == 0:  # too many bad pivots: heapsort the range
                _heap_select(v, q, lo, hi, hi, mode)
                _sort_heap(v, q, lo, hi, mode)
                break
            depth -= 1
            cut = _partition_pivot(v, q, lo, hi, mode)
            stack[top, 0], stack[top, 1], stack[top, 2] = cut, hi, depth
            top += 1
            hi = cut
    if last - first > _THRESHOLD:
        _insertion_sort(v, q, first, first + _THRESHOLD, mode)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(v, q, i, first, mode)
    else:
        _insertion_sort(v, q, first, last, mode)


@jit
def _nth_element(v, q, first, nth, last, mode):
    """``std::nth_element``: introselect, heap select when the depth runs out."""
    if first == last or nth == last:
        return
    depth = 2 * _lg2(last - first)
    while last - first > 3:
        if depth == 0:
            _heap_select(v, q, first, nth + 1, last, mode)
            _swap(q, first, nth)
            return
        depth -= 1
        cut = _partition_pivot(v, q, first, last, mode)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(v, q, first, last, mode)


@jit
def _quickselect(v, q, k):
    """PyTorch's own quickselect for ``kthvalue``: median of three, then an inward scan,
    with ``larger or NaN`` as the order."""
    lo = 0
    hi = q.size - 1
    while hi > lo:
        if hi == lo + 1:
            if _before(v, q[lo], q[hi], 0):
                _swap(q, lo, hi)
            return
        _swap(q, lo + (hi - lo) // 2, lo + 1)
        if _before(v, q[lo + 1], q[hi], 0):
            _swap(q, lo + 1, hi)
        if _before(v, q[lo], q[hi], 0):
            _swap(q, lo, hi)
        if _before(v, q[lo + 1], q[lo], 0):
            _swap(q, lo + 1, lo)
        i = lo + 1
        j = hi
        pivot = q[lo]
        while True:
            i += 1
            while i < hi and _before(v, pivot, q[i], 0):
                i += 1
            j -= 1
            while j > lo and _before(v, q[j], pivot, 0):
                j -= 1
            if j < i:
                break
            _swap(q, i, j)
        _swap(q, lo, j)
        if j <= k:
            lo = i
        if j >= k:
            hi = j - 1


# ----------------------------------------------------------------------------------------
# line loops: x is (outer, n, inner); results are (outer, m, inner)
# ----------------------------------------------------------------------------------------


@jit(parallel=True)
def topk_3d(x, vals, idx, k, largest, sort):
    """The ``k`` largest (smallest) values of each line and their positions."""
    outer, n, inner = x.shape
    mode = 0 if largest else 1
    for line in prange(outer * inner):
        o, i = line // inner, line % inner
        v = x[o, :, i]
        q = np.arange(n)
        if k * 64 <= n:
            _heap_select(v, q, 0, k, n, mode)
            _sort_heap(v, q, 0, k, mode)
        else:
            _nth_element(v, q, 0, k - 1, n, mode)
            if sort:
                _sort(v, q, 0, k - 1, mode)
        for j in range(k):
            idx[o, j, i] = q[j]
            vals[o, j, i] = v[q[j]]


@jit(parallel=True)
def kthvalue_3d(x, vals, idx, k):
    """The k-th smallest value (1-based ``k``) of each line and its position."""
    outer, n, inner = x.shape
    for line in prange(outer * inner):
        o, i = line // inner, line % inner
        v = x[o, :, i]
        q = np.arange(n)
        _quickselect(v, q, k - 1)
        idx[o, 0, i] = q[k - 1]
        vals[o, 0, i] = v[q[k - 1]]


@jit(parallel=True)
def median_3d(x, vals, idx, skip_nan):
    """The lower median of each line: the first NaN if there is one (``skip_nan``: the median
    of the other values, NaN when all are NaN); among equal values the one a stable sort puts
    in the middle."""
    outer, n, inner = x.shape
    for line in prange(outer * inner):
        o, i = line // inner, line % inner
        v = x[o, :, i]
        q = np.empty(n, np.int64)
        m = 0
        first_nan = -1
        for j in range(n):
            if v[j] != v[j]:
                if first_nan < 0:
                    first_nan = j
            else:
                q[m] = j
                m += 1
        if m == 0 or (first_nan >= 0 and not skip_nan):
            idx[o, 0, i] = first_nan
            vals[o, 0, i] = v[first_nan]
            continue
        mid = (m - 1) // 2
        _nth_element(v, q[:m], 0, mid, m, 3)
        idx[o, 0, i] = q[mid]
        vals[o, 0, i] = v[q[mid]]


@jit(parallel=True)
def mode_3d(x, vals, idx):
    """The most frequent value of each line (the smallest of equally frequent ones) and the
    position PyTorch reports for it: the last of its run after ``std::sort``."""
    outer, n, inner = x.shape
    for line in prange(outer * inner):
        o, i = line // inner, line % inner
        v = x[o, :, i]
        q = np.arange(n)
        _sort(v, q, 0, n, 2)
        best = 0
        best_at = 0
        run = 0
        for j in range(n):
            run += 1
            if j == n - 1 or v[q[j]] != v[q[j + 1]]:
                if run > best:
                    best = run
                    best_at = j
                run = 0
        idx[o, 0, i] = q[best_at]
        vals[o, 0, i] = v[q[best_at]]


@jit(parallel=True)
def cumextreme_3d(x, vals, idx, largest):
    """Running max (min) along each line and where it was last attained; a NaN takes over
    and stays."""
    outer, n, inner = x.shape
    for line in prange(outer * inner):
        o, i = line // inner, line % inner
        best = x[o, 0, i]
        at = 0
        for j in range(n):
            c = x[o, j, i]
            if c != c or (best == best and ((c >= best) if largest else (c <= best))):
                best = c
                at = j
            vals[o, j, i] = best
            idx[o, j, i] = at


# ----------------------------------------------------------------------------------------
# histograms
# ----------------------------------------------------------------------------------------


@jit
def histogram(x, w, edges, counts, how, bins):
    """Adds each value of flat ``x`` (weight ``w[j]``, or 1 when ``w`` is empty) to the bin of
    ``edges`` it falls in; values outside [edges[0], edges[-1]] and NaN are left out, the last
    bin includes its right edge. ``how``: 0 = the bin computed from the equal spacing alone
    (``histc``), 1 = computed then corrected against the neighbouring edges, 2 = binary search
    (edges given as a tensor). ``bins``: ``counts.size`` in ``x``'s dtype, as PyTorch
    computes the bin (``histc`` passes only the two outer edges)."""
    nb = counts.size
    lo = edges[0]
    hi = edges[edges.size - 1]
    span = hi - lo
    for j in range(x.size):
        e = x[j]
        if not (e >= lo and e <= hi):
            continue
        if how == 2:
            a, b = 0, nb + 1
        else:
            pos = np.int64((e - lo) * bins / span)
            if how == 0:
                a = b = pos
            else:
                a, b = max(pos - 1, 0), min(pos + 2, nb + 1)
        while a < b:  # upper bound: the first edge above e
            mid = (a + b) // 2
            if edges[mid] > e:
                b = mid
            else:
                a = mid + 1
        pos = a - 1 if how else a
        if pos >= nb:
            pos = nb - 1
        counts[pos] += w[j] if w.size else 1


@jit
def linspace_into(out, start, end, ks):
    """``out`` = ``out.size`` evenly spaced values from ``start`` to ``end`` in ``out``'s
    dtype with PyTorch's formula: the first half counts up from ``start``, the second half
    down from ``end``. ``ks``: 0, 1, ..., size - 1 in ``out``'s dtype (the integer factors
    as PyTorch converts them)."""
    steps = out.size
    if steps == 0:
        return
    if steps == 1:
        out[0] = start
        return
    step = (end - start) / ks[steps - 1]
    half = steps // 2
    for i in range(steps):
        if i < half:
            out[i] = start + step * ks[i]
        else:
            out[i] = end - step * ks[steps - i - 1]
