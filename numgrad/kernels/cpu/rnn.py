"""LSTM layers on the CPU: one layer in one direction over the whole sequence in one compiled
loop (a kernel call for the forward, one for the backward).

Forward: per step, the step's input rows and ``h_(t-1)`` are copied side by side (``[x_t
h_(t-1)]``, kept for the backward), one product with the stacked weights ``[W_ih W_hh]^T``
gives the gates' pre-activations (no separate input projection: the step's projections are
still in cache when the gate math reads them), and one pass over the step's rows does the
gate math (both biases, sigmoid and tanh of the gates, the cell update, ``h = o tanh(c)``),
writing the gates' activations over the pre-activations. Backward: per step, from the
forward's last, one pass for the gates' gradients and one product ``dgates_t W_hh`` for the
gradient reaching ``h_(t-1)``; then both weight gradients are one product over all steps,
``dgates^T [x_t h_(t-1)]_t`` (split into W_ih's and W_hh's columns), the input's one product
(``dgates W_ih``), and the biases' gradient is summed in the step passes. The step products
and the input's gradient are numgrad's own tiled products (see "products by tiles" below),
the weight gradients a BLAS call.

The cell formulas are written once for both devices (``numgrad.kernels.lstm``): the CPU step
passes apply them a quantity at a time (see ``_forward_step``), ``numgrad.kernels.cuda.rnn``
runs ``lstm_cell`` and ``lstm_cell_backward`` a thread per unit.

Arrays are flat C-contiguous buffers addressed by row: the rows of step ``t`` of a sequence
array in the caller's layout (input, projections and their gradients, output, the saved
``[x_t h_(t-1)]``) start at element ``t * st * width`` and are ``sb * width`` apart
(``batch_first``: st = 1, sb = T; time major: st = B, sb = 1), so the products over all
steps see each as one matrix of T*B rows in the same order; the saved cells and ``tanh(c)``
are time major, rows ``t * B + b``. Views of flat buffers (``buf[a:b]``) keep the inner loops
contiguous and free of index wraparound tests, so they vectorize.

Where NumPy's BLAS cannot be called from compiled code (``_blas.AVAILABLE`` False) the same
step passes run as separate kernels from a Python loop over the steps, beside NumPy's
products (``forward_loop``, ``backward_loop``); the CUDA backend runs that loop too, with its
own kernels and products.
"""

import types as pytypes

import numba
import numpy as np
from llvmlite import ir
from numba import types as nb_types
from numba.core import cgutils
from numba.extending import intrinsic

from numgrad import _arrays as A
from numgrad.kernels import LIN
from numgrad.kernels import lstm as L
from numgrad.kernels._jit import inline, jit, specialize
from numgrad.kernels.cpu import _blas, _host, _scalar  # noqa: F401  (_scalar: ``like``)
from numgrad.kernels.cpu._bind import bind
from numgrad.kernels.cpu._blas import NO_TRANS, ROW_MAJOR, TRANS, dgemm, sgemm
from numgrad.kernels.cpu._fastmath import ffma, fsigmoid, ftanh

# the kernels an op calls with data of either device: the handle (RNN_KERNELS.<name>) hands CUDA
# data to ``numgrad.kernels.cuda.rnn``'s kernel of the same name
EITHER_DEVICE = ("lstm_forward", "lstm_backward")

# ---- one cell (one batch row, one hidden unit): ``numgrad.kernels.lstm``'s formulas --------

_L = bind(L, L.CELL_FUNCTIONS, __name__, {"fsigmoid": fsigmoid, "ftanh": ftanh, "ffma": ffma})
_gate, _cell, _hidden = _L["gate"], _L["cell"], _L["hidden"]
_d_out_gate, _d_cell, _d_forget_gate = _L["d_out_gate"], _L["d_cell"], _L["d_forget_gate"]
_d_cell_gate, _d_prev_cell, _d_input_gate = (_L["d_cell_gate"], _L["d_prev_cell"],
                                             _L["d_input_gate"])


# ---- one step: every row of the batch -------------------------------------------------------


def _forward_step(xw, xo, ldx, b_ih, b_hh, r, ro, ldr, gs, hp, hpo, ldhp, cp, cpo, cs, tcs, co,
                  out, hprev, oo, ldo, last, hn, cn, hno, n_rows, j0, nj, n):
    """Rows b < n_rows of one step (every offset below is at row 0), hidden units
    j0 <= j < j0 + nj: the gates' pre-activations are the projections ``xw`` (rows xo + b ldx,
    gate q's columns q n + j) + b_ih + b_hh + the recurrent product ``r`` (rows ro + b ldr,
    gate q's columns q gs + j - j0; made from ``hp``, rows hpo + b ldhp); the previous cells
    are ``cp`` (cpo + b n + j). Writes the activations (i, f, g, o) over the projections, c
    and tanh(c) to ``cs`` and ``tcs`` (co + b n + j), h to ``out`` (oo + b ldo + j), the h
    the product read to ``hprev`` (the same rows: the recurrent weight gradient's operand),
    and on the ``last`` step h and c to ``hn`` and ``cn`` (hno + b n + j)."""
    e = j0 + nj
    bii, bif, big, bio = b_ih[j0:e], b_ih[n + j0:n + e], b_ih[2 * n + j0:2 * n + e], \
        b_ih[3 * n + j0:3 * n + e]
    bhi, bhf, bhg, bho = b_hh[j0:e], b_hh[n + j0:n + e], b_hh[2 * n + j0:2 * n + e], \
        b_hh[3 * n + j0:3 * n + e]
    for b in range(n_rows):
        x = xo + b * ldx + j0
        xi, xf, xg, xo4 = xw[x:x + nj], xw[x + n:x + n + nj], xw[x + 2 * n:x + 2 * n + nj], \
            xw[x + 3 * n:x + 3 * n + nj]
        q = ro + b * ldr
        ri, rf, rg, rq = r[q:q + nj], r[q + gs:q + gs + nj], r[q + 2 * gs:q + 2 * gs + nj], \
            r[q + 3 * gs:q + 3 * gs + nj]
        c0 = cp[cpo + b * n + j0:cpo + b * n + e]
        c = cs[co + b * n + j0:co + b * n + e]
        tc = tcs[co + b * n + j0:co + b * n + e]
        h = out[oo + b * ldo + j0:oo + b * ldo + e]
        hsrc = hp[hpo + b * ldhp + j0:hpo + b * ldhp + e]
        hdst = hprev[oo + b * ldo + j0:oo + b * ldo + e]
        for j in range(nj):
            hdst[j] = hsrc[j]
        # the cell a quantity at a time: each loop reads and writes few arrays, so LLVM
        # vectorizes it behind few run-time overlap tests (one loop over all twenty views
        # took 10-20% longer; the numbers are the same bit for bit)
        for j in range(nj):
            xi[j] = fsigmoid(_gate(xi[j], bii[j], bhi[j], ri[j]))
        for j in range(nj):
            xf[j] = fsigmoid(_gate(xf[j], bif[j], bhf[j], rf[j]))
        for j in range(nj):
            xg[j] = ftanh(_gate(xg[j], big[j], bhg[j], rg[j]))
        for j in range(nj):
            xo4[j] = fsigmoid(_gate(xo4[j], bio[j], bho[j], rq[j]))
        for j in range(nj):
            c[j] = _cell(xi[j], xf[j], xg[j], c0[j])
        for j in range(nj):
            tc[j] = ftanh(c[j])
        for j in range(nj):
            h[j] = _hidden(xo4[j], tc[j])
        if last:
            hl = hn[hno + b * n + j0:hno + b * n + e]
            cl = cn[hno + b * n + j0:hno + b * n + e]
            for j in range(nj):
                hl[j] = h[j]
                cl[j] = c[j]


def _backward_step(dout, doo, ldo, dh_in, dc_in, dc, act, go, ldg, tcs, co, cp, cpo, dg, db,
                   sum_b, n_b, n):
    """The gates' gradients of one step, rows b < n_b: dh = ``dout`` rows (doo + b ldo) +
    ``dh_in`` rows (b n: what the later step sent back), the cell's gradient ``dc_in`` (b n);
    the saved activations ``act`` and the gradients ``dg`` share rows (go + b ldg); ``tcs``
    (co + b n), previous cells ``cp`` (cpo + b n). Writes ``dg`` and the previous cell's
    gradient to ``dc`` (b n; may be ``dc_in``); with ``sum_b`` adds the rows of ``dg`` into
    ``db`` (float64)."""
    for b in range(n_b):
        d = dout[doo + b * ldo:doo + b * ldo + n]
        dhi = dh_in[b * n:(b + 1) * n]
        dci = dc_in[b * n:(b + 1) * n]
        dco = dc[b * n:(b + 1) * n]
        a = act[go + b * ldg:go + b * ldg + 4 * n]
        tc = tcs[co + b * n:co + (b + 1) * n]
        c0 = cp[cpo + b * n:cpo + (b + 1) * n]
        gr = dg[go + b * ldg:go + b * ldg + 4 * n]
        ai, af, ag, ao4 = a[:n], a[n:2 * n], a[2 * n:3 * n], a[3 * n:]
        gi, gf, gg, go4 = gr[:n], gr[n:2 * n], gr[2 * n:3 * n], gr[3 * n:]
        # the cell's backward a quantity at a time (as in ``_forward_step``; the running
        # cell gradient ``dc`` may be ``dc_in`` itself, which no loop both reads and writes):
        # do, then dc_total (kept in gi), df, dg, dc_prev from it, di last
        for j in range(n):
            go4[j] = _d_out_gate(d[j] + dhi[j], ao4[j], tc[j])
        for j in range(n):
            gi[j] = _d_cell(dci[j], d[j] + dhi[j], ao4[j], tc[j])
        for j in range(n):
            gf[j] = _d_forget_gate(gi[j], c0[j], af[j])
        for j in range(n):
            gg[j] = _d_cell_gate(gi[j], ai[j], ag[j])
        for j in range(n):
            dco[j] = _d_prev_cell(gi[j], af[j])
        for j in range(n):
            gi[j] = _d_input_gate(gi[j], ag[j], ai[j])
        if sum_b:
            for j in range(4 * n):
                db[j] += gr[j]


step_forward = jit(_forward_step)
step_backward = jit(_backward_step)
_step_forward = inline(_forward_step)
_step_backward = inline(_backward_step)


# ---- products by tiles with their accumulators in registers --------------------------------
# A step's product is small (B rows) and multiplies the same weights at every step: BLAS packs
# those weights into its panel layout at each call, and its kernels are tuned for large
# products. Here the weights are packed once per layer call, into panels NR columns wide and
# k major, and each tile of MR rows x NR columns of a product is one pass over k with its
# accumulators in vector registers (the shape per CPU: ``_tile_shape``): on AVX-512 a stack
# buffer (``_tile_intrinsic``) whose slices LLVM keeps in registers once the loops over rows
# and columns are unrolled and vectorized (MR x NR x itemsize is 16 vector registers' worth);
# on AVX2 LLVM vector code written out (``_vector_tile``, 4 x 24 for float32: on a Zen 3 core
# 60-78 GFLOP/s at the char-LSTM's shapes, against 29-39 for ``_micro``'s 2 x 64 tiles and
# 45-69 for NumPy's OpenBLAS; ``benchmarks/lstm_tiles.py``). On the 2-core AVX-512 VM a
# step's (32 x 256) x (256 x 1024) product takes 0.16 ms this way against 0.20-0.26 ms in
# NumPy's OpenBLAS; the input's gradient (``dgates W_ih``, all T*B rows) uses the same kind
# of tiles (2.4 ms against 3.0 ms for the first layer of the char-LSTM benchmark, 9.9 against
# 10.8 for the second), on AVX2 taller ones, 6 x 16 (the second layer's on a Zen 3 core: 14.0
# ms against 15.8 in 4 x 24 tiles and 16.3 in OpenBLAS: fewer panel loads per multiply-add,
# and the rows to fill them; a step's 32 rows are not a multiple of 6). The weight gradients
# (products over all T*B rows whose operands are both read down their columns) stay BLAS calls:
# numgrad's tiles need the gates' gradients transposed first, and that copy (rows T*4H apart in the
# batch-first layout) cost more than the tiles saved (char-LSTM, dgates^T h of a layer: 10.6 ms in
# tiles against 11.9 in BLAS, but 3.6 ms to transpose dgates; on a Zen 3 core, with dgates
# transposed beforehand, the second layer's takes 29-30 ms in tiles against 27 in OpenBLAS).

BLOCK_ELEMENTS = 32768  # the rows of ``a`` a product takes at a time (128 KiB of float32)


def _tile_shape(dtype, many_rows=False):
    """(MR, NR, lanes) for this CPU: tiles of MR rows x NR columns, written as LLVM vector code
    of ``lanes`` per vector (``_vector_tile``), or by ``_micro`` (lanes 0). AVX-512: 16 of
    its 64-byte registers hold the tile (``_micro``, which LLVM vectorizes). AVX2 (16 registers
    of 32 bytes): 12 accumulators, the panel's vectors and a broadcast: for a step's product
    (B rows) 4 rows x 3 vectors, for a product over all steps' rows (``many_rows``) 6 rows x
    2 vectors (fewer panel loads per multiply-add, where there are rows enough to fill the
    taller tiles; ``_micro``'s two-row tiles read 8 vectors of the panel per 16 multiply-adds
    there, and LLVM leaves its smaller tiles scalar). Else ``_micro`` as for 32-byte vectors."""
    features = _host.features()
    item = np.dtype(dtype).itemsize
    if features.get("avx512f", False):
        return max(1, 16 * 64 // (64 * item)), 64, 0
    if features.get("avx2", False) and features.get("fma", False):
        if many_rows:
            return 6, 2 * 32 // item, 32 // item
        return 4, 3 * 32 // item, 32 // item
    return max(1, 16 * 32 // (64 * item)), 64, 0


def _tile_intrinsic(dtype, size):
    """``tile()``: a pointer to ``size`` zeroed elements of ``dtype`` on the stack."""
    nb_type = numba.from_dtype(np.dtype(dtype))

    @intrinsic
    def tile(typingctx):
        def codegen(context, builder, signature, args):
            ty = ir.ArrayType(context.get_value_type(nb_type), size)
            buf = cgutils.alloca_once(builder, ty)
            builder.store(ir.Constant(ty, None), buf)
            return builder.bitcast(buf, context.get_value_type(nb_type).as_pointer())
        return nb_types.CPointer(nb_type)(), codegen
    return tile


def _vector_tile(dtype, rows, cols, width):
    """``tile_product(a, ao, lda, bp, bo, c, k_n)``: what ``_micro`` computes (same fused
    multiply-adds in the same order, so the same numbers bit for bit) for a ``rows`` x
    ``cols`` tile, written as LLVM vector code: ``rows * cols / width`` accumulators of
    ``width`` lanes, per k ``cols / width`` loads of the panel's row and one broadcast per
    row of ``a``. (LLVM's own vectorizer turns ``_micro`` into scalar code when ``cols`` is
    small, since it unrolls the column loop before vectorizing.)"""
    nb_type = numba.from_dtype(np.dtype(dtype))
    item = np.dtype(dtype).itemsize
    nv = cols // width

    @intrinsic
    def tile_product(typingctx, a, ao, lda, bp, bo, c, k_n):
        def codegen(context, builder, signature, args):
            intp = context.get_value_type(nb_types.intp)
            ta = signature.args
            a_, ao_, lda_, bp_, bo_, c_, k_ = (
                context.make_array(t)(context, builder, v).data
                if isinstance(t, nb_types.Array) else context.cast(builder, v, t, nb_types.intp)
                for v, t in zip(args, ta))
            elt = context.get_value_type(nb_type)
            vty = ir.VectorType(elt, width)
            suffix = "f32" if item == 4 else "f64"
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vty, [vty] * 3),
                                                 f"llvm.fma.v{width}{suffix}")
            zero = ir.Constant(vty, None)
            accs = [cgutils.alloca_once_value(builder, zero) for _ in range(rows * nv)]
            a0 = builder.gep(a_, [ao_])
            b0 = builder.gep(bp_, [bo_])
            rows_at = [builder.gep(a0, [builder.mul(ir.Constant(intp, m), lda_)])
                       for m in range(rows)]
            mask = ir.Constant(ir.VectorType(ir.IntType(32), width), [0] * width)
            with cgutils.for_range(builder, k_) as loop:
                k = loop.index
                bk = builder.gep(b0, [builder.mul(k, ir.Constant(intp, cols))])
                bv = [builder.load(builder.bitcast(builder.gep(bk, [ir.Constant(intp, v * width)]),
                                                   vty.as_pointer()), align=item)
                      for v in range(nv)]
                for m in range(rows):
                    am = builder.load(builder.gep(rows_at[m], [k]))
                    splat = builder.shuffle_vector(
                        builder.insert_element(ir.Constant(vty, ir.Undefined), am,
                                               ir.Constant(ir.IntType(32), 0)),
                        ir.Constant(vty, ir.Undefined), mask)
                    for v in range(nv):
                        acc = accs[m * nv + v]
                        builder.store(builder.call(fma, [splat, bv[v], builder.load(acc)]), acc)
            for m in range(rows):
                for v in range(nv):
                    dst = builder.gep(c_, [ir.Constant(intp, m * cols + v * width)])
                    builder.store(builder.load(accs[m * nv + v]),
                                  builder.bitcast(dst, vty.as_pointer()), align=item)
            return context.get_dummy_value()
        return nb_types.void(a, ao, lda, bp, bo, c, k_n), codegen
    return tile_product


def _micro(a, ao, lda, bp, bo, c, k_n):
    """c[m NR + j] = sum_k a[ao + m lda + k] bp[bo + k NR + j] for m < MR, j < NR, summed over
    k in order with fused multiply-adds: one tile of the product of ``a``'s rows (row major)
    and a packed panel."""
    acc = numba.carray(tile(), (MR * NR,))  # noqa: F821
    for k in range(k_n):
        b = bp[bo + k * NR:bo + (k + 1) * NR]  # noqa: F821
        for m in range(MR):  # noqa: F821
            am = a[ao + m * lda + k]
            row = acc[m * NR:(m + 1) * NR]  # noqa: F821
            for j in range(NR):  # noqa: F821
                row[j] = ffma(am, b[j], row[j])
    for i in range(MR * NR):  # noqa: F821
        c[i] = acc[i]


def _product(a, ao, lda, m_n, k_n, bp, n_cols, c, co, ldc):
    """c rows co + i ldc (i < m_n) = ``a`` rows ao + i lda (k_n long) times B (k_n x n_cols),
    packed into ``bp`` by ``_pack`` or ``_pack_cat``. By blocks of rows of ``a``
    (BLOCK_ELEMENTS: they stay in cache), panel by panel, tile by tile down the block; a
    last tile of fewer than MR rows reads its rows from a zeroed copy, so that no row past
    ``a``'s is read."""
    last = (m_n - 1) // MR * MR  # noqa: F821
    acc = np.empty(MR * NR, c.dtype)  # noqa: F821
    pad = np.zeros(MR * k_n, c.dtype)  # noqa: F821
    for m in range(m_n - last):
        src = a[ao + (last + m) * lda:ao + (last + m) * lda + k_n]
        dst = pad[m * k_n:(m + 1) * k_n]
        for k in range(k_n):
            dst[k] = src[k]
    block = max(1, BLOCK_ELEMENTS // (MR * k_n)) * MR  # noqa: F821
    for m0 in range(0, m_n, block):
        for p in range((n_cols + NR - 1) // NR):  # noqa: F821
            width = min(NR, n_cols - p * NR)  # noqa: F821
            for b0 in range(m0, min(m0 + block, m_n), MR):  # noqa: F821
                if b0 + MR <= m_n:  # noqa: F821
                    micro(a, ao + b0 * lda, lda, bp, p * k_n * NR, acc, k_n)  # noqa: F821
                else:
                    micro(pad, 0, k_n, bp, p * k_n * NR, acc, k_n)  # noqa: F821
                for m in range(min(MR, m_n - b0)):  # noqa: F821
                    src = acc[m * NR:m * NR + width]  # noqa: F821
                    d0 = co + (b0 + m) * ldc + p * NR  # noqa: F821
                    d = c[d0:d0 + width]
                    for u in range(width):
                        d[u] = src[u]


def _pack(w, rows, cols, bp):
    """B = w (rows x cols, row major) into panels: bp[(p rows + k) NR + u] = w[k, p NR + u]
    (zeros past the last column)."""
    for p in range((cols + NR - 1) // NR):  # noqa: F821
        u_n = min(NR, cols - p * NR)  # noqa: F821
        for k in range(rows):
            src = w[k * cols + p * NR:k * cols + p * NR + u_n]  # noqa: F821
            dst = bp[(p * rows + k) * NR:(p * rows + k) * NR + u_n]  # noqa: F821
            for u in range(u_n):
                dst[u] = src[u]


def _pack_cat(w_ih, n_in, w, n, wp):
    """B = [W_ih W_hh]^T ((n_in + n) x 4n) into panels, as ``_pack`` (columns past 4n are
    left as they are): wp[(p kk + k) NR + u] = [W_ih W_hh][p NR + u, k], kk = n_in + n. Panel
    by panel, k by k: the writes run in order and the reads stay within the panel's NR rows
    of the weights (in cache)."""
    kk = n_in + n
    for p in range((4 * n + NR - 1) // NR):  # noqa: F821
        r0 = NR * p  # noqa: F821
        u_n = min(NR, 4 * n - r0)  # noqa: F821
        for k in range(n_in):
            dst = wp[(p * kk + k) * NR:(p * kk + k + 1) * NR]  # noqa: F821
            for u in range(u_n):
                dst[u] = w_ih[(r0 + u) * n_in + k]
        for k in range(n):
            dst = wp[(p * kk + n_in + k) * NR:(p * kk + n_in + k + 1) * NR]  # noqa: F821
            for u in range(u_n):
                dst[u] = w[(r0 + u) * n + k]


def _panels(cols):
    return (cols + NR - 1) // NR  # noqa: F821


# ---- one layer: the loop over the steps ----------------------------------------------------------


def _layer_forward(x, w_ih, b_ih, b_hh, w, h0, c0, xw, out, zs, cs, tcs, hn, cn, n_t, n_b, n,
                   n_in, st, sb, reverse):
    """The steps in order (``reverse``: from the last): the step's input rows and h_(t-1)
    side by side into its rows of ``zs`` (``[x_t h_(t-1)]``, n_in + n wide, in x's layout:
    saved for the weight gradients), then the gates' pre-activations ``[x_t h_(t-1)]
    [W_ih W_hh]^T`` as one product (the weights packed once) into the step's rows of ``xw``,
    then ``_forward_step`` adds the biases (its recurrent term is a row of zeros) and writes
    the activations over them (its copy of h_(t-1) goes to the step's ``out`` rows, which
    it then overwrites with h_t)."""
    n4 = 4 * n
    kk = n_in + n
    dt = xw.dtype
    wp = np.empty(_panels(n4) * kk * NR, dt)  # noqa: F821
    if n4 % NR:  # noqa: F821
        wp[:] = 0
    _pack_cat(w_ih.reshape(w_ih.size), n_in, w.reshape(w.size), n, wp)
    zero = np.zeros(n4, dt)
    ldx, ldo, ldz = sb * n4, sb * n, sb * kk
    for k in range(n_t):
        t = n_t - 1 - k if reverse else k
        tp = t + 1 if reverse else t - 1
        if k == 0:
            hp, hpo, ldhp, cp, cpo = h0, 0, n, c0, 0
        else:
            hp, hpo, ldhp, cp, cpo = out, tp * st * n, ldo, cs, tp * n_b * n
        for b in range(n_b):
            zo = (t * st + b * sb) * kk
            zx = zs[zo:zo + n_in]
            src = x[(t * st + b * sb) * n_in:(t * st + b * sb + 1) * n_in]
            for i in range(n_in):
                zx[i] = src[i]
            zh = zs[zo + n_in:zo + kk]
            src = hp[hpo + b * ldhp:hpo + b * ldhp + n]
            for i in range(n):
                zh[i] = src[i]
        product(zs, t * st * kk, ldz, n_b, kk, wp, n4, xw, t * st * n4, ldx)  # noqa: F821
        _step_forward(xw, t * st * n4, ldx, b_ih, b_hh, zero, 0, 0, n, hp, hpo, ldhp, cp, cpo,
                      cs, tcs, t * n_b * n, out, out, t * st * n, ldo, k == n_t - 1, hn, cn,
                      0, n_b, 0, n, n)


def _layer_backward(dout, dhn, dcn, x, w_ih, w, c0, act, cs, tcs, zs, dg, dx, dh0, dc0,
                    dw_ih, dw, db, n_t, n_b, n, n_in, st, sb, reverse, need_x, need_h0,
                    need_wih, need_w, need_b):
    """The steps from the forward's last: ``_backward_step``, then the gradient reaching the
    step's h, ``dgates_t W_hh`` (after the first step only for ``need_h0``, into ``dh0``);
    ``dc0`` holds the running cell gradient. Then, as asked, the weights' gradients
    ``dg^T [x h_prev]`` (``zs``, saved by the forward; one BLAS call for both), the input's
    ``dg W_ih`` and the biases' (one array for both). ``x`` is not read (``zs`` holds it)."""
    n4 = 4 * n
    rows_all = n_t * n_b
    dt = dout.dtype
    dhr = np.empty(n_b * n, dt)
    sums = np.zeros(n4, np.float64)
    wq = np.empty(_panels(n) * n4 * NR, dt)  # noqa: F821
    if n % NR:  # (``_pack`` leaves the columns past the last as they are)  # noqa: F821
        wq[:] = 0
    _pack(w.reshape(w.size), n4, n, wq)
    ldo, ldg = sb * n, sb * n4
    for k in range(n_t):
        t = k if reverse else n_t - 1 - k
        tp = t + 1 if reverse else t - 1
        if k == n_t - 1:
            cp, cpo = c0, 0
        else:
            cp, cpo = cs, tp * n_b * n
        dh_in = dhn if k == 0 else dhr
        dc_in = dcn if k == 0 else dc0
        _step_backward(dout, t * st * n, ldo, dh_in, dc_in, dc0, act, t * st * n4, ldg, tcs,
                       t * n_b * n, cp, cpo, dg, sums, need_b, n_b, n)
        if k < n_t - 1:
            product(dg, t * st * n4, ldg, n_b, n4, wq, n, dhr, 0, n)  # noqa: F821
        elif need_h0:
            product(dg, t * st * n4, ldg, n_b, n4, wq, n, dh0, 0, n)  # noqa: F821
    # the weight gradients: dgates^T [x h_prev] (``zs``) as one product when both are asked
    kk = n_in + n
    if need_w and need_wih:
        dwc = np.empty(n4 * kk, dt)
        gemm(ROW_MAJOR, TRANS, NO_TRANS, n4, kk, rows_all, 1.0, dg.ctypes, n4,  # noqa: F821
             zs.ctypes, kk, 0.0, dwc.ctypes, kk)
        fw_ih, fw = dw_ih.reshape(dw_ih.size), dw.reshape(dw.size)
        for r in range(n4):
            src = dwc[r * kk:r * kk + n_in]
            d = fw_ih[r * n_in:(r + 1) * n_in]
            for i in range(n_in):
                d[i] = src[i]
            src = dwc[r * kk + n_in:(r + 1) * kk]
            d = fw[r * n:(r + 1) * n]
            for i in range(n):
                d[i] = src[i]
    elif need_w:
        gemm(ROW_MAJOR, TRANS, NO_TRANS, n4, n, rows_all, 1.0, dg.ctypes, n4,  # noqa: F821
             zs[n_in:].ctypes, kk, 0.0, dw.ctypes, n)
    elif need_wih:
        gemm(ROW_MAJOR, TRANS, NO_TRANS, n4, n_in, rows_all, 1.0, dg.ctypes, n4,  # noqa: F821
             zs.ctypes, kk, 0.0, dw_ih.ctypes, n_in)
    if need_x:  # (all T*B rows: ``_tile_shape``'s tiles for many rows)
        wi = np.empty((n_in + NR_ALL - 1) // NR_ALL * n4 * NR_ALL, dt)  # noqa: F821
        if n_in % NR_ALL:  # noqa: F821
            wi[:] = 0
        _pack_all(w_ih.reshape(w_ih.size), n4, n_in, wi)  # noqa: F821
        product_all(dg, 0, n4, rows_all, n4, wi, n_in, dx, 0, n_in)  # noqa: F821
    if need_b:
        for j in range(n4):
            db[j] = sums[j]


def _bind(fn, **bindings):
    """A copy of ``fn`` whose globals also hold ``bindings`` (for ``inline``)."""
    g = dict(fn.__globals__)
    g.update(bindings)
    f = pytypes.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__)
    f.__qualname__ = fn.__qualname__
    f.__module__ = fn.__module__
    return f


def _product_kernel(dtype, mr, nr, lanes):
    """``_product`` with tiles of ``mr`` x ``nr`` (``lanes``: see ``_tile_shape``)."""
    if lanes:
        micro = _vector_tile(dtype, mr, nr, lanes)
    else:
        micro = inline(_bind(_micro, MR=mr, NR=nr, tile=_tile_intrinsic(dtype, mr * nr)))
    return inline(_bind(_product, MR=mr, NR=nr, micro=micro))


def _layer_kernels(dtype, name, gemm):
    """The forward and backward layer kernels for one real type, with this CPU's tiles."""
    mr, nr, lanes = _tile_shape(dtype)
    mr_all, nr_all, lanes_all = _tile_shape(dtype, many_rows=True)
    tiles = {"NR": nr}
    values = {f.__name__: inline(_bind(f, **tiles)) for f in (_pack, _pack_cat, _panels)}
    values.update(tiles, gemm=gemm, product=_product_kernel(dtype, mr, nr, lanes),
                  NR_ALL=nr_all, _pack_all=inline(_bind(_pack, NR=nr_all)),
                  product_all=_product_kernel(dtype, mr_all, nr_all, lanes_all))
    return (specialize(_layer_forward, name, **values),
            specialize(_layer_backward, name, **values))


_LAYER = {np.dtype(np.float32): _layer_kernels(np.float32, "f32", sgemm),
          np.dtype(np.float64): _layer_kernels(np.float64, "f64", dgemm)}


# ---- the loop over the steps in Python (no BLAS callable from compiled code; CUDA) ------------


def _layout(shape, batch_first):
    """(steps, batch, st, sb) of a (B, T, .) or (T, B, .) sequence array (see the top)."""
    if batch_first:
        return shape[1], shape[0], 1, shape[1]
    return shape[0], shape[1], shape[1], 1


def _flat(a):
    return a.reshape(-1)


def _matrix(a):
    """A sequence array as the matrix of its T*B rows."""
    return a.reshape(-1, a.shape[-1])


def _steps(a, batch_first):
    """The (T, B, .) view of a sequence array."""
    return a.transpose(1, 0, 2) if batch_first else a


def forward_loop(step, x, w_ih, b_ih, b_hh, w, h0, c0, xw, out, hprev, cs, tcs, hn, cn,
                 batch_first, reverse):
    """``_layer_forward`` as a Python loop over the steps: ``LIN.matmul`` products (NumPy's
    or the GPU's) and the ``step`` kernel (``step_forward`` or its CUDA twin)."""
    n_t, n_b, st, sb = _layout(x.shape, batch_first)
    n = w.shape[1]
    n4 = 4 * n
    LIN.matmul(_matrix(x), w_ih.T, _matrix(xw))
    r = A.empty(x, (n_b, n4), x.dtype)
    wt, seq = w.T, _steps(out, batch_first)
    fx, fo, fhp, fr = _flat(xw), _flat(out), _flat(hprev), _flat(r)
    for k in range(n_t):
        t = n_t - 1 - k if reverse else k
        tp = t + 1 if reverse else t - 1
        if k == 0:
            h2, hp, hpo, ldhp, cp, cpo = h0, _flat(h0), 0, n, _flat(c0), 0
        else:
            h2, hp, hpo, ldhp, cp, cpo = seq[tp], fo, tp * st * n, sb * n, cs, tp * n_b * n
        LIN.matmul(h2, wt, r)
        step(fx, t * st * n4, sb * n4, b_ih, b_hh, fr, 0, n4, n, hp, hpo, ldhp, cp, cpo, cs, tcs,
             t * n_b * n, fo, fhp, t * st * n, sb * n, k == n_t - 1, _flat(hn), _flat(cn), 0,
             n_b, 0, n, n)


def backward_loop(step, dout, dhn, dcn, x, w_ih, w, c0, act, cs, tcs, hprev, dg, dx, dh0, dc0,
                  dw_ih, dw, db, batch_first, reverse, need_x, need_h0, need_wih, need_w,
                  need_b):
    """``_layer_backward`` as a Python loop over the steps (as ``forward_loop``); the biases'
    gradient is the product of a row of ones and the gates' gradients."""
    n_t, n_b, st, sb = _layout(dout.shape, batch_first)
    n = w.shape[1]
    n4 = 4 * n
    dhr = A.empty(dout, (n_b, n), dout.dtype)
    unused = A.empty(dout, (n4,), np.dtype(np.float64))  # (the step's sums: not asked)
    seq = _steps(dg, batch_first)
    fd, fa, fg, fdc = _flat(dout), _flat(act), _flat(dg), _flat(dc0)
    for k in range(n_t):
        t = k if reverse else n_t - 1 - k
        tp = t + 1 if reverse else t - 1
        if k == n_t - 1:
            cp, cpo = _flat(c0), 0
        else:
            cp, cpo = cs, tp * n_b * n
        dh_in = _flat(dhn) if k == 0 else _flat(dhr)
        dc_in = _flat(dcn) if k == 0 else fdc
        step(fd, t * st * n, sb * n, dh_in, dc_in, fdc, fa, t * st * n4, sb * n4, tcs,
             t * n_b * n, cp, cpo, fg, unused, False, n_b, n)
        if k < n_t - 1:
            LIN.matmul(seq[t], w, dhr)
        elif need_h0:
            LIN.matmul(seq[t], w, dh0)
    g = _matrix(dg)
    if need_w:
        LIN.matmul(g.T, _matrix(hprev), dw)
    if need_wih:
        LIN.matmul(g.T, _matrix(x), dw_ih)
    if need_x:
        LIN.matmul(g, w_ih, _matrix(dx))
    if need_b:
        LIN.matmul(A.ones(dout, (1, n_t * n_b), dout.dtype), g, db.reshape(1, n4))


# ---- launchers --------------------------------------------------------------------------------


def _c(a):
    return a if a.flags.c_contiguous else A.contiguous(a)


def lstm_forward(x, w_ih, b_ih, b_hh, w_hh, h0, c0, batch_first, reverse):
    """One LSTM layer in one direction over a whole sequence.

    ``x``: (B, T, in) or (T, B, in); ``w_ih`` (4H, in), ``w_hh`` (4H, H), the biases (4H,)
    or None; ``h0``, ``c0``: (B, H). Returns (output in x's layout, h_n, c_n, saved), where
    ``saved`` is what ``lstm_backward`` reads."""
    x, w_ih, w_hh, h0, c0 = (_c(a) for a in (x, w_ih, w_hh, h0, c0))
    n_t, n_b, st, sb = _layout(x.shape, batch_first)
    n, n_in, dt = w_hh.shape[1], x.shape[2], x.dtype
    if b_ih is None:
        b_ih = b_hh = A.zeros(x, (4 * n,), dt)
    b_ih, b_hh = _c(b_ih), _c(b_hh)
    xw = A.new(x.shape[:2] + (4 * n,), dt)
    out = A.new(x.shape[:2] + (n,), dt)
    cs = A.new((n_t * n_b * n,), dt)
    tcs = A.new((n_t * n_b * n,), dt)
    hn = A.new((n_b, n), dt)
    cn = A.new((n_b, n), dt)
    layer = _LAYER.get(dt) if _blas.AVAILABLE else None
    if layer is not None:  # (``hprev``: [x_t h_(t-1)] rows, see ``_layer_forward``)
        hprev = A.new(x.shape[:2] + (n_in + n,), dt)
        layer[0](_flat(x), w_ih, b_ih, b_hh, w_hh, _flat(h0), _flat(c0), _flat(xw), _flat(out),
                 _flat(hprev), cs, tcs, _flat(hn), _flat(cn), n_t, n_b, n, n_in, st, sb,
                 reverse)
    else:
        hprev = A.new(out.shape, dt)
        forward_loop(step_forward, x, w_ih, b_ih, b_hh, w_hh, h0, c0, xw, out, hprev, cs, tcs,
                     hn, cn, batch_first, reverse)
    return out, hn, cn, (xw, hprev, cs, tcs)


def lstm_backward(dout, dhn, dcn, x, w_ih, w_hh, c0, saved, batch_first, reverse, needs):
    """Gradients of ``lstm_forward``'s inputs from those of its outputs (``dout`` in the
    output's shape, ``dhn``, ``dcn``): (dx, dh0, dc0, dW_ih, dW_hh, d bias), each None
    unless ``needs`` (six flags in that order) asks for it; d bias is both biases'."""
    dout, dhn, dcn, x, w_ih, w_hh, c0 = (_c(a) for a in (dout, dhn, dcn, x, w_ih, w_hh, c0))
    act, hprev, cs, tcs = saved
    n_t, n_b, st, sb = _layout(dout.shape, batch_first)
    n, n_in, dt = w_hh.shape[1], x.shape[2], dout.dtype
    need_x, need_h0, _, need_wih, need_w, need_b = (bool(v) for v in needs)
    dg = A.new(act.shape, dt)
    dc0 = A.new((n_b, n), dt)
    dx = A.new(x.shape, dt) if need_x else None
    dh0 = A.new((n_b, n), dt) if need_h0 else None
    dw_ih = A.new(w_ih.shape, dt) if need_wih else None
    dw = A.new(w_hh.shape, dt) if need_w else None
    db = A.new((4 * n,), dt) if need_b else None
    layer = _LAYER.get(dt) if _blas.AVAILABLE else None
    if layer is not None:
        spare = dc0  # (stands for what is not asked; the kernel leaves it alone)
        layer[1](_flat(dout), _flat(dhn), _flat(dcn), _flat(x), w_ih, w_hh, _flat(c0),
                 _flat(act), cs, tcs, _flat(hprev), _flat(dg),
                 _flat(spare if dx is None else dx), _flat(spare if dh0 is None else dh0),
                 _flat(dc0), spare if dw_ih is None else dw_ih, spare if dw is None else dw,
                 _flat(spare if db is None else db), n_t, n_b, n, n_in, st, sb, reverse,
                 need_x, need_h0, need_wih, need_w, need_b)
    else:
        backward_loop(step_backward, dout, dhn, dcn, x, w_ih, w_hh, c0, act, cs, tcs, hprev, dg,
                      dx, dh0, dc0, dw_ih, dw, db, batch_first, reverse, need_x, need_h0,
                      need_wih, need_w, need_b)
    return dx, dh0, dc0, dw_ih, dw, db
