"""``cdist`` row kernels written once for both devices: each function handles one row i of
x1 (its distances to every row of x2, or its gradient), on flat C-contiguous buffers with
element offsets. ``mode`` picks the norm: 0 (count of differing coordinates), 1, 2, 3 (inf)
or 4 (any other p). Sums accumulate in float64. ``numgrad.kernels.cpu.distance`` compiles
them into ``prange`` loops over rows, ``numgrad.kernels.cuda.distance`` into one thread per
row. No Numba import here."""

import math


def cdist_row(x1, x1o, x2, x2o, out, oo, r, m, p, mode):
    """out[j] = ||x1[i] - x2[j]||_p for the r rows j of x2 (m coordinates each)."""
    for j in range(r):
        acc = 0.0
        for k in range(m):
            d = abs(float(x1[x1o + k]) - float(x2[x2o + j * m + k]))
            if mode == 0:
                if d != 0:
                    acc += 1.0
            elif mode == 1:
                acc += d
            elif mode == 2:
                acc += d * d
            elif mode == 3:
                if d > acc or d != d:
                    acc = d
            else:
                acc += d ** p
        if mode == 2:
            acc = math.sqrt(acc)
        elif mode == 4:
            acc = acc ** (1.0 / p)
        out[oo + j] = acc


def cdist_backward_row(g, go, x1, x1o, x2, x2o, dist, do, out, oo, r, m, p, mode):
    """out[k] = sum_j g[j] d||x1[i] - x2[j]||_p / dx1[i, k] for one row i of x1, from the
    distances ``dist`` of that row; 0 where a distance is 0 (the subgradient PyTorch takes)."""
    for k in range(m):
        acc = 0.0
        if mode != 0:
            for j in range(r):
                dj = float(dist[do + j])
                gj = float(g[go + j])
                diff = float(x1[x1o + k]) - float(x2[x2o + j * m + k])
                sgn = 1.0 if diff > 0 else (-1.0 if diff < 0 else 0.0)
                ad = abs(diff)
                if mode == 1:
                    acc += gj * sgn
                elif dj == 0:
                    continue
                elif mode == 2:
                    acc += gj * diff / dj
                elif mode == 3:
                    if ad == dj:
                        acc += gj * sgn
                elif p < 1 and diff == 0:
                    continue
                elif p < 2:
                    acc += sgn * ad ** (p - 1) * gj / dj ** (p - 1)
                else:
                    acc += diff * ad ** (p - 2) * gj / dj ** (p - 1)
        out[oo + k] = acc
