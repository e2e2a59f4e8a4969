"""The small dense factorizations the multivariate normal needs, as compositions of numgrad
ops (so their gradients come from the ops' own backward rules): Cholesky, lower-triangular
solves and inverses, by rows and columns. O(n^3) op calls: meant for event sizes of a few
dozen at most."""

import numpy as np

import numgrad


class _LinAlgError(RuntimeError):
    """PyTorch's ``torch.linalg.LinAlgError`` (its class is named ``_LinAlgError``)."""


def _entries(a):
    """Entry (i, j) of the last two dims of ``a`` as tensors of its batch shape."""
    n = a.shape[-1]
    return [[a[..., i, j] for j in range(n)] for i in range(n)]


def _pivots(a):
    """The Cholesky factor's entries (lists of tensors) and its squared diagonal pivots."""
    entry = _entries(a)
    n = len(entry)
    low = [[None] * n for _ in range(n)]
    pivots = []
    for j in range(n):
        # L_jj^2 = A_jj - sum_k<j L_jk^2
        d = entry[j][j]
        for k in range(j):
            d = d - low[j][k] * low[j][k]
        pivots.append(d)
        low[j][j] = d.sqrt()
        # L_ij = (A_ij - sum_k<j L_ik L_jk) / L_jj for i > j
        for i in range(j + 1, n):
            s = entry[i][j]
            for k in range(j):
                s = s - low[i][k] * low[j][k]
            low[i][j] = s / low[j][j]
    return low, pivots


def _assemble(low, like):
    """The lower-triangular matrix with the given entries (zeros above the diagonal)."""
    n = len(low)
    zero = numgrad.zeros(like.shape[:-2], dtype=like.dtype, device=like.device)
    rows = [numgrad.stack([low[i][j] if j <= i else zero for j in range(n)], -1)
            for i in range(n)]
    return numgrad.stack(rows, -2)


def cholesky_succeeds(a):
    """Bool tensor of ``a``'s batch shape: whether each matrix has a Cholesky factor."""
    with numgrad.no_grad():
        _, pivots = _pivots(a.detach())
        ok = numgrad.ones(a.shape[:-2], dtype=numgrad.bool, device=a.device)
        for d in pivots:
            ok = ok & (d > 0)
    return ok


def cholesky(a):
    """The lower Cholesky factor L of symmetric positive-definite ``a`` (A = L L^T), with
    PyTorch's error for a matrix that has none."""
    if a.dim() < 2:
        raise RuntimeError("linalg.cholesky: The input tensor A must have at least 2 "
                           "dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError("linalg.cholesky: A must be batches of square matrices, but they "
                           f"are {a.shape[-2]} by {a.shape[-1]} matrices")
    with numgrad.no_grad():
        symmetric = bool((a == a.mT).all())
    if symmetric:
        # reads only the lower triangle, but the gradient is PyTorch's symmetric one:
        # d/dA_ij = d/dA_ji = (d/dL-chain at (i, j)) / 2 for i != j
        a = 0.5 * (a + a.mT)
    low, pivots = _pivots(a)
    with numgrad.no_grad():
        bad = np.stack([(~(d.detach() > 0)).cpu().numpy().reshape(-1) for d in pivots], -1)
    if bad.any():
        batch, order = (int(v) for v in np.argwhere(bad)[0])
        where = f"(Batch element {batch}): " if a.dim() > 2 else ""
        raise _LinAlgError(
            f"linalg.cholesky: {where}The factorization could not be completed because the "
            f"input is not positive-definite (the leading minor of order {order + 1} is not "
            "positive-definite).")
    return _assemble(low, a)


def solve_lower(low, b):
    """y with L y = b for lower-triangular L (..., n, n) and vectors b (..., n), broadcast
    over the batch dims, by forward substitution."""
    n = low.shape[-1]
    entry = _entries(low)
    ys = []
    for i in range(n):
        # y_i = (b_i - sum_j<i L_ij y_j) / L_ii
        s = b[..., i]
        for j in range(i):
            s = s - entry[i][j] * ys[j]
        ys.append(s / entry[i][i])
    return numgrad.stack(ys, -1)


def inverse_lower(low):
    """L^-1 of lower-triangular L: column k solves L x = e_k."""
    n = low.shape[-1]
    eye = numgrad.eye(n, dtype=low.dtype, device=low.device)
    columns = [solve_lower(low, eye[k]) for k in range(n)]
    return numgrad.stack(columns, -1)
