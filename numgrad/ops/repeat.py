"""Repetition: ``Tensor.repeat`` (``RepeatBackward0``), ``tile`` and ``repeat_interleave``,
built from broadcast views copied by the copy kernel; the gradient of a repeated tensor is the
sum of its copies."""

import operator

from numgrad import _dtype
from numgrad._shape import wrap_dim
from numgrad.autograd.grad_mode import no_grad
from numgrad.ops import indexing as ix
from numgrad.ops import lines
from numgrad.ops import reduction as red
from numgrad.ops import shape as sh
from numgrad.ops._util import Tensor, dtype_of
from numgrad.ops.registry import declare, op


def _check_tensor(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _int_list(sizes, fn, arg):
    """``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` as a tuple of ints."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    try:
        return tuple(operator.index(s) for s in sizes)
    except TypeError:
        bad = next(s for s in sizes if not hasattr(s, "__index__"))
        raise TypeError(f"{fn}(): argument '{arg}' must be tuple of ints, but found element of "
                        f"type {type(bad).__name__}") from None


def _interleaved(shape, repeats):
    """(r0, s0, r1, s1, ...): the shape a repeated tensor's gradient is summed over."""
    out = []
    for r, s in zip(repeats, shape):
        out += [r, s]
    return tuple(out)


def _repeat_backward(grad, repeats, self_sym_sizes):
    shape = (1,) * (len(repeats) - len(self_sym_sizes)) + tuple(self_sym_sizes)
    g = sh.reshape(grad, _interleaved(shape, repeats))
    g = red.sum(g, tuple(range(0, 2 * len(repeats), 2)))
    return sh.reshape(g, tuple(self_sym_sizes))


# d/dx repeat(x, r) = the sum of the gradient over the r copies of each element
@op(node="RepeatBackward0", grads={"self": _repeat_backward}, variants=("method",))
def repeat(input, *repeats):
    """``input`` tiled ``repeats[i]`` times along dim i (leading new dims for extra repeats)."""
    _check_tensor(input, "repeat")
    if not repeats:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    reps = _int_list(repeats, "repeat", "repeats")
    shape = input._data.shape
    if len(reps) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    padded = (1,) * (len(reps) - len(shape)) + shape
    target = [r * s for r, s in zip(reps, padded)]
    if any(n < 0 for n in target):
        bad = next(n for n in target if n < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {target}")
    with no_grad():
        x = sh.reshape(input.detach(), _interleaved(padded, (1,) * len(reps)))
        r = sh.reshape(sh.clone(sh.expand(x, _interleaved(padded, reps))), target)
    return r._data, {"repeats": reps, "self_sym_sizes": shape}


def _tile_method(self, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    return tile(self, tuple(dims))


@declare(nodes=("RepeatBackward0",), method=_tile_method)
def tile(input, dims):
    """``repeat`` with ``dims`` padded by leading 1s to the input's rank."""
    _check_tensor(input, "tile")
    if not isinstance(dims, (tuple, list)):
        dims = (dims,)
    reps = _int_list(tuple(dims), "tile", "dims")
    nd = input._data.ndim
    return repeat(input, (1,) * (nd - len(reps)) + reps)


def _repeat_interleave_method(self, repeats=None, dim=None, *, output_size=None):
    return repeat_interleave(self, repeats, dim, output_size=output_size)


def _index_of_repeats(repeats):
    """``repeat_interleave(repeats)``: i repeated ``repeats[i]`` times (int64), by a
    scatter-add of the segment ends and a cumulative sum."""
    from numgrad._factories import ones, zeros
    if repeats._data.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if dtype_of(repeats)._kind != 1:
        raise NotImplementedError(
            f'"repeat_interleave_cpu" not implemented for \'{dtype_of(repeats)._legacy}\'')
    with no_grad():
        reps = sh.to_dtype(repeats, _dtype.int64)
        if reps._data.size and red.min(reps).item() < 0:
            raise RuntimeError("repeats can not be negative")
        ends = lines.cumsum(reps, 0)
        total = int(ends[-1].item()) if reps._data.size else 0
        marks = zeros(total + 1, dtype=_dtype.int64, device=repeats.device)
        marks = ix.scatter_add(marks, 0, ends, ones(ends.shape, dtype=_dtype.int64,
                                                    device=repeats.device))
        return sh.slice_dim(lines.cumsum(marks, 0), 0, 0, total, 1).contiguous()


@declare(nodes=("ViewBackward0", "IndexSelectBackward0"), method=_repeat_interleave_method)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along ``dim``) repeated ``repeats`` times in place;
    ``repeat_interleave(repeats)`` alone gives the indices ``i`` repeated ``repeats[i]``
    times."""
    _check_tensor(input, "repeat_interleave")
    if repeats is None:
        idx = _index_of_repeats(input)
        if output_size is not None and output_size != idx._data.shape[0]:
            raise RuntimeError("allocated size does not match required size")
        return idx.to(dtype_of(input))
    if isinstance(repeats, Tensor):
        if repeats._data.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats._data.size != 1:
            return _interleave_by_tensor(input, repeats, dim, output_size)
        if dtype_of(repeats)._kind != 1:
            raise NotImplementedError(
                f'"repeat_interleave_cpu" not implemented for \'{dtype_of(repeats)._legacy}\'')
        return _interleave_by_tensor(input, repeats, dim, output_size)
    if isinstance(repeats, bool) or not hasattr(repeats, "__index__"):
        raise TypeError("repeat_interleave() received an invalid combination of arguments - got "
                        f"({type(repeats).__name__}), but expected one of: (Tensor repeats, int "
                        "dim, *, int output_size) or (int repeats, int dim, *, int output_size)")
    n = operator.index(repeats)
    if n < 0:
        raise RuntimeError("Repeats must be non-negative")
    x = sh.flatten(input) if dim is None else input
    d = 0 if dim is None else wrap_dim(dim, x._data.ndim)
    if x._data.ndim == 0:
        x = sh.reshape(x, (1,))
    shape = x._data.shape
    if output_size is not None and output_size != shape[d] * n:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {shape[d] * n} but "
                           f"got {output_size}")
    y = sh.expand(sh.unsqueeze(x, d + 1), shape[:d + 1] + (n,) + shape[d + 1:])
    return sh.view(sh.clone(y), shape[:d] + (shape[d] * n,) + shape[d + 1:])


def _interleave_by_tensor(input, repeats, dim, output_size):
    x = sh.flatten(input) if dim is None else input
    if x._data.ndim == 0:
        x = sh.reshape(x, (1,))
    d = 0 if dim is None else wrap_dim(dim, x._data.ndim)
    n = x._data.shape[d]
    if repeats._data.size == 1:
        repeats = sh.expand(sh.reshape(repeats, (1,)), (n,))
    elif repeats._data.shape[0] != n:
        raise RuntimeError("repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {repeats._data.shape[0]} and input.size({d}) = "
                           f"{n}")
    idx = _index_of_repeats(repeats)
    if output_size is not None and output_size != idx._data.shape[0]:
        raise RuntimeError("allocated size does not match required size")
    return ix.index_select(x, d, idx)
