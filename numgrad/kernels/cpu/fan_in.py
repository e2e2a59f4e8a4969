"""The backward engine's fan-in sum of a select's gradient, without the dense embedding.

``x[i]``'s gradient is zeros of ``x``'s shape with ``g`` in row ``i`` (``SelectBackward0``),
which the engine then adds into the sum of the gradients arriving at ``x``. ``add_row``
does both in one pass over the sum: every item gets the item of the embedded gradient
added, ``g``'s in the row and a zero elsewhere. Adding the zero keeps the result
bit-identical to the two-step form (``-0.0 + 0.0`` is ``+0.0``), so it is not skipped.
"""

from numgrad.kernels._jit import jit


@jit
def add_row(buf, g, start):
    """``buf`` (flat) += zeros with ``g`` (flat) at items ``start .. start + g.size``."""
    zero = buf.dtype.type(0.0)
    stop = start + g.size
    for j in range(start):
        buf[j] = buf[j] + zero
    for i in range(g.size):
        buf[start + i] = buf[start + i] + g[i]
    for j in range(stop, buf.size):
        buf[j] = buf[j] + zero
