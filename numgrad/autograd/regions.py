"""Region gradients added straight into the engine's fan-in sums.

``x[key]`` (a select, slice, narrow, split or chunk piece, unbind: ``SelectBackward0`` and
``SliceBackward0`` save ``(x's shape, key)``) has the gradient ``g`` placed into zeros of
``x``'s shape. When a sum the engine made is already waiting at ``x``, ``add_into`` adds ``g``
into the region of that sum in one kernel pass (``kernels.cpu.fan_in.add_region``) instead of
the zeros, the copy into them and the add; bit for bit the same numbers.
"""

import numpy as np

from numgrad import _arrays
from numgrad.kernels import LazyKernels
from numgrad.tensor import _wrap

FAN = LazyKernels("fan_in")
_ND = np.ndarray


def box(shape, key):
    """``key`` (ints and step-1 slices, one per leading dim of ``shape``) as a box of a 3-D
    view of the C-ordered array: ``((A, B, C), (a0, a1, b0, b1, c0, c1))``, or None when the
    region does not fold into three dims (or a slice has a step other than 1).

    A dim taken whole folds into the dim before it (rows ``[r0:r1]`` of ``R x n`` are items
    ``[r0 * n:r1 * n]``), and a leading dim of size 1 into the dim after it.
    """
    dims = []
    nk = len(key)
    for d, n in enumerate(shape):
        if d < nk:
            k = key[d]
            if k.__class__ is int:
                lo = k + n if k < 0 else k
                hi = lo + 1
            else:
                lo, hi, step = k.indices(n)
                if step != 1:
                    return None
                hi = max(hi, lo)
        else:
            lo, hi = 0, n
        if dims:
            pn, plo, phi = dims[-1]
            if lo == 0 and hi == n:  # whole: folds into the dim before
                dims[-1] = (pn * n, plo * n, phi * n)
                continue
            if pn == 1 and plo == 0 and phi == 1:  # a size-1 dim taken whole
                dims[-1] = (n, lo, hi)
                continue
        dims.append((n, lo, hi))
    if len(dims) > 3:
        return None
    while len(dims) < 3:
        dims.insert(0, (1, 0, 1))
    (na, a0, a1), (nb, b0, b1), (nc, c0, c1) = dims
    return (na, nb, nc), (a0, a1, b0, b1, c0, c1)


def _run(out, gd, shape, key, add):
    """``into_region`` on ``out``'s array (``x``'s shape, C-ordered) and ``gd``; False where
    the region does not fold into a box (or ``gd`` is not the region's contiguous data)."""
    n = gd.size
    if len(key) == 1 and key[0].__class__ is int and n * shape[0] == out.size:
        k0 = key[0]  # x[i]: items [i * n, (i + 1) * n) of the sum
        if k0 < 0:
            k0 += shape[0]
        FAN.into_region(out.reshape(1, 1, -1), gd.reshape(1, 1, n), 0, 1, 0, 1, k0 * n,
                        k0 * n + n, add)
        return True
    b = box(shape, key)
    if b is None:
        return False
    full, (a0, a1, b0, b1, c0, c1) = b
    if n != (a1 - a0) * (b1 - b0) * (c1 - c0):
        return False
    FAN.into_region(out.reshape(full), gd.reshape(a1 - a0, b1 - b0, c1 - c0),
                    a0, a1, b0, b1, c0, c1, add)
    return True


def _fits(gd, dtype):
    """Whether the kernel takes gradient data ``gd`` for a sum of ``dtype``."""
    return (gd.__class__ is _ND and gd.dtype is dtype and dtype.kind == "f"
            and dtype.itemsize > 2 and gd.flags.c_contiguous)


def add_into(old, g, shape, key):
    """Add ``g``, the gradient of ``x[key]`` for an ``x`` of ``shape``, into the region of
    ``old`` (a float sum of ``x``'s shape that only the engine holds). False, having done
    nothing, where the kernel does not apply (other devices or dtypes, strided data)."""
    a = old._data
    if a.__class__ is not _ND or a.shape != shape or not a.flags.c_contiguous:
        return False
    return _fits(g._data, a.dtype) and _run(a, g._data, shape, key, True)


def embedded(g, shape, key):
    """``g`` placed into zeros of ``shape`` at ``key`` (``_EmbedBackward``'s gradient, no
    graph), written in one pass into new memory; None where the kernel does not apply."""
    gd = g._data
    if not _fits(gd, gd.dtype):
        return None
    out = _arrays.new(shape, gd.dtype)
    return _wrap(out) if _run(out, gd, shape, key, False) else None


# (node class, x's shape, split size(s), dim) -> the pieces' boxes, or False: a graph of
# tiny splits folds each place once
_BOXES = {}


def _piece_boxes(node):
    """The boxes of a split/unbind node's pieces (``box``), or None where one does not fold
    into three dims."""
    _, shape, size, keys, d = node._saved
    place = (node.__class__, shape, size, d)
    boxes = _BOXES.get(place)
    if boxes is None:
        boxes = [box(shape, k) for k in keys]
        boxes = False if None in boxes else tuple(boxes)
        if len(_BOXES) >= 4096:
            _BOXES.clear()
        _BOXES[place] = boxes
    return boxes or None


def _pieces_run(out, grads, boxes, add):
    """Each piece's gradient (zeros where it is None) written, or added, into its box of
    ``out``'s array: the pieces tile it, so every item is written once."""
    for g, (full, (a0, a1, b0, b1, c0, c1)) in zip(grads, boxes):
        o = out.reshape(full)
        if g is None:
            FAN.into_box(o, o, a0, a1, b0, b1, c0, c1, add, False)
        else:
            gd = g._data.reshape(a1 - a0, b1 - b0, c1 - c0)
            FAN.into_box(o, gd, a0, a1, b0, b1, c0, c1, add, True)


def _pieces_fit(grads, dtype):
    return all(g is None or _fits(g._data, dtype) for g in grads)


def pieces_dense(node, grads):
    """The gradient of ``x`` for a split/unbind node from its pieces' gradients (zeros for
    the absent ones), written in one pass into new memory; None where the kernel does not
    apply (other devices or dtypes, strided data, a region that does not fold)."""
    like = next(g for g in grads if g is not None)._data
    boxes = _piece_boxes(node)
    if boxes is None or not _fits(like, like.dtype) or not _pieces_fit(grads, like.dtype):
        return None
    out = _arrays.new(node._saved[1], like.dtype)
    if out.size:
        _pieces_run(out, grads, boxes, False)
    return _wrap(out)


def pieces_into(old, node, grads):
    """Add a split/unbind node's gradient of ``x`` (its pieces' gradients in their regions)
    into ``old`` (a float sum of ``x``'s shape that only the engine holds), region by region;
    False, having done nothing, where the kernel does not apply."""
    a = old._data
    boxes = _piece_boxes(node)
    if (boxes is None or a.__class__ is not _ND or a.shape != node._saved[1]
            or not a.flags.c_contiguous or not _pieces_fit(grads, a.dtype)
            or a.dtype.kind != "f" or a.dtype.itemsize <= 2):
        return False
    if a.size:
        _pieces_run(a, grads, boxes, True)
    return True
