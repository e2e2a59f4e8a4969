"""Matrix products: mm, mv, dot, bmm and matmul's broadcasting rules (BLAS via NumPy)."""

import math

import numpy as np

from numgrad import _arrays
from numgrad._shape import broadcast_shapes
from numgrad.autograd.graph import Node
from numgrad.ops import elementwise as ew
from numgrad.ops import shape as sh
from numgrad.ops._util import LIN, Tensor, _wrap, attach, dtype_of, edge, meta_for, state
from numgrad.ops.registry import declare, write_out

_LEGACY = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int",
           "uint8": "unsigned char"}


def _check_dtypes(a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{_LEGACY.get(a._data.dtype.name, a._data.dtype.name)} != "
            f"{_LEGACY.get(b._data.dtype.name, b._data.dtype.name)}")


def _no_bool(a, name, out_size, k):
    """PyTorch has no bool kernel: it refuses bool operands once there is something to sum."""
    if a._data.dtype.kind == "b" and out_size and k:
        raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')


def _product(a, b, shape):
    ad, bd = a._data, b._data
    out = _arrays.empty(ad, shape, ad.dtype)
    if ad.__class__ is np.ndarray and bd.flags.f_contiguous and LIN.linear_fits(ad, bd, None, out):
        LIN.linear(ad, bd, None, out)  # x @ W^T (a Linear layer without bias)
    else:
        LIN.matmul(ad, bd, out)
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


def _product_out(fn, out, *args):
    """``fn(*args, out=out)``: PyTorch's out= rules, and ``out`` must have the result's dtype
    (a product is not cast into it)."""
    def exact(*a):
        r = fn(*a)
        if isinstance(out, Tensor) and r._data.dtype != out._data.dtype:
            if r._data.ndim == 0:  # a dot product
                raise RuntimeError(f"result dtype {dtype_of(out)._legacy} does not match input "
                                   f"dtype {dtype_of(r)._legacy}")
            raise RuntimeError(
                f"Expected out tensor to have dtype {_LEGACY.get(r._data.dtype.name)}, but got "
                f"{_LEGACY.get(out._data.dtype.name, out._data.dtype.name)} instead")
        return r
    exact.__name__ = fn.__name__
    return write_out(exact, out, *args)


def _saved_pair(a, b):
    return (a if b._requires_grad else None, b if a._requires_grad else None)


@declare(nodes=("MmBackward0",))
def mm(input, mat2, *, out=None):
    """2-D matrix product (``MmBackward0``)."""
    if out is not None:
        return _product_out(mm, out, input, mat2)
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
    if a._data.dtype.kind == "b":
        _no_bool(a, "addmm_impl_cpu_", n * p, m)
    out = _wrap(_product(a, b, (n, p)))
    if state.enabled and (a._requires_grad or b._requires_grad):
        attach(out, MmBackward0((edge(a), edge(b)),
                                _saved_pair(a, b) + (b._requires_grad and column_major(b),)))
    return out


@declare(nodes=("MvBackward0",))
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
    if a._data.dtype != v._data.dtype:
        vs, ms = dtype_of(v)._legacy, dtype_of(a)._legacy
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {vs}, {ms}, and {vs}")
    if a._data.dtype.kind == "b":
        _no_bool(a, "addmv_impl_cpu", n, m)
    out = _wrap(_product(a, v, (n,)))
    if state.enabled and (a._requires_grad or v._requires_grad):
        attach(out, MvBackward0((edge(a), edge(v)), _saved_pair(a, v)))
    return out


@declare(nodes=("DotBackward0",), aliases=("inner",))
def dot(input, tensor):
    """Inner product of two 1-D tensors (``DotBackward0``)."""
    a, b = input, tensor
    if a._data.ndim != 1 or b._data.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a._data.ndim}D and {b._data.ndim}D tensors")
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{dtype_of(a)._legacy} and {dtype_of(b)._legacy}")
    na, nb = a._data.shape[0], b._data.shape[0]
    if na != nb:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{na}] and src [{nb}] to have the same "
            f"number of elements, but got {na} and {nb} elements respectively")
    _no_bool(a, "dot", 1, 1)
    out = _wrap(_product(a, b, ()))
    if state.enabled and (a._requires_grad or b._requires_grad):
        attach(out, DotBackward0((edge(a), edge(b)), _saved_pair(a, b)))
    return out


@declare(nodes=("BmmBackward0",))
def bmm(input, mat2, *, out=None):
    if out is not None:
        return _product_out(bmm, out, input, mat2)
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
    shape = batch + (sa[-2], sb[-1])
    if a._data.dtype != b._data.dtype or a._data.dtype.kind == "b":
        a = _bmm_operand(a, b, shape)
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


def _bmm_operand(a, b, shape):
    """PyTorch's bmm checks dtypes only when it computes: with an empty result or an empty
    contraction it returns zeros of ``b``'s dtype (``a`` is cast, differentiably)."""
    if np.prod(shape, dtype=np.int64) and a._data.shape[-1]:
        _no_bool(a, "bmm", 1, 1)
        raise RuntimeError(f"expected scalar type {dtype_of(a)._legacy} but found "
                           f"{dtype_of(b)._legacy}")
    if a._requires_grad and state.enabled and b._data.dtype.kind != "f":
        raise RuntimeError(f"Autograd not support dtype: {dtype_of(b)._legacy}")
    return sh.to_dtype(a, b._data.dtype)


def _should_fold(a, b):
    """PyTorch's matmul folds the batch of a >= 3-D operand into an mm/mv (which refuses mixed
    dtypes) when the other is 1-D or 2-D and the fold needs no copy (its ``should_fold``)."""
    da, db = a._data.ndim, b._data.ndim
    big, small = (a, b) if da >= db else (b, a)
    if big._data.ndim < 3 or small._data.ndim > 2:
        return False
    if small._requires_grad:
        return True
    if da == 2:
        return False
    t1 = big._data
    shape, strides = list(t1.shape), list(t1.strides)
    if da < db:
        shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]
    if t1.size == 0:
        return True
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(t1.ndim - 2))


@declare(nodes=("MmBackward0", "MvBackward0", "DotBackward0", "BmmBackward0",
                "UnsafeViewBackward0"))
def matmul(input, other, *, out=None):
    """PyTorch's matmul: dot, mv, mm, or a batched product with broadcast batch dims."""
    if out is not None:
        return _product_out(matmul, out, input, other)
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
        return sh.squeeze_added_row(mm(sh.unsqueeze(input, 0), other))
    if da == 2 and db == 2:
        return mm(input, other)
    if input._data.dtype != other._data.dtype and _should_fold(input, other):
        big, small = (input, other) if da >= db else (other, input)
        if small._data.ndim == 2:
            _check_dtypes(big, small)
        vs, ms = dtype_of(small)._legacy, dtype_of(big)._legacy
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {vs}, {ms}, and {vs}")
    if da >= 3 and db <= 2 and _should_fold(input, other):
        return _folded(input, other)
    if da == 1:
        return sh.squeeze(_batched(sh.unsqueeze(input, 0), other), -2)
    if db == 1:
        return sh.squeeze(_batched(input, sh.unsqueeze(other, -1)), -1)
    return _batched(input, other)


def _folded(a, b):
    """An N-D @ 2-D (or 1-D) product folded to one mm (mv), as PyTorch folds it: the batch
    dims of ``a`` reshaped into its rows, the result an ``UnsafeViewBackward0`` of the mm."""
    sa = a._data.shape
    rows = math.prod(sa[:-1])
    a2 = sh.reshape(a, rows, sa[-1])
    r = mm(a2, b) if b._data.ndim == 2 else mv(a2, b)
    shape = sa[:-1] + b._data.shape[1:]
    out = _wrap(r._data.reshape(shape))
    if state.enabled and r._requires_grad:
        # d/dr unsafe_view(r, s) = g viewed as r's shape
        attach(out, sh.UnsafeViewBackward0((edge(r),), (r._data.shape,)))
    return out


@declare(nodes=("MulBackward0",))
def outer(input, vec2):
    """Outer product of two 1-D tensors: input[:, None] * vec2[None, :] (``MulBackward0``)."""
    for pos, (name, t) in enumerate((("input", input), ("vec2", vec2)), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"outer(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    for name, t in (("self", input), ("vec2", vec2)):
        if t._data.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t._data.ndim}-D")
    return ew.mul(sh.unsqueeze(input, 1), sh.unsqueeze(vec2, 0))


