"""Multiply-add ops with PyTorch's single graph node each: ``addmm`` (``AddmmBackward0``),
``baddbmm`` (``BaddbmmBackward0``), ``addcmul``, ``addcdiv`` and ``lerp``. The forward is
composed of numgrad ops run without recording; the derivatives are numgrad ops too, so they
are differentiable again. Inputs broadcast; the engine sums each gradient back to its input's
shape (the node's ``_meta``)."""

import numpy as np

from numgrad import _arrays
from numgrad._shape import broadcast_shapes
from numgrad.autograd.grad_mode import no_grad
from numgrad.autograd.graph import Node
from numgrad.ops import elementwise as ew
from numgrad.ops import linalg as la
from numgrad.ops import shape as sh
from numgrad.ops import unary as un
from numgrad.ops._util import (
    EW,
    LIN,
    Tensor,
    _wrap,
    attach,
    dtype_of,
    edge,
    is_scalar,
    meta_for,
    state,
)
from numgrad.ops.registry import declare, op

_VARIANTS = ("function", "method", "inplace")


def _check_tensors(fn, names, values):
    for pos, (name, v) in enumerate(zip(names, values), 1):
        if not isinstance(v, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")


def _broadcast(*ts):
    """PyTorch's error when the tensors do not broadcast together."""
    shape = ()
    for t in ts:
        shape = broadcast_shapes(shape, t._data.shape)


def _scaled(t, s):
    return t if s == 1 else ew.mul(t, s)


def _record(out, node_cls, inputs, saved):
    """Attach ``node_cls`` to ``out`` when an input requires grad, with the ``_meta`` that
    sums (and casts) each input's gradient back to it."""
    if state.enabled and any(t._requires_grad for t in inputs):
        node = node_cls(tuple(edge(t) for t in inputs), saved)
        shape, dt = out._data.shape, dtype_of(out)
        metas = tuple(meta_for(t, shape, dt) for t in inputs)
        if any(m is not None for m in metas):
            node._meta = metas
        attach(out, node)
    return out


def _result(fn):
    with no_grad():
        r = fn()
    return _wrap(r._data)


# ----------------------------------------------------------------------------------------
# addmm, baddbmm
# ----------------------------------------------------------------------------------------


class BaddbmmBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("alpha", "batch1", "batch2", "beta")

    # d/dC (beta C + alpha A B) = beta g, d/dA = alpha g B^T, d/dB = alpha A^T g (per batch)
    def _backward(self, g):
        alpha, a, b, beta = self._saved
        nc, na, nb = self.next_functions
        return (_scaled(g, beta) if nc[0] is not None else None,
                _scaled(la.bmm(g, sh.transpose(b, 1, 2)), alpha) if na[0] is not None else None,
                _scaled(la.bmm(sh.transpose(a, 1, 2), g), alpha) if nb[0] is not None else None)


def _plus_product(input, product, beta, alpha):
    """beta * input + alpha * product; ``input`` is ignored when beta is 0 (NaN included)."""
    sh.expand(input, product._data.shape)  # PyTorch's error when input does not broadcast
    p = _scaled(product, alpha)
    if beta == 0:
        return p
    return ew.add(_scaled(input, beta), p)


def _same_dtype(input, mat2):
    if input._data.dtype != mat2._data.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{dtype_of(input)._legacy} and {dtype_of(mat2)._legacy}")


def _mat2_column_major(strides, mat1, grad):
    """Whether mat2, (k, m) with these element strides, was laid out column by column (the
    t() of a Linear weight): its gradient is then computed in that layout."""
    k, m = mat1._data.shape[1], grad._data.shape[1]
    return k > 1 and m > 1 and strides == (1, k)


# d/dinput (beta input + alpha mat1 mat2) = beta g, d/dmat1 = alpha g mat2^T,
# d/dmat2 = alpha mat1^T g
@op(node="AddmmBackward0", inputs=("self", "other", "third"), variants=_VARIANTS,
    grads={"self": lambda grad, beta: _scaled(grad, beta),
           "other": lambda grad, mat2, alpha: _scaled(la.mm(grad, sh.t(mat2)), alpha),
           "third": lambda grad, mat1, mat2_sym_strides, alpha: _scaled(la.mat2_grad(
               mat1, grad, _mat2_column_major(mat2_sym_strides, mat1, grad)), alpha)},
    save=("alpha", "beta", "mat1", "mat2", "mat2_sym_strides"))
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2) (``nn.functional.linear``'s op for 2-D input)."""
    try:
        xd, ad, bd = input._data, mat1._data, mat2._data
    except AttributeError:
        _check_tensors("addmm", ("input", "mat1", "mat2"), (input, mat1, mat2))
    if ad.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {ad.ndim}-D tensor")
    if bd.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {bd.ndim}-D tensor")
    if xd.dtype != bd.dtype or ad.dtype != bd.dtype:
        name, t = ("self", input) if xd.dtype != bd.dtype else ("mat1", mat1)
        raise RuntimeError(f"{name} and mat2 must have the same dtype, but got "
                           f"{dtype_of(t)._legacy} and {dtype_of(mat2)._legacy}")
    (n, k), (k2, m) = ad.shape, bd.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    if xd.dtype.kind == "f":
        if xd.shape != (m,) and xd.shape != (n, m):
            _expand_check(xd.shape, (n, m), input)
        out = _arrays.empty(ad, (n, m), ad.dtype)
        if alpha == 1 and beta == 1 and ad.__class__ is np.ndarray and \
                LIN.linear_fits(ad, bd, xd, out):
            LIN.linear(ad, bd, xd, out)  # a Linear layer's product and bias in one call
            return out, _addmm_values(input, mat1, mat2, alpha, beta, n, m)
        LIN.matmul(ad, bd, out)
        if alpha != 1:
            EW.unary(EW.mul_s, out, out.dtype, alpha, out=out)
        if beta != 0:  # beta 0 ignores input (NaN and inf included), as PyTorch
            bias = xd if beta == 1 else EW.unary(EW.mul_s, xd, xd.dtype, beta)
            EW.binary(EW.add, out, bias, out.dtype, (n, m), out=out)
    else:
        out = _result(lambda: _plus_product(input, la.mm(mat1, mat2), beta, alpha))._data
    return out, _addmm_values(input, mat1, mat2, alpha, beta, n, m)


def _addmm_values(input, mat1, mat2, alpha, beta, n, m):
    values = {"alpha": alpha, "beta": beta}
    if state.enabled and (mat1._requires_grad or mat2._requires_grad or input._requires_grad):
        # what each gradient reads, saved only when that gradient is needed (as PyTorch)
        bd = mat2._data
        values["mat1"] = mat1 if mat2._requires_grad else None
        values["mat2"] = mat2 if mat1._requires_grad else None
        values["mat2_sym_strides"] = ((bd.strides[0] // bd.itemsize, bd.strides[1] // bd.itemsize)
                                      if mat2._requires_grad else None)
        mi = meta_for(input, (n, m), dtype_of(mat1))
        if mi is not None:
            values["_meta"] = (mi, None, None)
    return values


def _expand_check(src, target, t):
    """PyTorch's errors for ``t.expand(target)`` (``src`` is t's shape)."""
    if len(src) > len(target):
        raise RuntimeError(
            f"expand(torch.{dtype_of(t)._legacy}Tensor{{{list(src)}}}, size={list(target)}): the "
            f"number of sizes provided ({len(target)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(src)})")
    off = len(target) - len(src)
    for i in range(len(target) - 1, off - 1, -1):
        size = src[i - off]
        if size != target[i] and size != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({target[i]}) must match the existing size "
                f"({size}) at non-singleton dimension {i}.  Target sizes: {list(target)}.  "
                f"Tensor sizes: {list(src)}")


@declare(nodes=("BaddbmmBackward0",), variants=_VARIANTS)
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2), matrix by matrix over the batch."""
    _check_tensors("baddbmm", ("input", "batch1", "batch2"), (input, batch1, batch2))
    s1, s2 = batch1._data.shape, batch2._data.shape
    if len(s1) >= 2 and len(s2) >= 3:  # PyTorch expands input before checking the batches
        sh.expand(input, (s1[0], s1[1], s2[2]))
    _same_dtype(input, batch2)
    out = _result(lambda: _plus_product(input, la.bmm(batch1, batch2), beta, alpha))
    return _record(out, BaddbmmBackward0, (input, batch1, batch2),
                   (alpha, batch1, batch2, beta))


# ----------------------------------------------------------------------------------------
# addcmul, addcdiv
# ----------------------------------------------------------------------------------------


class AddcmulBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("tensor1", "tensor2", "value")

    # d/dx (x + v t1 t2) = g, d/dt1 = g v t2, d/dt2 = g v t1
    def _backward(self, g):
        t1, t2, v = self._saved
        _, n1, n2 = self.next_functions
        return (g, _scaled(ew.mul(g, t2), v) if n1[0] is not None else None,
                _scaled(ew.mul(g, t1), v) if n2[0] is not None else None)


class AddcdivBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("tensor1", "tensor2", "value")

    # d/dx (x + v t1 / t2) = g, d/dt1 = g v / t2, d/dt2 = -g v t1 / t2^2
    def _backward(self, g):
        t1, t2, v = self._saved
        _, n1, n2 = self.next_functions
        return (g, _scaled(ew.div(g, t2), v) if n1[0] is not None else None,
                ew.mul(ew.div(ew.mul(g, t1), ew.mul(t2, t2)), -v) if n2[0] is not None
                else None)


def _pointwise_check(fn, input, tensor1, tensor2, value):
    _check_tensors(fn, ("input", "tensor1", "tensor2"), (input, tensor1, tensor2))
    if not is_scalar(value):
        raise TypeError(f"{fn}(): argument 'value' must be Number, not {type(value).__name__}")
    _broadcast(input, tensor1, tensor2)


@declare(nodes=("AddcmulBackward0",), variants=_VARIANTS)
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2."""
    _pointwise_check("addcmul", input, tensor1, tensor2, value)
    out = _result(lambda: ew.add(input, ew.mul(_scaled(tensor1, value), tensor2)))
    return _record(out, AddcmulBackward0, (input, tensor1, tensor2), (tensor1, tensor2, value))


@declare(nodes=("AddcdivBackward0",), variants=_VARIANTS)
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (true division; integer inputs are refused)."""
    _pointwise_check("addcdiv", input, tensor1, tensor2, value)
    if dtype_of(tensor1)._kind != 2 and dtype_of(tensor2)._kind != 2:
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    out = _result(lambda: ew.add(input, ew.div(_scaled(tensor1, value), tensor2)))
    return _record(out, AddcdivBackward0, (input, tensor1, tensor2), (tensor1, tensor2, value))


# ----------------------------------------------------------------------------------------
# lerp
# ----------------------------------------------------------------------------------------


class LerpBackward0(Node):
    __slots__ = ()
    _names_of_saved = ("weight",)
    _meta_only = True

    # d/dx lerp(x, y, w) = g (1 - w), d/dy = g w
    def _backward(self, g):
        w = self._saved[0]
        nx, ny = self.next_functions
        return (ew.mul(g, 1 - w) if nx[0] is not None else None,
                ew.mul(g, w) if ny[0] is not None else None)


class LerpBackward1(Node):
    __slots__ = ()
    _names_of_saved = ("end", "self", "weight")

    # d/dx lerp(x, y, w) = g (1 - w), d/dy = g w, d/dw = g (y - x)
    def _backward(self, g):
        end, start, w = self._saved
        nx, ny, nw = self.next_functions
        return (ew.mul(g, ew.rsub(w, 1)) if nx[0] is not None else None,
                ew.mul(g, w) if ny[0] is not None else None,
                ew.mul(g, ew.sub(end, start)) if nw[0] is not None else None)


def _lerp_value(start, end, weight):
    """PyTorch's formula: from ``start`` when |w| < 0.5, else back from ``end`` (exact at
    both ends)."""
    diff = ew.sub(end, start)
    if is_scalar(weight):
        if abs(weight) < 0.5:
            return ew.add(start, ew.mul(diff, weight))
        return ew.sub(end, ew.mul(diff, 1 - weight))
    near = ew.lt(un.abs(weight), 0.5)
    return ew.where(near, ew.add(start, ew.mul(weight, diff)),
                    ew.sub(end, ew.mul(diff, ew.rsub(weight, 1))))


@declare(nodes=("LerpBackward0", "LerpBackward1"), variants=_VARIANTS)
def lerp(input, end, weight):
    """input + weight * (end - input)."""
    _check_tensors("lerp", ("input", "end"), (input, end))
    if dtype_of(input)._kind != 2:
        raise NotImplementedError(f'"lerp_kernel_scalar" not implemented for '
                                  f"'{dtype_of(input)._legacy}'")
    if end._data.dtype != input._data.dtype:
        raise RuntimeError(f"expected dtype {dtype_of(input)._legacy.lower()} for `end` but got "
                           f"dtype {dtype_of(end)._legacy.lower()}")
    if isinstance(weight, Tensor):
        if weight._data.ndim and weight._data.dtype != input._data.dtype:
            raise RuntimeError(f"expected dtype {dtype_of(input)._legacy.lower()} for `weight` "
                               f"but got dtype {dtype_of(weight)._legacy.lower()}")
        w = weight if weight._data.dtype == input._data.dtype else sh.to_dtype(
            weight, dtype_of(input))
        _broadcast(input, end, w)
        out = _result(lambda: _lerp_value(input, end, w))
        return _record(out, LerpBackward1, (input, end, w), (end, input, w))
    if not is_scalar(weight):
        raise TypeError("lerp(): argument 'weight' (position 3) must be Number, not "
                        f"{type(weight).__name__}")
    _broadcast(input, end)
    out = _result(lambda: _lerp_value(input, end, weight))
    return _record(out, LerpBackward0, (input, end), (weight,))
