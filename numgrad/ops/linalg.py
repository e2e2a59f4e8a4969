"""Matrix products: mm, mv, dot, bmm and matmul's broadcasting rules (BLAS via NumPy)."""

import numpy as np

from numgrad import _arrays
from numgrad._shape import broadcast_shapes
from numgrad.autograd.graph import Node
from numgrad.ops import elementwise as ew
from numgrad.ops import shape as sh
from numgrad.ops._util import LIN, Tensor, _wrap, attach, dtype_of, edge, meta_for, state

_LEGACY = {"float32": "float", "float64": "double", "int64": "long", "int32": "int"}


def _check_dtypes(a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{_LEGACY.get(a._data.dtype.name, a._data.dtype.name)} != "
            f"{_LEGACY.get(b._data.dtype.name, b._data.dtype.name)}")


def _product(a, b, shape):
    out = _arrays.empty(a._data, shape, a._data.dtype)
    LIN.matmul(a._data, b._data, out)
    return out


def column_major(b):
    """Whether matrix ``b`` is laid out column by column (the t() of a Linear weight)."""
    shape = b._data.shape
    return shape[0] > 1 and shape[1] > 1 and b._data.flags.f_contiguous


def mat2_grad(a, g, b_column_major):
    """A^T G laid out like B: for a column-major B it is computed as (G^T A)^T, so a Linear
    weight's own gradient comes out contiguous (PyTorch does the same)."""
    if b_column_major:
        return sh.t(mm(sh.t(g), a))
    return mm(sh.t(a), g)


class MmBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "mat2")

    # d/dA (A B) = G B^T, d/dB (A B) = A^T G
    def _backward(self, g):
        a, b, b_column_major = self._saved
        na, nb = self.next_functions
        return (mm(g, sh.t(b)) if na[0] is not None else None,
                mat2_grad(a, g, b_column_major) if nb[0] is not None else None)


class MvBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "vec")

    # d/dA (A v) = g v^T, d/dv (A v) = A^T g
    def _backward(self, g):
        a, v = self._saved
        na, nv = self.next_functions
        return (mm(sh.unsqueeze(g, 1), sh.unsqueeze(v, 0)) if na[0] is not None else None,
                mv(sh.t(a), g) if nv[0] is not None else None)


class DotBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "tensor")

    # d/da (a . b) = g b, d/db = g a
    def _backward(self, g):
        a, b = self._saved
        na, nb = self.next_functions
        return (ew.mul(b, g) if na[0] is not None else None,
                ew.mul(a, g) if nb[0] is not None else None)


class BmmBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("self", "mat2")

    # d/dA (A B) = G B^T, d/dB = A^T G over the batch (the engine sums broadcast batch dims)
    def _backward(self, g):
        a, b = self._saved
        na, nb = self.next_functions
        return (matmul(g, sh.transpose(b, -1, -2)) if na[0] is not None else None,
                matmul(sh.transpose(a, -1, -2), g) if nb[0] is not None else None)


def _saved_pair(a, b):
    return (a if b._requires_grad else None, b if a._requires_grad else None)


def mm(input, mat2):
    """2-D matrix product (``MmBackward0``)."""
    a, b = input, mat2
    if a._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    (n, m), (m2, p) = a._data.shape, b._data.shape
    if m != m2:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({n}x{m} and {m2}x{p})")
    _check_dtypes(a, b)
    out = _wrap(_product(a, b, (n, p)))
    if state.enabled and (a._requires_grad or b._requires_grad):
        attach(out, MmBackward0((edge(a), edge(b)),
                                _saved_pair(a, b) + (b._requires_grad and column_major(b),)))
    return out


def mv(input, vec):
    """Matrix-vector product (``MvBackward0``)."""
    a, v = input, vec
    if a._data.ndim != 2 or v._data.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got 1, {a._data.ndim}, {v._data.ndim}")
    n, m = a._data.shape
    if v._data.shape[0] != m:
        raise RuntimeError(
            f"size mismatch, got input ({n}), mat ({n}x{m}), vec ({v._data.shape[0]})")
    _check_dtypes(a, v)
    out = _wrap(_product(a, v, (n,)))
    if state.enabled and (a._requires_grad or v._requires_grad):
        attach(out, MvBackward0((edge(a), edge(v)), _saved_pair(a, v)))
    return out


def dot(input, tensor):
    """Inner product of two 1-D tensors (``DotBackward0``)."""
    a, b = input, tensor
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a._data.ndim}D and {b._data.ndim}D tensors")
    na, nb = a._data.shape[0], b._data.shape[0]
    if na != nb:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{na}] and src [{nb}] to have the same "
            f"number of elements, but got {na} and {nb} elements respectively")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{dtype_of(a)._legacy} and {dtype_of(b)._legacy}")
    out = _wrap(_product(a, b, ()))
    if state.enabled and (a._requires_grad or b._requires_grad):
        attach(out, DotBackward0((edge(a), edge(b)), _saved_pair(a, b)))
    return out


inner = dot


def bmm(input, mat2):
    if input._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    sa, sb = input._data.shape, mat2._data.shape
    if sa[0] != sb[0] or sa[2] != sb[1]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] "
            f"but got: [{sb[0]}, {sb[1]}].")
    return _batched(input, mat2)


def _batched(a, b):
    sa, sb = a._data.shape, b._data.shape
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    if sa[-1] != sb[-2]:
        nb = int(np.prod(batch, dtype=np.int64))
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: [{nb}, {sa[-1]}] "
            f"but got: [{nb}, {sb[-2]}].")
    _check_dtypes(a, b)
    shape = batch + (sa[-2], sb[-1])
    out = _wrap(_product(a, b, shape))
    if state.enabled and (a._requires_grad or b._requires_grad):
        node = BmmBackward0((edge(a), edge(b)), (a, b))
        dt = dtype_of(a)
        ga_shape = shape[:-2] + sa[-2:]
        gb_shape = shape[:-2] + sb[-2:]
        metas = (meta_for(a, ga_shape, dt), meta_for(b, gb_shape, dt))
        if metas != (None, None):
            node._meta = metas
        attach(out, node)
    return out


def matmul(input, other):
    """PyTorch's matmul: dot, mv, mm, or a batched product with broadcast batch dims."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("matmul(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    da, db = input._data.ndim, other._data.ndim
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 1 and db == 2:
        return sh.squeeze(mm(sh.unsqueeze(input, 0), other), 0)
    if da == 2 and db == 2:
        return mm(input, other)
    if da == 1:
        return sh.squeeze(_batched(sh.unsqueeze(input, 0), other), -2)
    if db == 1:
        return sh.squeeze(_batched(input, sh.unsqueeze(other, -1)), -1)
    return _batched(input, other)


def outer(input, vec2):
    return ew.mul(sh.unsqueeze(input, 1), sh.unsqueeze(vec2, 0))


ger = outer
