"""Matrix products run on BLAS through NumPy (a Numba loop is several times slower), and
``linear``: ``x @ W^T + bias`` in one compiled call that hands BLAS the pointers itself."""

import numpy as np

from numgrad import _arrays, _hook
from numgrad.kernels import LIN
from numgrad.kernels._jit import inline, jit, specialize
from numgrad.kernels.cpu import _blas, _host
from numgrad.kernels.cpu._blas import NO_TRANS, ROW_MAJOR, TRANS, dgemm, sgemm
from numgrad.kernels.cpu.rows import _F as _ROWS


def _outer_shaped(a, b, out):
    # an inner dimension of 1 (the weight gradient at batch 1): np.matmul takes its slow
    # non-BLAS loop for it, and OpenBLAS's sgemm packs both operands for a product with
    # nothing to sum; ``_outer`` writes the products directly
    return (a.ndim == 2 and b.ndim == 2 and a.shape[1] == 1 and out.flags.c_contiguous
            and a.dtype == b.dtype == out.dtype and a.dtype in _EMPTY)


def _outer(u, v, out):
    """out[i, j] = u[i] v[j]: each a single rounded product, what BLAS writes for an inner
    dimension of 1 (except a -0 product, which BLAS's zeroed accumulator makes +0)."""
    n = v.shape[0]
    for i in range(u.shape[0]):
        ui = u[i]
        row = out[i]
        for j in range(n):
            row[j] = ui * v[j]


_OUTER = jit(_outer)


def _wide_vectors():
    """AVX-512: the few-rows kernel's 16 accumulators then fit its 32 vector registers, and
    OpenBLAS's kernels and packing costs differ."""
    return _host.wide_vectors()


def _swap_pays(a, b, out):
    # x @ W.T with few rows (a Linear layer at batch 1 or during generation): OpenBLAS packs
    # the transposed weight slowly, a fixed cost that dominates up to about 32 rows (40 us
    # against 21 us for 4x128 @ 128x384, 55 us against 40 us at 16 rows, 2026-11-28, one
    # EPYC core). (W @ x.T).T is the same product with the operands' roles swapped (the
    # same dot products: bit for bit equal on 302 shapes checked with AVX-512; with AVX2 the
    # Haswell kernels sum them in another order, within float32 rounding) and packs the weight
    # fast; the transpose back took 5 us for 16x384. Below about 1200 outputs (and 10^6
    # multiply-adds) OpenBLAS runs its small-matrix kernel, already fast either way. From 33
    # to 56 rows it still saves 10-18% for weights of 40,000 elements or more (384x128: 64.8
    # against 55.3 us at 33 rows, 68.6 against 59.4 at 48; 128x128 gains under 7%; min of 40
    # interleaved runs, loaded VM, 2026-11-28; bit for bit equal on 168 shapes of 33-56
    # rows); from about 60 rows the transpose costs what the swap saves (up to 96 rows for
    # big weights). That was AVX-512; with AVX2 (Zen 3, OpenBLAS's Haswell kernels,
    # 2026-11-29, thread CPU time, min of 9) the swap pays up to 10 rows (10x128 @ 128x128:
    # 10 us against 15, 8x512 @ 512x128: 23 against 29) and costs from 12 (12x128 @ 128x384:
    # 43 against 31 us, 32x128 @ 128x384: 85 against 64).
    if a.ndim != 2 or b.ndim != 2 or out.dtype != np.float32:
        return False
    (m, k), n = a.shape, b.shape[1]
    if m < 2 or n < 128 or k < 64 or m > (96 if _wide_vectors() else 10):
        return False
    if m > 32 and n * k < (40_000 if m <= 56 else 200_000):
        return False
    if m * n <= 1200 and m * n * k <= 1_000_000:
        return False
    return (a.dtype == b.dtype == np.float32 and a.flags.c_contiguous and b.flags.f_contiguous
            and out.flags.c_contiguous)


def gemm(a, b, out):
    # inf * 0 inside a product is NaN without a NumPy RuntimeWarning, as in PyTorch
    with np.errstate(all="ignore"):
        if _outer_shaped(a, b, out):
            _OUTER(np.ascontiguousarray(a[:, 0]), np.ascontiguousarray(b[0]), out)
        elif _swap_pays(a, b, out):
            swapped = np.empty((b.shape[1], a.shape[0]), np.float32)
            np.matmul(b.T, a.T, out=swapped)
            np.copyto(out, swapped.T)
        else:
            np.matmul(a, b, out=out)


def matmul(a, b, out):
    """out = a @ b for 2-D or batched 3-D operands (BLAS sgemm/dgemm)."""
    if a.__class__ is not np.ndarray or b.__class__ is not np.ndarray:
        return LIN.cuda().matmul(a, b, out)
    if _hook.TAPE is None:
        return gemm(a, b, out)
    return _hook.record(gemm, a, b, out)


# ---- linear: x @ W^T + bias ------------------------------------------------------------------

_BLOCK = 16  # columns of ``out`` written per pass of the transposing copy (rows of tmp in L1)


def _linear(x, w, bias, has_bias, swap, out, tmp):
    """out = x w^T (+ bias): x (m, k), w (n, k), out (m, n), all C-contiguous. ``swap``: BLAS
    computes tmp = w x^T, (n, m), which it packs faster for few rows (see ``_swap_pays``),
    and one blocked pass writes its transpose plus the bias; else the bias is written into
    out and BLAS adds the product to it (beta 1, as PyTorch's addmm): one pass over out
    fewer than a product (whose beta 0 is itself a pass zeroing out) and a bias add after;
    at 1024 rows, in 128 or 512, out 128-512, AVX2 VM, thread CPU time, interleaved, the
    four GPT linears took 6.15 ms against 6.61 (median of 15). The same dot products as
    NumPy's matmul; each output is the bias plus the product rounded once (bit for bit the
    product and then the bias while the inner dimension fits one of BLAS's blocks; past it
    BLAS adds each block's partial sum to out in turn, a float32 rounding apart)."""
    m, k = x.shape
    n = w.shape[0]
    if swap:
        gemm(ROW_MAJOR, NO_TRANS, TRANS, n, m, k, 1.0, w.ctypes, k, x.ctypes, k,  # noqa: F821
             0.0, tmp.ctypes, m)
        for j0 in range(0, n, _BLOCK):
            j1 = min(j0 + _BLOCK, n)
            for i in range(m):
                row = out[i]
                if has_bias:
                    for j in range(j0, j1):
                        row[j] = tmp[j * m + i] + bias[j]
                else:
                    for j in range(j0, j1):
                        row[j] = tmp[j * m + i]
    elif has_bias:  # BLAS adds the product to the bias written into out first (beta 1)
        for i in range(m):
            row = out[i]
            for j in range(n):
                row[j] = bias[j]
        gemm(ROW_MAJOR, NO_TRANS, TRANS, m, n, k, 1.0, x.ctypes, k, w.ctypes, k,  # noqa: F821
             1.0, out.ctypes, n)
    else:
        gemm(ROW_MAJOR, NO_TRANS, TRANS, m, n, k, 1.0, x.ctypes, k, w.ctypes, k,  # noqa: F821
             0.0, out.ctypes, n)


# dtype -> kernel (made at import, compiled on first call: the prebuilt set finds them by name)
_LINEAR = {np.dtype(np.float32): specialize(_linear, "f32", gemm=sgemm),
           np.dtype(np.float64): specialize(_linear, "f64", gemm=dgemm)}


# x @ W^T for few rows (generation: 2-64 rows against weights of 128-512 columns) in
# compiled dot products, a tile of rows of x by 4 weight rows at a time: the weight is read
# in place, in its (n, k) layout, where OpenBLAS first packs it (from L3 in a model whose
# weights exceed L2). The tile's sums stay in vector registers: 4 rows by 4 (16
# accumulators) with AVX-512's 32 registers, 2 rows by 4 with AVX2's 16 (4 by 4 spills
# there: 20-40% slower). AVX-512 (2026-11-28): the 17 products of a 4-layer 128-wide GPT
# over a 100-token generation took 114 ms against 151 ms for the BLAS kernel below and 132
# ms for PyTorch's (MKL) F.linear, same arrays, interleaved, CPU time, 1 thread, loaded VM.
# AVX2 (Zen 3, OpenBLAS Haswell kernels, 2026-11-29, thread CPU time, min of 7): those
# products with 13-64 rows took 157 ms against 185 ms for the BLAS kernel and 193 ms for
# PyTorch's F.linear (13-24 rows: 8.8 / 14.6 / 14.5 ms; 64 rows: 84 / 91 / 102 ms), and an
# MLP's 784-1024-1024-10 forward at 16 rows 1.9 ms against 2.6 (BLAS) and 3.0 (PyTorch),
# even at 32 rows. With one weight reused hot in L2, BLAS is faster from about 24 rows
# with AVX2 (32x128 @ 128x384: 64 us against 78), but a model's weights come from L3.
# In the whole 100-token generation on AVX2 (2026-11-29, thread CPU time, interleaved, 7
# rounds, loaded VM), BLAS from 33 rows took 533-539 ms against 565-570 ms for this kernel up
# to 64 rows (BLAS from 17 rows: 536-546 ms): with AVX2 it runs up to 32 rows, with AVX-512
# up to 64. x of at most 32,768 elements (128 KiB: it stays in L2 while the weight streams
# once).
_FEW_ROWS = {True: 64, False: 32}  # by _wide_vectors()
_FEW_ELEMENTS = 32_768


@inline
def _four_by_four(x, i0, w0, w1, w2, w3, out, j0):
    x0 = x[i0]
    x1 = x[i0 + 1]
    x2 = x[i0 + 2]
    x3 = x[i0 + 3]
    zero = out.dtype.type(0)
    s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = zero
    s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = zero
    for p in range(x.shape[1]):
        a0, a1, a2, a3 = x0[p], x1[p], x2[p], x3[p]
        c0, c1, c2, c3 = w0[p], w1[p], w2[p], w3[p]
        s00 += a0 * c0
        s01 += a0 * c1
        s02 += a0 * c2
        s03 += a0 * c3
        s10 += a1 * c0
        s11 += a1 * c1
        s12 += a1 * c2
        s13 += a1 * c3
        s20 += a2 * c0
        s21 += a2 * c1
        s22 += a2 * c2
        s23 += a2 * c3
        s30 += a3 * c0
        s31 += a3 * c1
        s32 += a3 * c2
        s33 += a3 * c3
    o = out[i0]
    o[j0], o[j0 + 1], o[j0 + 2], o[j0 + 3] = s00, s01, s02, s03
    o = out[i0 + 1]
    o[j0], o[j0 + 1], o[j0 + 2], o[j0 + 3] = s10, s11, s12, s13
    o = out[i0 + 2]
    o[j0], o[j0 + 1], o[j0 + 2], o[j0 + 3] = s20, s21, s22, s23
    o = out[i0 + 3]
    o[j0], o[j0 + 1], o[j0 + 2], o[j0 + 3] = s30, s31, s32, s33


@inline
def _two_by_four(x, i0, w0, w1, w2, w3, out, j0):
    x0 = x[i0]
    x1 = x[i0 + 1]
    zero = out.dtype.type(0)
    s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = zero
    for p in range(x.shape[1]):
        a0, a1 = x0[p], x1[p]
        c0, c1, c2, c3 = w0[p], w1[p], w2[p], w3[p]
        s00 += a0 * c0
        s01 += a0 * c1
        s02 += a0 * c2
        s03 += a0 * c3
        s10 += a1 * c0
        s11 += a1 * c1
        s12 += a1 * c2
        s13 += a1 * c3
    o = out[i0]
    o[j0], o[j0 + 1], o[j0 + 2], o[j0 + 3] = s00, s01, s02, s03
    o = out[i0 + 1]
    o[j0], o[j0 + 1], o[j0 + 2], o[j0 + 3] = s10, s11, s12, s13


@inline
def _one_by_four(x, i, w0, w1, w2, w3, out, j0):
    xi = x[i]
    zero = out.dtype.type(0)
    s0 = s1 = s2 = s3 = zero
    for p in range(x.shape[1]):
        a = xi[p]
        s0 += a * w0[p]
        s1 += a * w1[p]
        s2 += a * w2[p]
        s3 += a * w3[p]
    o = out[i]
    o[j0], o[j0 + 1], o[j0 + 2], o[j0 + 3] = s0, s1, s2, s3


def _few_rows_linear(x, w, bias, has_bias, out):
    """out = x w^T (+ bias): x (m, k), w (n, k), out (m, n), C-contiguous, any m >= 1, in
    tiles of ``ROWS`` rows of x by 4 weight rows (``tile``). Each output is one dot product
    summed in a vectorised order (reassociated: within float32 rounding of BLAS's, not bit
    for bit); the bias is added to the rounded product."""
    m, k = x.shape
    n = w.shape[0]
    zero = out.dtype.type(0)
    mt = m - m % ROWS  # noqa: F821
    n4 = n - n % 4
    for j0 in range(0, n4, 4):  # 4 weight rows stay in L1 while the rows of x pass
        w0 = w[j0]
        w1 = w[j0 + 1]
        w2 = w[j0 + 2]
        w3 = w[j0 + 3]
        for i0 in range(0, mt, ROWS):  # noqa: F821
            tile(x, i0, w0, w1, w2, w3, out, j0)  # noqa: F821
        for i in range(mt, m):  # the last rows: one row by 4 weight rows
            _one_by_four(x, i, w0, w1, w2, w3, out, j0)
    for j in range(n4, n):  # the last n % 4 weight rows, one at a time
        wj = w[j]
        for i in range(m):
            xi = x[i]
            s = zero
            for p in range(k):
                s += xi[p] * wj[p]
            out[i, j] = s
    if has_bias:
        for i in range(m):
            row = out[i]
            for j in range(n):
                row[j] += bias[j]


_FEW_FAST = {"fastmath": {"reassoc", "nsz", "contract"}}
# by _wide_vectors(): 4-row tiles with 512-bit vectors, 2-row tiles with 256-bit ones
_FEW_ROWS_LINEAR = {True: specialize(_few_rows_linear, "f32", _FEW_FAST, ROWS=4,
                                     tile=_four_by_four),
                    False: specialize(_few_rows_linear, "f32_2x4", _FEW_FAST, ROWS=2,
                                      tile=_two_by_four)}


_EMPTY = {np.dtype(np.float32): np.empty(0, np.float32),
          np.dtype(np.float64): np.empty(0, np.float64)}


def linear_fits(x, wt, bias, out):
    """Whether ``linear`` takes these host arrays: x (m, k) with m >= 1 (one row: float32 of
    at most ``_FEW_ELEMENTS``, for the few-rows kernel), k >= 2, n >= 1 and out (m, n)
    C-contiguous, wt (k, n) the transpose of a C-contiguous weight, bias None or (n,)
    contiguous, one real dtype, and BLAS callable from compiled code. (Other single rows stay
    with NumPy's matrix-vector product; k = 1, an outer product such as a weight gradient at
    batch 1, with ``gemm``'s ``_outer``.) A float32 row runs faster in the few-rows kernel
    than in NumPy's product plus a bias add (token-by-token generation's products)."""
    dt = x.dtype
    return (_blas.AVAILABLE and dt in _EMPTY and x.ndim == 2 and wt.ndim == 2
            and (x.shape[0] >= 2 or (x.shape[0] == 1 and dt == np.float32
                                     and x.size <= _FEW_ELEMENTS))
            and x.shape[1] > 1 and wt.shape[1] > 0
            and x.flags.c_contiguous and wt.flags.f_contiguous
            and out.flags.c_contiguous and wt.dtype == dt and out.dtype == dt
            and out.shape == (x.shape[0], wt.shape[1]) and x.shape[1] == wt.shape[0]
            and (bias is None or (bias.dtype == dt and bias.shape == (wt.shape[1],)
                                  and bias.flags.c_contiguous)))


def _linear_call(x, wt, bias, out):
    if x.dtype == np.float32 and x.size <= _FEW_ELEMENTS:
        wide = _wide_vectors()
        if x.shape[0] <= _FEW_ROWS[wide]:
            _FEW_ROWS_LINEAR[wide](x, wt.T, _EMPTY[x.dtype] if bias is None else bias,
                                   bias is not None, out)
            return
    swap = _swap_pays(x, wt, out)
    tmp = np.empty(out.size if swap else 0, out.dtype)
    _LINEAR[x.dtype](x, wt.T, _EMPTY[x.dtype] if bias is None else bias,
                            bias is not None, swap, out, tmp)


def linear(x, wt, bias, out):
    """out = x @ wt + bias (bias None: no bias) for arrays ``linear_fits`` takes."""
    if _hook.TAPE is None:
        return _linear_call(x, wt, bias, out)
    return _hook.record(_linear_call, x, wt, bias, out)


# ---- attention: softmax(q k^T scale, causal) v per (batch, head) -----------------------------


@inline
def _causal_split(causal, n_t, n_s):
    """With a causal mask over as many keys as queries (self-attention), the first ``half``
    query rows attend only to the first ``half`` keys: the products run on two row blocks,
    the first against ``half`` keys, which skips a quarter of the multiply-adds. 0: one
    block (no mask, other shapes, or too few rows for the extra calls to pay)."""
    return n_t // 2 if causal and n_t == n_s and n_t >= _SPLIT_ROWS else 0


def _attention(q, k, v, scale, causal, probs, out):
    """For each (batch, head): probs = softmax(q k^T scale) with the keys after each query
    masked out when ``causal`` (upper-left aligned; masked entries 0), out = probs v. q (B, H,
    T, D), k (B, H, S, D), v (B, H, S, E) with unit stride along their last dim; probs (B,
    H, T, S) C-contiguous and out (B, H, T, E) with unit stride along its last dim and rows
    apart by at least a row (C-contiguous, or PyTorch's (B, T, H, E) layout seen as (B, H,
    T, E): ``output_rows``). The products are BLAS calls on each head's
    matrices (their row strides as leading dimensions), in two row blocks for causal
    self-attention (``_causal_split``); scores scaled in their own type, and each row's
    softmax is the softmax kernels' row function over the keys the query sees (the masked
    entries are 0): the values of the separate matmul, mul, masked_fill and softmax ops up
    to the order of the row's sum."""
    n_b, n_h, n_t, n_d = q.shape
    n_s = k.shape[2]
    n_e = v.shape[3]
    isz = q.itemsize
    ldq, ldk, ldv = q.strides[2] // isz, k.strides[2] // isz, v.strides[2] // isz
    ldo = out.strides[2] // isz
    zero = probs.dtype.type(0)  # the sum's type: the row's own
    sc = probs.dtype.type(scale)
    half = _causal_split(causal, n_t, n_s)
    for b in range(n_b):
        for h in range(n_h):
            p = probs[b, h]
            qb, kb, vb, ob = q[b, h], k[b, h], v[b, h], out[b, h]
            if half:  # rows [0, half) see keys [0, half); rows [half, T) all of them
                gemm(ROW_MAJOR, NO_TRANS, TRANS, half, half, n_d, 1.0, qb.ctypes,  # noqa: F821
                     ldq, kb.ctypes, ldk, 0.0, p.ctypes, n_s)
            gemm(ROW_MAJOR, NO_TRANS, TRANS, n_t - half, n_s, n_d, 1.0,  # noqa: F821
                 qb[half:].ctypes, ldq, kb.ctypes, ldk, 0.0, p[half:].ctypes, n_s)
            for i in range(n_t):
                row = p[i]
                n = min(i + 1, n_s) if causal else n_s
                for j in range(n):
                    row[j] = row[j] * sc
                softmax_row(row, 0, 1, row, 0, 1, n, False, zero, 0)  # noqa: F821
                for j in range(n, n_s):
                    row[j] = zero  # e^-inf
            if half:
                gemm(ROW_MAJOR, NO_TRANS, NO_TRANS, half, n_e, half, 1.0, p.ctypes,  # noqa: F821
                     n_s, vb.ctypes, ldv, 0.0, ob.ctypes, ldo)
            gemm(ROW_MAJOR, NO_TRANS, NO_TRANS, n_t - half, n_e, n_s, 1.0,  # noqa: F821
                 p[half:].ctypes, n_s, vb.ctypes, ldv, 0.0, ob[half:].ctypes, ldo)


# causal self-attention of at least this many rows runs its products in two row blocks
# (``_causal_split``): at (16, 4, 64, 32), AVX2 VM, thread CPU time, interleaved, min of
# 15, the forward took 1.28 ms against 1.83 with one block per product and the masked
# scores written as -inf for the softmax
_SPLIT_ROWS = 16
_FAST = {"fastmath": {"reassoc", "nsz", "contract"}}  # the softmax rows kernels' flags
_ATTENTION = {np.dtype(dt): specialize(_attention, name, _FAST, gemm=blas,
                                       softmax_row=_ROWS["softmax_row"])
              for dt, name, blas in ((np.float32, "f32", sgemm), (np.float64, "f64", dgemm))}


def output_rows(q, shape):
    """A new (B, H, T, E) output array for attention on query ``q``, laid out as PyTorch's
    fused CPU kernel lays it out: the heads' rows interleaved ((B, T, H, E) memory, whose
    transpose back to (B, T, H, E) is contiguous) when q's heads are closer in memory than
    its rows (q a transposed view of (B, T, H, D) data, as in a GPT's attention), else
    C-contiguous."""
    b, h, t, e = shape
    if q.strides[1] < q.strides[2]:
        return _arrays.empty(q, (b, t, h, e), q.dtype).transpose(0, 2, 1, 3)
    return _arrays.empty(q, shape, q.dtype)


def attention_fits(q, k, v):
    """Whether ``attention`` takes these host arrays: 4-D, one real dtype, equal batch and
    head counts, nonempty sizes, unit stride along the last dim and rows apart by at least
    a row (what BLAS reads as a leading dimension), nonnegative strides."""
    dt = q.dtype
    if not (_blas.AVAILABLE and dt in _EMPTY and q.ndim == 4 and k.ndim == 4 and v.ndim == 4
            and k.dtype == dt and v.dtype == dt):
        return False
    (b, h, t, d), (kb, kh, s, kd), (vb, vh, vs, e) = q.shape, k.shape, v.shape
    if not (b == kb == vb and h == kh == vh and d == kd and s == vs) or not (t and s and d and e):
        return False
    isz = q.itemsize
    for a in (q, k, v):
        st = a.strides
        if st[3] != isz or st[2] < a.shape[3] * isz or st[2] % isz or min(st) < 0:
            return False
    return b * h > 0


def _attention_call(q, k, v, scale, causal, probs, out):
    _ATTENTION[q.dtype](q, k, v, scale, causal, probs, out)


def attention(q, k, v, scale, causal, probs, out):
    """probs = softmax(q k^T scale (+ causal mask)), out = probs v, per (batch, head), for
    arrays ``attention_fits`` takes (probs: a new C-contiguous array; out: ``output_rows``)."""
    if _hook.TAPE is None:
        return _attention_call(q, k, v, scale, causal, probs, out)
    return _hook.record(_attention_call, q, k, v, float(scale), bool(causal), probs, out)


# dV = P^T dO; dS = P (dO V^T - rowsum(dO O)); dQ = scale dS K; dK = scale dS^T Q
def _attention_bwd(g, q, k, v, o, probs, scale, causal, need_q, need_k, need_v, gq, gk, gv,
                   ds):
    """``attention``'s gradients per (batch, head) from its saved output ``o`` and ``probs``:
    g and o (B, H, T, E) with unit stride along its last dim and rows apart by at least a row;
    gq, gk, gv written when needed, with unit stride along their last dim and rows apart by at
    least a row (laid out as ``output_rows`` lays them), ds (T * S) scratch. The products are BLAS
    calls, in the forward's row blocks for causal self-attention (P and dS are 0 above the
    diagonal: the first ``half`` rows against the first ``half`` keys, the sums over rows
    as the second block's product plus the first's); the scale multiplies each rounded
    product, as the separate ops do."""
    n_b, n_h, n_t, n_d = q.shape
    n_s = k.shape[2]
    n_e = v.shape[3]
    isz = q.itemsize
    ldq, ldk, ldv, ldg = (q.strides[2] // isz, k.strides[2] // isz, v.strides[2] // isz,
                          g.strides[2] // isz)
    zero = probs.dtype.type(0)
    sc = probs.dtype.type(scale)
    half = _causal_split(causal, n_t, n_s)
    rest = n_t - half
    for b in range(n_b):
        for h in range(n_h):
            p = probs[b, h]
            gbh, qb, kb, vb = g[b, h], q[b, h], k[b, h], v[b, h]
            if need_v:
                out = gv[b, h]
                ldo = gv.strides[2] // isz
                gemm(ROW_MAJOR, TRANS, NO_TRANS, n_s, n_e, rest, 1.0,  # noqa: F821
                     p[half:].ctypes, n_s, gbh[half:].ctypes, ldg, 0.0, out.ctypes, ldo)
                if half:
                    gemm(ROW_MAJOR, TRANS, NO_TRANS, half, n_e, half, 1.0,  # noqa: F821
                         p.ctypes, n_s, gbh.ctypes, ldg, 1.0, out.ctypes, ldo)
            if not (need_q or need_k):
                continue
            if half:
                gemm(ROW_MAJOR, NO_TRANS, TRANS, half, half, n_e, 1.0, gbh.ctypes,  # noqa: F821
                     ldg, vb.ctypes, ldv, 0.0, ds.ctypes, n_s)
            gemm(ROW_MAJOR, NO_TRANS, TRANS, rest, n_s, n_e, 1.0,  # noqa: F821
                 gbh[half:].ctypes, ldg, vb.ctypes, ldv, 0.0, ds[half * n_s:].ctypes, n_s)
            obh = o[b, h]
            for i in range(n_t):
                r = zero
                for e in range(n_e):
                    r += gbh[i, e] * obh[i, e]
                pi = p[i]
                base = i * n_s
                n = min(i + 1, n_s) if half else n_s  # the block's entries past it: P's 0
                for j in range(n):
                    ds[base + j] = pi[j] * (ds[base + j] - r)
                for j in range(n, n_s):
                    ds[base + j] = zero
            if need_q:
                out = gq[b, h]
                ldo = gq.strides[2] // isz
                if half:
                    gemm(ROW_MAJOR, NO_TRANS, NO_TRANS, half, n_d, half, 1.0,  # noqa: F821
                         ds.ctypes, n_s, kb.ctypes, ldk, 0.0, out.ctypes, ldo)
                gemm(ROW_MAJOR, NO_TRANS, NO_TRANS, rest, n_d, n_s, 1.0,  # noqa: F821
                     ds[half * n_s:].ctypes, n_s, kb.ctypes, ldk, 0.0, out[half:].ctypes, ldo)
                for i in range(n_t):
                    for c in range(n_d):
                        out[i, c] = out[i, c] * sc
            if need_k:
                out = gk[b, h]
                ldo = gk.strides[2] // isz
                gemm(ROW_MAJOR, TRANS, NO_TRANS, n_s, n_d, rest, 1.0,  # noqa: F821
                     ds[half * n_s:].ctypes, n_s, qb[half:].ctypes, ldq, 0.0, out.ctypes, ldo)
                if half:
                    gemm(ROW_MAJOR, TRANS, NO_TRANS, half, n_d, half, 1.0,  # noqa: F821
                         ds.ctypes, n_s, qb.ctypes, ldq, 1.0, out.ctypes, ldo)
                for i in range(n_s):
                    for c in range(n_d):
                        out[i, c] = out[i, c] * sc


_ATTENTION_BWD = {np.dtype(dt): specialize(_attention_bwd, name, _FAST, gemm=blas)
                  for dt, name, blas in ((np.float32, "f32", sgemm), (np.float64, "f64", dgemm))}


def attention_grad_fits(g, o):
    """Whether ``attention_backward`` takes gradient ``g`` of output ``o`` (as ``attention``
    wrote it): g's shape and dtype, unit stride along the last dim, rows apart by at least a
    row, nonnegative."""
    st, isz = g.strides, g.itemsize
    return (g.__class__ is np.ndarray and g.shape == o.shape and g.dtype == o.dtype
            and st[3] == isz and st[2] >= g.shape[3] * isz and min(st) >= 0
            and o.strides[3] == isz)


def _attention_bwd_call(g, q, k, v, o, probs, scale, causal, need, gq, gk, gv):
    ds = np.empty(probs.shape[2] * probs.shape[3], probs.dtype)
    _ATTENTION_BWD[q.dtype](g, q, k, v, o, probs, scale, causal, need[0], need[1], need[2],
                            gq, gk, gv, ds)


def attention_backward(g, q, k, v, o, probs, scale, causal, need):
    """(gq, gk, gv) of ``attention`` (None where ``need`` says not needed) for host arrays
    ``attention_fits`` and ``attention_grad_fits`` take."""
    dt = q.dtype
    # each gradient laid out as its input (PyTorch's strides; a GPT's transposed heads then
    # reach the (B, T, C) gradient of their view without a copy)
    gq, gk, gv = (output_rows(a, a.shape) if n else _EMPTY4[dt] for a, n in zip((q, k, v), need))
    args = (g, q, k, v, o, probs, float(scale), bool(causal), tuple(bool(n) for n in need), gq,
            gk, gv)
    if _hook.TAPE is None:
        _attention_bwd_call(*args)
    else:
        _hook.record(_attention_bwd_call, *args)
    return tuple(a if n else None for a, n in zip((gq, gk, gv), need))


_EMPTY4 = {dt: np.empty((0, 0, 0, 0), dt) for dt in _EMPTY}
