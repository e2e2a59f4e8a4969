"""Thin SVD of a batch of real matrices by one-sided Jacobi rotations (Hestenes), in float64.

For an (m, n) matrix A with m >= n the columns of W = A are rotated pairwise until every
pair is orthogonal (|w_p . w_q| <= tol |w_p| |w_q|) or ``max_sweeps`` sweeps have run; the
same rotations applied to V = I give A V = W, so sigma_j = |w_j|, u_j = w_j / sigma_j. A wide
matrix is done through its transpose (A^T = V S U^T). Singular values come out descending.
Columns of U for (numerically) zero singular values are completed to an orthonormal set,
first from the matching column of V (so a symmetric positive semidefinite A gets U = V, as
LAPACK gives), then from the unit vectors. The matrix is scaled by its largest |entry| first,
so squares neither overflow nor underflow.
"""

import math

import numpy as np
from numba import prange

from numgrad.kernels._jit import jit

_EPS = 2.220446049250313e-16


@jit
def _jacobi(w, v, m, n, tol, max_sweeps):
    """Rotate the n columns of w (m, n) until pairwise orthogonal; v (n, n) takes the same
    rotations. Returns the number of sweeps run."""
    sweeps = 0
    for _ in range(max_sweeps):
        sweeps += 1
        rotated = False
        for p in range(n - 1):
            for q in range(p + 1, n):
                alpha = 0.0
                beta = 0.0
                gamma = 0.0
                for i in range(m):
                    a = w[i, p]
                    b = w[i, q]
                    alpha += a * a
                    beta += b * b
                    gamma += a * b
                if gamma == 0.0 or abs(gamma) <= tol * math.sqrt(alpha) * math.sqrt(beta):
                    continue
                rotated = True
                # t = tan(theta) is the smaller root of t^2 + 2 zeta t - 1 = 0
                zeta = (beta - alpha) / (2.0 * gamma)
                if abs(zeta) > 1e150:
                    t = 0.5 / zeta
                else:
                    t = 1.0 / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                    if zeta < 0.0:
                        t = -t
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t
                for i in range(m):
                    a = w[i, p]
                    b = w[i, q]
                    w[i, p] = c * a - s * b
                    w[i, q] = s * a + c * b
                for i in range(n):
                    a = v[i, p]
                    b = v[i, q]
                    v[i, p] = c * a - s * b
                    v[i, q] = s * a + c * b
        if not rotated:
            break
    return sweeps


@jit
def _complete(u, j, cand, m):
    """Make u[:, j] a unit vector orthogonal to u[:, :j], from ``cand`` if it has enough
    left after projection, else from the first unit vector that does."""
    col = np.empty(m)
    for attempt in range(m + 1):
        if attempt == 0:
            for i in range(m):
                col[i] = cand[i]
        else:
            for i in range(m):
                col[i] = 0.0
            col[attempt - 1] = 1.0
        for _ in range(2):  # Gram-Schmidt twice
            for k in range(j):
                d = 0.0
                for i in range(m):
                    d += u[i, k] * col[i]
                for i in range(m):
                    col[i] -= d * u[i, k]
        nrm = 0.0
        for i in range(m):
            nrm += col[i] * col[i]
        nrm = math.sqrt(nrm)
        if nrm > 0.5:
            for i in range(m):
                u[i, j] = col[i] / nrm
            return


@jit
def _svd_tall(a, transpose, u_out, s_out, v_out, tol, max_sweeps):
    """Thin SVD of a (or a^T when ``transpose``), an (m, n) problem with m >= n; writes u
    (m, n), s (n,), v (n, n) of that problem. Returns the sweeps run."""
    if transpose:
        m, n = a.shape[1], a.shape[0]
    else:
        m, n = a.shape[0], a.shape[1]
    w = np.empty((m, n))
    scale = 0.0
    for i in range(m):
        for j in range(n):
            x = float(a[j, i]) if transpose else float(a[i, j])
            w[i, j] = x
            if abs(x) > scale or x != x:
                scale = abs(x)
    if scale > 0.0 and scale != math.inf and scale == scale:
        for i in range(m):
            for j in range(n):
                w[i, j] /= scale
    else:
        scale = 1.0
    v = np.zeros((n, n))
    for i in range(n):
        v[i, i] = 1.0
    sweeps = _jacobi(w, v, m, n, tol, max_sweeps)
    sig = np.empty(n)
    for j in range(n):
        acc = 0.0
        for i in range(m):
            acc += w[i, j] * w[i, j]
        sig[j] = math.sqrt(acc)
    order = np.argsort(-sig, kind="mergesort")
    smax = sig[order[0]] if n else 0.0
    small = smax * _EPS * max(m, 1)
    cand = np.zeros(m)
    for jj in range(n):
        j = order[jj]
        sj = sig[j]
        s_out[jj] = sj * scale
        for i in range(n):
            v_out[i, jj] = v[i, j]
        if sj > small and sj > 0.0:
            for i in range(m):
                u_out[i, jj] = w[i, j] / sj
        else:
            for i in range(m):
                cand[i] = v[i, j] if i < n else 0.0
            _complete(u_out, jj, cand, m)
    return sweeps


@jit(parallel=True)
def _svd_batch(a, u, s, v, tol, max_sweeps):
    b, m, n = a.shape
    wide = m < n
    for k in prange(b):
        if wide:
            # a^T = v' s u'^T: the tall problem's U is a's V and its V is a's U
            _svd_tall(a[k], True, v[k], s[k], u[k], tol, max_sweeps)
        else:
            _svd_tall(a[k], False, u[k], s[k], v[k], tol, max_sweeps)


def svd_batch(a, tol=None, max_sweeps=60):
    """Thin SVD of each matrix of ``a`` (B, m, n), float32 or float64: (u (B, m, k),
    s (B, k) descending, v (B, n, k)) in float64 with k = min(m, n), a[b] = u diag(s) v^T."""
    b, m, n = a.shape
    k = min(m, n)
    u = np.zeros((b, m, k))
    s = np.zeros((b, k))
    v = np.zeros((b, n, k))
    if b and k:
        if tol is None:
            tol = _EPS * max(m, n)
        _svd_batch(np.ascontiguousarray(a), u, s, v, float(tol), int(max_sweeps))
    return u, s, v
