"""Window kernels written once for both devices: each function computes one output of a 2-D
pooling from its window (or routes one output's gradient back), or a run of im2col's
columns (or col2im's pixels, its adjoint), over (N, C, H, W) planes given as a flat buffer,
the plane's element offset and its row and column strides.
``numgrad.kernels.cpu.windows`` (``cpu.nn`` for im2col/col2im) loops over the outputs
(``prange`` over the batch), ``numgrad.kernels.cuda.windows`` (``cuda.nn``) runs one thread
per output.

``add_at(a, i, v)`` (a[i] += v; atomic on the GPU) is bound per device. No Numba import
here.
"""

import math


def add_at(a, i, v):
    """a[i] += v (the GPU's is atomic: several outputs may route to one input)."""
    raise NotImplementedError


def at(i):
    """Index ``i``, known to lie inside its array (the CPU's is unsigned: no negative-index
    wraparound per element, so the im2col/col2im loops vectorize)."""
    return i


def max_window(x, xo, sy, sx, h, w, oy, ox, kh, kw, sh, sw, ph, pw, dh, dw):
    """The window's maximum and its flat index in the plane (iy * w + ix), as in PyTorch: the
    last nan wins, the first maximum wins ties; positions outside the plane (padding) take
    no part."""
    best = -math.inf
    bi = -1
    for i in range(kh):
        iy = oy * sh - ph + i * dh
        if iy < 0 or iy >= h:
            continue
        for j in range(kw):
            ix = ox * sw - pw + j * dw
            if ix < 0 or ix >= w:
                continue
            v = x[xo + iy * sy + ix * sx]
            if v > best or v != v or bi < 0:
                best = v
                bi = iy * w + ix
    return best, bi


def avg_bounds(oy, ox, kh, kw, sh, sw, ph, pw, h, w, count_include_pad, divisor):
    """The window's rows [hs, he) and columns [ws, we) inside the plane, and its divisor by
    PyTorch's rules (an override, or the window's size with or without the padding)."""
    hs = oy * sh - ph
    ws = ox * sw - pw
    he = min(hs + kh, h + ph)
    we = min(ws + kw, w + pw)
    pool = (he - hs) * (we - ws)
    hs2 = max(hs, 0)
    ws2 = max(ws, 0)
    he2 = min(he, h)
    we2 = min(we, w)
    if divisor != 0:  # an override, of either sign
        d = divisor
    elif count_include_pad:
        d = pool
    else:
        d = (he2 - hs2) * (we2 - ws2)
    return hs2, ws2, he2, we2, d


def avg_window(x, xo, sy, sx, h, w, oy, ox, kh, kw, sh, sw, ph, pw, count_include_pad, divisor,
               acc):
    """The window's mean (the sum kept in ``acc``'s type)."""
    hs, ws, he, we, d = avg_bounds(oy, ox, kh, kw, sh, sw, ph, pw, h, w, count_include_pad,
                                   divisor)
    for iy in range(hs, he):
        for ix in range(ws, we):
            acc += x[xo + iy * sy + ix * sx]
    return acc / d


# d/dx avg_pool: every input of a window receives g / divisor
def avg_rows_grad(g, go, sy, sx, oh, ow, iy0, iy1, gx, gxo, gxsy, gxsx, h, w, kh, kw, sh, sw,
                  ph, pw, count_include_pad, divisor):
    """Input rows [iy0, iy1) of a plane's gradient (row iy0 at ``gxo``): the windows that
    cover them (yo*sh - ph <= iy < yo*sh - ph + kh) in raster order, each adding its
    g / divisor to the pixels of the band it covers, rounded to gx's type after every
    addition: the scatter PyTorch's CPU kernel makes (the CPU passes a whole plane, the GPU
    one row per thread: no two threads share an element, no atomics, the same sums)."""
    for iy in range(iy0, iy1):
        for ix in range(w):
            gx[gxo + (iy - iy0) * gxsy + ix * gxsx] = 0
    y_hi = min((iy1 - 1 + ph) // sh, oh - 1)
    ty = iy0 + ph - kh + 1
    y_lo = 0 if ty <= 0 else (ty + sh - 1) // sh
    for yo in range(y_lo, y_hi + 1):
        for xo in range(ow):
            hs, ws, he, we, d = avg_bounds(yo, xo, kh, kw, sh, sw, ph, pw, h, w,
                                           count_include_pad, divisor)
            v = g[go + yo * sy + xo * sx] / d
            for iy in range(max(hs, iy0), min(he, iy1)):
                for ix in range(ws, we):
                    gx[gxo + (iy - iy0) * gxsy + ix * gxsx] += v


# d/dx max_pool = g routed to the window's argmax: gx.flat[k] += g in a C-contiguous plane
def max_unpool_one(gv, k, gx, gxo):
    add_at(gx, gxo + k, gv)



def span(a, b, s, n):
    """The integers q in [0, n) with a <= q * s <= b (s > 0): (lo, hi), empty when hi < lo."""
    lo = 0 if a <= 0 else (a + s - 1) // s
    hi = min(b // s, n - 1) if b >= 0 else -1
    return lo, hi


def im2col_rows(x, xo, sy, sx, h, w, i, j, y0, y1, k0, k1, sh, sw, ph, pw, dh, dw, ow, cols, co,
                cs):
    """Entries [k0, k1) of output rows [y0, y1) of im2col's column row for kernel position
    (i, j) of a plane: cols[co + (y * ow + k) * cs] = x[xo + iy * sy + ix * sx] at
    iy = y * sh - ph + i * dh, ix = k * sw - pw + j * dw inside the plane, else 0."""
    for y in range(y0, y1):
        iy = y * sh - ph + i * dh
        r = co + y * ow * cs
        if iy < 0 or iy >= h:
            for k in range(k0, k1):
                cols[at(r + k * cs)] = 0
            continue
        src = xo + iy * sy
        for k in range(k0, k1):
            ix = k * sw - pw + j * dw
            if ix >= 0 and ix < w:
                cols[at(r + k * cs)] = x[at(src + ix * sx)]
            else:
                cols[at(r + k * cs)] = 0


# d/dcols <x, col2im(cols)> = im2col: each pixel sums the column entries that copied it
def col2im_pixels(cols, co, cr, cl, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, iy0, iy1, ix0, ix1,
                  x, xo, sy, sx):
    """Pixels [iy0, iy1) x [ix0, ix1) of one plane of col2im (the adjoint of im2col): each
    the sum of the column entries that copied it, added in (i, j) order into a zero in x's
    type (the CPU passes whole planes, the GPU one pixel per thread: the same sums, no
    atomics). The plane's column rows (i * kw + j) start at ``co``, ``cr`` apart, entries
    ``cl`` apart; pixel (iy, ix) is x[xo + iy * sy + ix * sx]."""
    for iy in range(iy0, iy1):
        for ix in range(ix0, ix1):
            x[at(xo + iy * sy + ix * sx)] = 0
    for i in range(kh):
        # the output rows yo whose iy = yo*sh - ph + i*dh lies in [iy0, iy1)
        ylo, yhi = span(iy0 + ph - i * dh, iy1 - 1 + ph - i * dh, sh, oh)
        for j in range(kw):
            xlo, xhi = span(ix0 + pw - j * dw, ix1 - 1 + pw - j * dw, sw, ow)
            for yo in range(ylo, yhi + 1):
                src = co + (i * kw + j) * cr + yo * ow * cl
                dst = xo + (yo * sh - ph + i * dh) * sy + (j * dw - pw) * sx
                for xc in range(xlo, xhi + 1):  # pixel ix = xc*sw - pw + j*dw
                    x[at(dst + xc * sw * sx)] += cols[at(src + xc * cl)]
