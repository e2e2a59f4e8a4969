"""A copy between two arrays of one shape and dtype whose last dims are contiguous.

The elementwise templates (``elementwise.u_nd``) walk rows as 1-D views of any stride, which
LLVM cannot vectorize: copying a head split (16, 64, 4, 32) or a q/k/v slice of a fused
projection (rows of 128 floats 384 apart) ran at about 1.6 ns per float, 200 us per 512 KiB.
Here each row is read and written through a pointer to contiguous items, so the inner loop is
a vectorized memory copy (a row's items are contiguous in both arrays, which the launcher
checks). Exact for every dtype: it moves items, never converts them.
"""

from numba import carray, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from numgrad.kernels._jit import serial_and_parallel


@intrinsic
def _at(typingctx, arr, offset):
    """A pointer to ``arr``'s items starting ``offset`` bytes after its first item."""
    if not isinstance(arr, types.Array) or not isinstance(offset, types.Integer):
        return None
    ptr = types.CPointer(arr.dtype)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        raw = builder.bitcast(ary.data, cgutils.voidptr_t)
        moved = builder.gep(raw, [args[1]])
        return builder.bitcast(moved, context.get_value_type(ptr))

    return ptr(arr, offset), codegen


def copy_rows(x, out):
    n0, n1, n2, n3 = out.shape
    xs0, xs1, xs2 = x.strides[0], x.strides[1], x.strides[2]
    os0, os1, os2 = out.strides[0], out.strides[1], out.strides[2]
    for r in prange(n0 * n1):  # one division per n2 rows, not per row
        i0, i1 = r // n1, r % n1
        xo, oo = i0 * xs0 + i1 * xs1, i0 * os0 + i1 * os1
        for i2 in range(n2):
            src = carray(_at(x, xo + i2 * xs2), n3)
            dst = carray(_at(out, oo + i2 * os2), n3)
            for i in range(n3):
                dst[i] = src[i]


copy_rows, copy_rows_par = serial_and_parallel(copy_rows)


def fits(x, out):
    """Whether ``copy_rows`` can copy 4-D ``x`` into ``out``: one shape and dtype, and each
    row (the last dim) contiguous in both."""
    if x.shape != out.shape or x.dtype != out.dtype or x.ndim != 4:
        return False
    if x.itemsize == 2 and x.dtype.kind in "fV":
        return False  # float16/bfloat16: the kernels take their bits as uint16
    size = x.itemsize
    return (x.shape[3] < 2 or x.strides[3] == size) and (out.shape[3] < 2
                                                        or out.strides[3] == size)
