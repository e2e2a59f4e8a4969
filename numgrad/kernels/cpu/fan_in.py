"""The backward engine's fan-in sum of a region's gradient, without the dense embedding.

The gradient of ``x[region]`` (``SelectBackward0``, ``SliceBackward0``: a select, slice,
narrow, split or chunk piece, unbind) is zeros of ``x``'s shape with ``g`` in the region,
which the engine then adds into the sum of the gradients arriving at ``x``. ``into_region``
does both in one pass over the sum: every item gets the item of the embedded gradient
added, ``g``'s in the region and a zero elsewhere. Adding the zero keeps the result
bit-identical to the two-step form (``-0.0 + 0.0`` is ``+0.0``), so it is not skipped. With
no sum waiting yet, the same loop writes the embedding into new memory (no zero fill first).

The sum is seen as a 3-D block ``(A, B, C)`` and the region as the box
``[a0:a1, b0:b1, c0:c1]`` of it (``numgrad.autograd.regions`` folds a region of any rank into
one), so one compiled loop per dtype serves every region shape.
"""

from numgrad.kernels._jit import jit


@jit
def into_region(buf, g, a0, a1, b0, b1, c0, c1, add):
    """``buf`` (3-D) += zeros with ``g`` (3-D, the box's shape) at ``[a0:a1, b0:b1, c0:c1]``;
    with ``add`` False, ``buf`` (uninitialised) becomes that embedding itself."""
    zero = buf.dtype.type(0.0)
    na, nb, nc = buf.shape
    for i in range(na):
        rows = a0 <= i < a1
        for j in range(nb):
            row = buf[i, j]
            if rows and b0 <= j < b1:
                src = g[i - a0, j - b0]
                if add:
                    for k in range(c0):
                        row[k] = row[k] + zero
                    for k in range(c1 - c0):
                        row[c0 + k] = row[c0 + k] + src[k]
                    for k in range(c1, nc):
                        row[k] = row[k] + zero
                else:
                    row[:c0] = zero
                    row[c0:c1] = src
                    row[c1:] = zero
            elif add:
                for k in range(nc):
                    row[k] = row[k] + zero
            else:
                row[:] = zero


@jit
def into_box(buf, g, a0, a1, b0, b1, c0, c1, add, has_g):
    """``buf[a0:a1, b0:b1, c0:c1]`` (+)= ``g`` (the box's shape), or zeros without ``has_g``
    (``g`` is then not read); ``buf`` outside the box is not touched. A multi-output node's
    pieces (split, unbind) tile ``buf``: one call per piece writes (or adds) each item once."""
    zero = buf.dtype.type(0.0)
    for i in range(a1 - a0):
        for j in range(b1 - b0):
            row = buf[a0 + i, b0 + j]
            if has_g:
                src = g[i, j]
                if add:
                    for k in range(c1 - c0):
                        row[c0 + k] = row[c0 + k] + src[k]
                else:
                    row[c0:c1] = src
            elif add:
                for k in range(c0, c1):
                    row[k] = row[k] + zero
            else:
                row[c0:c1] = zero
