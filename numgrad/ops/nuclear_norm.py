"""``norm(x, p='nuc')``: the nuclear norm, the sum of the singular values of each matrix over
two dims. As in PyTorch the graph is permute (the two dims last) -> singular values
(``LinalgSvdBackward0``, a one-sided Jacobi SVD kernel in ``numgrad.kernels.cpu.svd``) ->
sum over the last dim (``SumBackward1``), then unsqueeze and permute back for keepdim."""

import numpy as np

from numgrad import _dtype
from numgrad.autograd.graph import Node
from numgrad.kernels import LazyKernels
from numgrad.ops._util import _wrap, attach, dtype_of, edge, state

SVD = LazyKernels("svd")


class LinAlgError(RuntimeError):
    """PyTorch's ``torch.linalg.LinAlgError`` (a RuntimeError)."""


class LinalgSvdBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("U", "S", "Vh")

    # d sum(g * s(A)) / dA = U diag(g) V^T  (thin SVD; PyTorch takes the same U, V when rank < k)
    def _backward(self, g):
        if state.enabled:
            raise NotImplementedError(
                "numgrad: the second derivative of singular values (LinalgSvdBackward0 with "
                "create_graph=True) is not implemented")
        import numgrad as ng
        u, v = self._saved
        gu = ng.mul(_wrap(u), ng.unsqueeze(g, -2))
        return (ng.matmul(gu, ng.transpose(_wrap(v), -2, -1)),)


def _singular_values(x):
    """The singular values (descending) of each matrix in the last two dims of ``x``."""
    a = x._data
    if a.__class__ is not np.ndarray:
        raise NotImplementedError(
            "numgrad: the nuclear norm runs on the CPU only; move the tensor there with .cpu()")
    if np.isnan(a).any():
        raise LinAlgError(
            "linalg.svd: The algorithm failed to converge because the input matrix contained "
            "non-finite values.")
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    nb = int(np.prod(batch, dtype=np.int64))
    u, s, v = SVD.svd_batch(a.reshape((nb, m, n)))
    dt = a.dtype
    out = _wrap(s.astype(dt).reshape(batch + (k,)))
    if state.enabled and x._requires_grad:
        saved = (u.astype(dt).reshape(batch + (m, k)), v.astype(dt).reshape(batch + (n, k)))
        attach(out, LinalgSvdBackward0((edge(x),), saved))
    return out


def _check_dtype(input, dtype):
    dt = dtype_of(input)
    if dt._legacy in ("Half", "BFloat16"):
        raise RuntimeError(
            f"linalg.matrix_norm: Low precision dtypes not supported. Got {dt._legacy}")
    if dtype is None:
        return input
    want = _dtype.get(dtype)
    if want._kind != 2:
        raise RuntimeError(
            "linalg.matrix_norm: dtype should be floating point or complex, but got "
            f"{want._legacy}")
    if _dtype.promote_types(dt, want) is not want:
        raise RuntimeError(
            f"linalg.matrix_norm: the dtype of the input ({dt._legacy}) should be convertible "
            f"without narrowing to the specified dtype ({want._legacy})")
    from numgrad.ops.shape import to_dtype
    return input if want is dt else to_dtype(input, want)


def nuclear_norm(input, dims, keepdim=False, dtype=None):
    """Sum of singular values over the wrapped, distinct ``dims`` (a, b) of ``input``."""
    import numgrad as ng
    x = _check_dtype(input, dtype)
    a, b = dims
    nd = x.ndim
    order = [d for d in range(nd) if d not in (a, b)] + [a, b]
    s = _singular_values(ng.permute(x, *order))
    if not keepdim:
        return ng.sum(s, -1)
    r = ng.unsqueeze(ng.sum(s, -1, keepdim=True), -1)
    back = [0] * nd
    for i, d in enumerate(order):
        back[d] = i
    return ng.permute(r, *back)


__all__ = ["nuclear_norm", "LinAlgError"]
