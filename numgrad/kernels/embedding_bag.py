"""``embedding_bag`` kernels written once for both devices, on flat C-contiguous buffers with
element offsets: the forward handles one bag (its ``dim`` outputs), the weight gradient one
column of the weight (so no two work items add into the same element), the
per-sample-weight gradient one position of the input. ``mode`` is 0 (sum), 1 (mean) or 2
(max); a position whose index equals ``pad`` (``-1``: none) is left out of its bag and of
its count. ``numgrad.kernels.cpu.embedding_bag`` compiles them into ``prange`` loops,
``numgrad.kernels.cuda.embedding_bag`` into one thread per work item. No Numba import
here."""


def bag_forward(w, wo, idx, io, psw, po, starts, ends, out, oo, arg, ao, cnt, co, b, dim, pad,
                mode, has_psw):
    """out[b] = sum / mean / max of the rows w[idx[i]] over the bag's non-padding positions i
    (times psw[i] when ``has_psw``); arg[b, d] is the row that gave the max (-1: empty bag),
    cnt[b] the number of non-padding positions."""
    o = oo + b * dim
    a = ao + b * dim
    for d in range(dim):
        out[o + d] = 0
        arg[a + d] = -1
    n = 0
    for i in range(starts[b], ends[b]):
        r = idx[io + i]
        if r == pad:
            continue
        n += 1
        base = wo + r * dim
        if mode == 2:
            for d in range(dim):
                v = w[base + d]
                if arg[a + d] < 0 or v > out[o + d]:
                    out[o + d] = v
                    arg[a + d] = r
        elif has_psw:
            s = psw[po + i]
            for d in range(dim):
                out[o + d] += w[base + d] * s
        else:
            for d in range(dim):
                out[o + d] += w[base + d]
    if mode == 1 and n > 0:
        for d in range(dim):
            out[o + d] /= n
    cnt[co + b] = n


def bag_weight_grad(g, go, idx, io, psw, po, starts, ends, arg, ao, cnt, co, gw, gwo, d, bags,
                    dim, pad, mode, has_psw):
    """Column d of the weight's gradient gw (zeroed by the caller): each bag's gradient g[b, d]
    goes to the row that gave its max, or to every non-padding row of the bag (divided by
    the count for the mean, times psw[i] when ``has_psw``)."""
    for b in range(bags):
        gv = g[go + b * dim + d]
        if mode == 2:
            r = arg[ao + b * dim + d]
            if r >= 0:
                gw[gwo + r * dim + d] += gv
            continue
        n = cnt[co + b]
        if n == 0:
            continue
        if mode == 1:
            gv = gv / n
        for i in range(starts[b], ends[b]):
            r = idx[io + i]
            if r == pad:
                continue
            if has_psw:
                gw[gwo + r * dim + d] += gv * psw[po + i]
            else:
                gw[gwo + r * dim + d] += gv


def bag_psw_grad(g, go, w, wo, idx, io, pos_bag, gp, gpo, i, dim, pad):
    """gp[i] = <g[bag of i], w[idx[i]]>; 0 for a padding position or one in no bag."""
    b = pos_bag[i]
    r = idx[io + i]
    gp[gpo + i] = 0  # the output's memory is uninitialised: never read before written
    if b >= 0 and r != pad:
        for d in range(dim):
            gp[gpo + i] += g[go + b * dim + d] * w[wo + r * dim + d]
