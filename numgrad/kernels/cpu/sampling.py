"""Sampling kernels that read raw MT19937 draws (``numgrad.random.Generator.raw``) the way
PyTorch's CPU kernels consume its generator: exponential variates, Bernoulli draws against a
tensor of probabilities, and multinomial sampling with and without replacement.

A float64 uniform takes two 32-bit draws (53 bits, first draw high); a float32 one takes the
low 24 bits of one draw. Rows are (rows, categories) arrays.
"""

import math

import numpy as np

from numgrad.kernels._jit import jit

_U53 = 1.0 / 9007199254740992.0
_U24 = 1.0 / 16777216.0


@jit
def _uniform53(raw, k):
    """The k-th 53-bit uniform in [0, 1) of ``raw`` (two draws each)."""
    v = ((np.uint64(raw[2 * k]) << np.uint64(32)) | np.uint64(raw[2 * k + 1])) \
        & np.uint64((1 << 53) - 1)
    return v * _U53


@jit
def exponential(raw, out, lambd):
    """out[k] = -1/lambd * log1p(-u), u a 53-bit uniform, evaluated in float64 and rounded to
    ``out``'s dtype."""
    scale = -1.0 / lambd
    for k in range(out.size):
        out[k] = scale * math.log1p(-_uniform53(raw, k))


@jit
def bernoulli_tensor(raw, p, out, wide):
    """out[k] = 1 if u < p[k] else 0: u a 53-bit uniform when ``wide`` (float64 p), else a
    24-bit one compared in float32 precision."""
    for k in range(out.size):
        if wide:
            u = _uniform53(raw, k)
            out[k] = 1 if u < p[k] else 0
        else:
            u = np.float32((np.uint64(raw[k]) & np.uint64(0xFFFFFF)) * _U24)
            out[k] = 1 if u < np.float32(p[k]) else 0


@jit
def check_rows(p):
    """Validity of each row of probabilities, as PyTorch scans them: per row, 1 for an entry
    that is negative or NaN, 2 for an infinite one (whichever comes first), 3 for a row
    that sums to zero, else 0."""
    rows, cats = p.shape
    codes = np.zeros(rows, np.int64)
    for i in range(rows):
        positive = False
        for j in range(cats):
            v = p[i, j]
            if not v >= 0:
                codes[i] = 1
                break
            if v == np.inf:
                codes[i] = 2
                break
            if v > 0:
                positive = True
        if codes[i] == 0 and not positive:
            codes[i] = 3
    return codes


@jit
def _ranks_before(key_a, a, key_b, b):
    """Whether (key_a, a) comes before (key_b, b): larger key first, NaN largest, ties by
    index."""
    if key_a != key_a:
        return key_b == key_b or a < b
    if key_b != key_b:
        return False
    if key_a != key_b:
        return key_a > key_b
    return a < b


@jit
def multinomial_exponential(p, q, out):
    """Without replacement (and for one sample): each row's ``out.shape[1]`` largest
    ``p / q`` (q exponential variates, the quotient in p's dtype), largest first."""
    rows, cats = p.shape
    n = out.shape[1]
    key = np.empty(cats, p.dtype)
    for i in range(rows):
        for j in range(cats):
            key[j] = p[i, j] / q[i, j]
        if n == 1:
            best = 0
            for j in range(1, cats):
                if _ranks_before(key[j], j, key[best], best):
                    best = j
            out[i, 0] = best
            continue
        if n > 16:  # a stable sort of the negated keys (NaN first): largest first, ties by index
            for j in range(cats):
                key[j] = -np.inf if key[j] != key[j] else -key[j]
            order = np.argsort(key, kind="mergesort")
            for s in range(n):
                out[i, s] = order[s]
            continue
        # the n best, kept sorted by insertion
        order = np.empty(n, np.int64)
        filled = 0
        for j in range(cats):
            if filled == n and not _ranks_before(key[j], j, key[order[n - 1]], order[n - 1]):
                continue
            pos = filled if filled < n else n - 1
            while pos > 0 and _ranks_before(key[j], j, key[order[pos - 1]], order[pos - 1]):
                order[pos] = order[pos - 1]
                pos -= 1
            order[pos] = j
            if filled < n:
                filled += 1
        for s in range(n):
            out[i, s] = order[s]


@jit
def multinomial_replacement(p, raw, out):
    """With replacement: per row the running sum in p's dtype, divided by the total, the last
    bucket set to 1; each sample is the first bucket whose cumulative value is not below a
    53-bit uniform (binary search). Rows draw in turn, samples in order."""
    rows, cats = p.shape
    n = out.shape[1]
    cum = np.empty(cats, p.dtype)
    k = 0
    for i in range(rows):
        total = p[i, 0] - p[i, 0]
        for j in range(cats):
            total += p[i, j]
            cum[j] = total
        for j in range(cats):
            cum[j] = cum[j] / total
        cum[cats - 1] = 1
        for s in range(n):
            u = _uniform53(raw, k)
            k += 1
            lo = 0
            hi = cats
            while hi > lo:
                mid = lo + (hi - lo) // 2
                if cum[mid] < u:
                    lo = mid + 1
                else:
                    hi = mid
            out[i, s] = lo


@jit
def all_between(a, lo, hi):
    """Whether every value of ``a`` lies in [lo, hi] (NaN does not)."""
    for k in range(a.size):
        if not (a[k] >= lo and a[k] <= hi):
            return False
    return True
