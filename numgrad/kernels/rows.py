"""Row kernels written once for both devices: each function works on one row, addressed as a
flat buffer, an element offset and the stride between the row's n elements (as the line
kernels of ``numgrad.kernels.lines``).

A row is served by a team of lanes: lane ``lane0(tm)`` takes the elements lane0, lane0 +
lanes(tm), ... and the team combines its partial results with ``allsum``/``allmax``/``anyof``
(``allext``/``allbest`` for the reductions).
``numgrad.kernels.cpu.rows`` binds a team of one (lane 0 of 1, the combines return their
argument: plain loops over the row that vectorize), one row per ``prange`` iteration;
``numgrad.kernels.cuda.rows`` binds the threads of a block segment (shared-memory trees).
A team's lanes all run every combine (no early return): on the GPU they synchronize there.
``lead(tm)`` is the one lane that writes a row's scalar results.

The names below the row functions (``lane0`` ... ``fexp``, ``qnan``) are the team interface:
stubs here, replaced in each device's copy of these functions. No Numba import here.
"""

import math


def lane0(tm):
    """The first element this lane takes."""
    raise NotImplementedError


def lanes(tm):
    """The step between a lane's elements (the team's size)."""
    raise NotImplementedError


def lead(tm):
    """Whether this lane writes the row's scalar results."""
    raise NotImplementedError


def allsum(tm, v):
    """The sum of ``v`` over the team's lanes."""
    raise NotImplementedError


def allmax(tm, v):
    """The largest ``v`` over the team's lanes; nan wins."""
    raise NotImplementedError


def anyof(tm, flag):
    """Whether ``flag`` holds on any lane."""
    raise NotImplementedError


def allext(tm, v, big):
    """The largest (``big``) or smallest ``v`` over the team's lanes; nan wins."""
    raise NotImplementedError


def allbest(tm, x, xo, xs, best, largest):
    """The best of the lanes' candidate indices ``best`` (-1: none) along the row: nan beats
    numbers, then the larger (``largest``) or smaller value, ties the lower index."""
    raise NotImplementedError


def fexp(v):
    """e^v (the CPU's vectorizable exp, the GPU's libdevice one)."""
    raise NotImplementedError


def qnan(x):
    """A quiet nan in the type the device computes ``x``'s row maxima in."""
    raise NotImplementedError


def shift(x, xo, xs, out, oo, os, n, m, log_s, tm):
    """out = (x - m) - log_s: log_softmax's last step. The CPU compiles it apart without
    fastmath, which would reassociate it into x - (m + log_s), the inexact form."""
    for c in range(lane0(tm), n, lanes(tm)):
        out[oo + c * os] = (x[xo + c * xs] - m) - log_s


# ----------------------------------------------------------------------------------------
# reductions of a row (one dim of an (outer, n, inner) view) to one value
# ----------------------------------------------------------------------------------------


def sum_row(x, xo, xs, n, out, oo, scale, acc, tm):
    """out = sum x * scale: summed in ``acc``'s type (float64, int64), rounded to the output
    dtype (the store) before scaling, as a mean is sum / n in the output dtype."""
    s = acc
    for c in range(lane0(tm), n, lanes(tm)):
        s += x[xo + c * xs]
    s = allsum(tm, s)
    if lead(tm):
        out[oo] = s
        out[oo] = out[oo] * scale


def extreme_row(x, xo, xs, n, largest, vals, vo, idx, io, want_idx, tm):
    """vals = the row's max (``largest``) or min and, if ``want_idx``, idx = its first index;
    nan wins (the first nan: a lane stops at its first). x[xo] must exist."""
    c0 = lane0(tm)
    best = -1
    bv = x[xo]
    if c0 < n:
        best = c0
        bv = x[xo + c0 * xs]
        if bv == bv:
            for c in range(c0 + lanes(tm), n, lanes(tm)):  # a for loop with a break: 8x a while
                v = x[xo + c * xs]
                if v != v:
                    best = c
                    bv = v
                    break
                if v > bv if largest else v < bv:
                    best = c
                    bv = v
    best = allbest(tm, x, xo, xs, best, largest)
    if lead(tm):
        vals[vo] = x[xo + best * xs]
        if want_idx:
            idx[io] = best


# norm kinds: the special cases of p
P2, P1, P0, PGEN, PINF, PNEGINF = 0, 1, 2, 3, 4, 5


def norm_row(x, xo, xs, n, kind, p, out, oo, tm):
    """out = (sum |x|^p)^(1/p) in float64, p = 2, 1, 0, +-inf special-cased (``kind``, a
    loop each); the inf norms of an empty row are 0."""
    acc = 0.0
    if kind >= PINF:
        big = kind == PINF
        m = 0.0 if big else math.inf
        for c in range(lane0(tm), n, lanes(tm)):
            v = abs(x[xo + c * xs])
            if m == m and (v != v or (v > m if big else v < m)):
                m = v
        res = allext(tm, m, big)
        if n == 0:
            res = 0.0
    elif kind == P2:
        for c in range(lane0(tm), n, lanes(tm)):
            v = x[xo + c * xs]
            acc += v * v
        res = math.sqrt(allsum(tm, acc))
    elif kind == P1:
        for c in range(lane0(tm), n, lanes(tm)):
            acc += abs(x[xo + c * xs])
        res = allsum(tm, acc)
    elif kind == P0:
        for c in range(lane0(tm), n, lanes(tm)):
            acc += 1.0 if x[xo + c * xs] != 0 else 0.0
        res = allsum(tm, acc)
    else:
        for c in range(lane0(tm), n, lanes(tm)):
            acc += abs(x[xo + c * xs]) ** p
        res = allsum(tm, acc) ** (1.0 / p)
    if lead(tm):
        out[oo] = res


# ----------------------------------------------------------------------------------------
# the softmax family
# ----------------------------------------------------------------------------------------


def row_max(x, xo, xs, n, tm):
    """The largest value of the row, nan if it holds one (x[xo] must exist). Eight running
    maxima per lane so the comparisons overlap (2.6x one running max on 1000-wide CPU rows);
    the nan check is a flag loop apart, which vectorizes. Which of -0 and +0 comes out can
    differ from a single running max; softmax gives the same result for either (e^(x - m)
    is 1 for both, and log_softmax's x - m - log s has log s >= log 2 when a row holds
    both zeros)."""
    st = lanes(tm)
    c = lane0(tm)
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = x[xo]
    while c + 7 * st < n:
        v0, v1 = x[xo + c * xs], x[xo + (c + st) * xs]
        v2, v3 = x[xo + (c + 2 * st) * xs], x[xo + (c + 3 * st) * xs]
        v4, v5 = x[xo + (c + 4 * st) * xs], x[xo + (c + 5 * st) * xs]
        v6, v7 = x[xo + (c + 6 * st) * xs], x[xo + (c + 7 * st) * xs]
        m0 = v0 if v0 > m0 else m0
        m1 = v1 if v1 > m1 else m1
        m2 = v2 if v2 > m2 else m2
        m3 = v3 if v3 > m3 else m3
        m4 = v4 if v4 > m4 else m4
        m5 = v5 if v5 > m5 else m5
        m6 = v6 if v6 > m6 else m6
        m7 = v7 if v7 > m7 else m7
        c += 8 * st
    while c < n:
        v = x[xo + c * xs]
        m0 = v if v > m0 else m0
        c += st
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    m = allmax(tm, m4 if m4 > m0 else m0)
    nan = False
    for c in range(lane0(tm), n, lanes(tm)):  # a flag: this loop vectorizes
        nan |= x[xo + c * xs] != x[xo + c * xs]
    if anyof(tm, nan):
        m = qnan(m)
    return m


def softmax_row(x, xo, xs, out, oo, os, n, log, acc, tm):
    """softmax (or log_softmax) of a row: e^(x - m) / sum e^(x - m), m = max x, the sum kept
    in ``acc``'s type. log_softmax is (x - m) - log(sum): subtracting m first keeps it exact
    when |m| dwarfs log(sum) (x - (m + log(sum)) rounds m + log(sum) back to m: logits of
    1e20 gave 0)."""
    m = row_max(x, xo, xs, n, tm)
    s = acc
    if log:
        for c in range(lane0(tm), n, lanes(tm)):
            s += fexp(x[xo + c * xs] - m)
        shift(x, xo, xs, out, oo, os, n, m, math.log(allsum(tm, s)), tm)
    else:
        # e^(x - m) is kept in out and scaled there: one exp per element instead of two
        # (the CPU's e has out's dtype, so the stored value is exact and the result the
        # same; the GPU's float64 e is rounded to out's dtype before the scaling)
        for c in range(lane0(tm), n, lanes(tm)):
            e = fexp(x[xo + c * xs] - m)
            out[oo + c * os] = e
            s += e
        inv = 1.0 / allsum(tm, s)
        for c in range(lane0(tm), n, lanes(tm)):
            out[oo + c * os] = out[oo + c * os] * inv


# d softmax: gx = y (g - sum g y)
def softmax_bwd_row(g, go, gs, y, yo, ys, out, oo, os, n, acc, tm):
    s = acc
    for c in range(lane0(tm), n, lanes(tm)):
        s += g[go + c * gs] * y[yo + c * ys]
    s = allsum(tm, s)
    for c in range(lane0(tm), n, lanes(tm)):
        out[oo + c * os] = y[yo + c * ys] * (g[go + c * gs] - s)


# d log_softmax: gx = g - e^y sum g
def log_softmax_bwd_row(g, go, gs, y, yo, ys, out, oo, os, n, acc, tm):
    s = acc
    for c in range(lane0(tm), n, lanes(tm)):
        s += g[go + c * gs]
    s = allsum(tm, s)
    for c in range(lane0(tm), n, lanes(tm)):
        out[oo + c * os] = g[go + c * gs] - fexp(y[yo + c * ys]) * s


def logsumexp_row(x, xo, xs, n, out, oo, acc, tm):
    """out = m + log sum e^(x - m), m = max x (inf-safe; any nan gives nan, as in PyTorch);
    an empty row gives -inf, the log of an empty sum."""
    m = row_max(x, xo, xs, n, tm)  # x[xo] exists even for an empty row (see the callers)
    finite = m == m and m != math.inf and m != -math.inf
    s = acc
    for c in range(lane0(tm), n if finite else 0, lanes(tm)):
        s += fexp(x[xo + c * xs] - m)
    s = allsum(tm, s)
    if lead(tm):
        if n == 0:
            out[oo] = -math.inf
        elif finite:
            out[oo] = m + math.log(s)
        else:
            out[oo] = m


# ----------------------------------------------------------------------------------------
# layer norm: per row of x (M, K)
# ----------------------------------------------------------------------------------------


def layer_norm_row(x, xo, xs, gam, gmo, gms, bet, bo, bs, eps, n, out, oo, os, mean, mo, rstd,
                   ro, acc, tm):
    """The row's mean and 1/sqrt(var + eps) (two passes, in ``acc``'s type: float64), and
    the normalized, affine output."""
    s = acc
    for k in range(lane0(tm), n, lanes(tm)):
        s += x[xo + k * xs]
    mu = allsum(tm, s) / n
    ss = acc
    for k in range(lane0(tm), n, lanes(tm)):
        d = x[xo + k * xs] - mu
        ss += d * d
    inv = 1.0 / math.sqrt(allsum(tm, ss) / n + eps)
    if lead(tm):
        mean[mo] = mu
        rstd[ro] = inv
    for k in range(lane0(tm), n, lanes(tm)):
        out[oo + k * os] = (x[xo + k * xs] - mu) * inv * gam[gmo + k * gms] + bet[bo + k * bs]


# d/dx layer_norm = rstd (g gamma - mean(g gamma) - xhat mean(g gamma xhat)), per row
# (rstd gg - rstd mean(gg) - (x - mean) rstd^2 mean(gg xhat), with rstd and the means folded
# into two per-row constants: two float64 steps per element)
def layer_norm_bwd_row(g, go, gs, x, xo, xs, mu, rv, gam, gmo, gms, n, gx, gxo, gxs, acc, tm):
    s1 = acc
    s2 = acc
    for k in range(lane0(tm), n, lanes(tm)):
        gg = g[go + k * gs] * gam[gmo + k * gms]
        s1 += gg
        s2 += gg * (x[xo + k * xs] - mu)
    m1 = allsum(tm, s1) / n  # mean(gg)
    b = rv * rv * rv * allsum(tm, s2) / n  # rstd^2 mean(gg xhat)
    c = rv * m1
    for k in range(lane0(tm), n, lanes(tm)):
        gx[gxo + k * gxs] = rv * (g[go + k * gs] * gam[gmo + k * gms]) - (
            (x[xo + k * xs] - mu) * b + c)


# d gamma = sum_rows g xhat, d beta = sum_rows g (per feature: a sum down the columns)
def layer_norm_params_tile(g, go, gs0, gs1, x, xo, xs0, xs1, mean, mo, ms, rstd, ro, rs, r0, r1,
                           rstep, k0, k1, acc_g, acc_b, ao):
    """Add rows r0, r0 + rstep, ... < r1 of features [k0, k1) to acc_g[ao + k] (g xhat) and
    acc_b[ao + k] (g), each feature's rows in order. Not a team function: the CPU passes
    every row and feature (the loop over features, unit stride, vectorizes), the GPU one
    feature and every ``rstep``-th row per thread, then sums the threads' partials."""
    for r in range(r0, r1, rstep):
        mu = mean[mo + r * ms]
        rv = rstd[ro + r * rs]
        for k in range(k0, k1):
            gv = g[go + r * gs0 + k * gs1]
            acc_b[ao + k] += gv
            acc_g[ao + k] += gv * (x[xo + r * xs0 + k * xs1] - mu) * rv


# ----------------------------------------------------------------------------------------
# negative log likelihood over class indices: one row of log-probabilities per sample
# ----------------------------------------------------------------------------------------


def nll_row(logp, lo, ls, t, weight, wo, ws, ignore_index, n_c, losses, so, weights, wto):
    """losses = -w[t] logp[t], weights = w[t] (both 0 when t is ignored); whether t is out of
    range (then nothing is written). One lane per row."""
    if t == ignore_index:
        losses[so] = 0
        weights[wto] = 0
        return False
    if t < 0 or t >= n_c:
        return True
    w = weight[wo + t * ws]
    losses[so] = -w * logp[lo + t * ls]
    weights[wto] = w
    return False


# d/dlogp nll = -w gl scale at the target, 0 elsewhere
def nll_bwd_row(gv, t, w, scale, out, oo, os, n_c, tm):
    v = -w * gv * scale
    for c in range(lane0(tm), n_c, lanes(tm)):
        out[oo + c * os] = v if c == t and w != 0 else 0


# ----------------------------------------------------------------------------------------
# batch norm: a channel is a row of m = n_b planes of n_l elements (plane stride s0, element
# stride s2); a lane takes the flat positions lane0, lane0 + lanes, ... in runs: from flat
# position e, the run k, k + lanes, ... < n_l of plane b = e // n_l (k = e - b n_l), then on
# past it (one division per run: a plane per run for a team of one, one element per run
# when planes are shorter than the team)
# ----------------------------------------------------------------------------------------


def _run_end(e, k, n_l, step):
    """The flat position after the run that starts at e (plane position k)."""
    return e + ((n_l - k + step - 1) // step) * step


def batch_norm_stats_row(x, xo, xs0, xs2, n_b, n_l, eps, mean, mo, var, vo, inv, io, acc, tm):
    """Mean, biased variance and 1/sqrt(var + eps) of one channel (two passes, float64)."""
    m = n_b * n_l
    step = lanes(tm)
    s = acc
    e = lane0(tm)
    while e < m:
        b = e // n_l
        k = e - b * n_l
        for j in range(k, n_l, step):
            s += x[xo + b * xs0 + j * xs2]
        e = _run_end(e, k, n_l, step)
    mu = allsum(tm, s) / m
    ss = acc
    e = lane0(tm)
    while e < m:
        b = e // n_l
        k = e - b * n_l
        for j in range(k, n_l, step):
            d = x[xo + b * xs0 + j * xs2] - mu
            ss += d * d
        e = _run_end(e, k, n_l, step)
    ss = allsum(tm, ss)
    if lead(tm):
        mean[mo] = mu
        var[vo] = ss / m
        inv[io] = 1.0 / math.sqrt(ss / m + eps)


def inv_std_row(var, vo, vs, eps, out, oo, os, n, tm):
    """out = 1/sqrt(var + eps) along a row of n channels."""
    for c in range(lane0(tm), n, lanes(tm)):
        out[oo + c * os] = 1.0 / math.sqrt(var[vo + c * vs] + eps)


def running_update_row(run, ro, rs, stat, so, ss, momentum, scale, n, tm):
    """run = (1 - momentum) run + momentum * scale * stat along a row of n channels."""
    for c in range(lane0(tm), n, lanes(tm)):
        j = ro + c * rs
        run[j] = (1.0 - momentum) * run[j] + momentum * scale * stat[so + c * ss]


def batch_norm_apply_row(x, xo, xs0, xs2, n_b, n_l, mu, iv, gm, bt, out, oo, os0, os2, tm):
    """out = (x - mu) * iv * gm + bt over one channel (as x * a + b)."""
    a = iv * gm
    sh = bt - mu * a
    step = lanes(tm)
    e = lane0(tm)
    while e < n_b * n_l:
        b = e // n_l
        k = e - b * n_l
        for j in range(k, n_l, step):
            out[oo + b * os0 + j * os2] = x[xo + b * xs0 + j * xs2] * a + sh
        e = _run_end(e, k, n_l, step)


# d beta = sum g, d gamma = sum g xhat (per channel, over batch and space)
def batch_norm_sums_row(g, go, gs0, gs2, x, xo, xs0, xs2, n_b, n_l, mu, iv, sg, sgo, sx, sxo,
                        acc, tm):
    """sg[sgo] = sum g, sx[sxo] = sum g xhat over one channel (float64)."""
    step = lanes(tm)
    s1 = acc
    s2 = acc
    e = lane0(tm)
    while e < n_b * n_l:
        b = e // n_l
        k = e - b * n_l
        for j in range(k, n_l, step):
            gv = g[go + b * gs0 + j * gs2]
            s1 += gv
            s2 += gv * (x[xo + b * xs0 + j * xs2] - mu)
        e = _run_end(e, k, n_l, step)
    s1 = allsum(tm, s1)
    s2 = allsum(tm, s2)
    if lead(tm):
        sg[sgo] = s1
        sx[sxo] = s2 * iv


# d/dx batch_norm (train) = gamma invstd / M (M g - sum g - xhat sum(g xhat))
def batch_norm_bwd_row(g, go, gs0, gs2, x, xo, xs0, xs2, n_b, n_l, mu, iv, gm, sg, sx, m,
                       training, gx, gxo, gxs0, gxs2, tm):
    """The input gradient over one channel (``gm`` gamma; ``sg``, ``sx``: the channel's sums
    of g and g xhat, ``m`` its element count; gamma invstd g in evaluation). Plane by plane
    (the lane's first position in plane b: (lane0 - b n_l) mod lanes): the runs of the other
    row functions keep the CPU's loop here from vectorizing (4x slower)."""
    a = gm * iv
    step = lanes(tm)
    for b in range(n_b):
        for j in range((lane0(tm) - b * n_l) % step, n_l, step):
            if training:
                xhat = (x[xo + b * xs0 + j * xs2] - mu) * iv
                gx[gxo + b * gxs0 + j * gxs2] = a * (g[go + b * gs0 + j * gs2] - sg / m
                                                     - xhat * sx / m)
            else:
                gx[gxo + b * gxs0 + j * gxs2] = a * g[go + b * gs0 + j * gs2]


# the functions above that each device binds (its copy with the team interface swapped in)
ROW_FUNCTIONS = ("sum_row", "extreme_row", "norm_row", "shift", "row_max", "softmax_row",
                 "softmax_bwd_row", "log_softmax_bwd_row", "logsumexp_row", "layer_norm_row",
                 "layer_norm_bwd_row", "layer_norm_params_tile", "nll_row", "nll_bwd_row",
                 "_run_end", "batch_norm_stats_row", "inv_std_row", "running_update_row",
                 "batch_norm_apply_row", "batch_norm_sums_row", "batch_norm_bwd_row")
